"""tests/ksc_corpus.py's vjp check against finite differences, on Python functions standing in
for a built module: it passes a right vjp, and fails one a tenth of a percent off (its tolerance
was 3%)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

import ksbind
from ksbind.spec import Binding

from .ksc_corpus import check_vjp

DECL = ksbind.parse_ks("(edef f Float ((Vec Float) Float))", "f.ks")[0]


def _f(v: list[float], s: float) -> float:
    """sum(exp(s v_i) v_i), evaluated in float32, as ks code is."""
    x = np.asarray(v, dtype=np.float32)
    return float(np.sum(np.exp(np.float32(s) * x) * x, dtype=np.float32))


def _vjp(scale: float) -> Any:
    def vjp(v: list[float], s: float, dr: float) -> tuple[list[float], float]:
        x = np.asarray(v, dtype=np.float64)
        e = np.exp(s * x)
        dv = dr * e * (1 + s * x) * scale
        ds = dr * float(np.sum(e * x * x)) * scale
        return [float(a) for a in dv], ds
    return vjp


def _check(scale: float) -> bool:
    module = SimpleNamespace(f=_f, f_vjp=_vjp(scale))
    return check_vjp(module, Binding("f", DECL, "f_vjp"), seed=1, n=5).ok  # type: ignore[arg-type]


def test_a_right_vjp_passes() -> None:
    assert _check(1.0)


def test_a_vjp_a_tenth_of_a_percent_off_fails() -> None:
    assert not _check(1.001)
    assert not _check(0.999)
