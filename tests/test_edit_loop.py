"""The edit-build-call loop in one process (a notebook): after an edit, ``ksbind.build``
returns a module running the new code, on every target; old module objects keep
running theirs; an unchanged build returns the module already loaded."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ksbind
from tests.e2e_support import session_cache_dir

KS = "(edef f Float (Float))\n(edef v (Vec Float) (Vec Float))\n"
CPP = """\
#include "knossos.h"
namespace ks {
ks::Float f$af(ks::allocator *, ks::Float x) { return x + OFFSET; }
ks::tensor<1, ks::Float> v$aT1f(ks::allocator * a, ks::tensor<1, ks::Float> x) {
    auto out = ks::tensor<1, ks::Float>::create(a, x.size());
    for (int i = 0; i < x.size(); ++i) out[i] = x[i] * OFFSET;
    return out;
}
}
"""


def project(tmp_path: Path, target: str, extra: str = "") -> Path:
    (tmp_path / "m.ks").write_text(KS)
    set_offset(tmp_path, 1)
    cfg = tmp_path / "m.yaml"
    cfg.write_text(f"name: edit_{target}{extra and '_lib'}\ntarget: {target}\nks: [m.ks]\ncpp: [m.cpp]\n{extra}")
    return cfg


def set_offset(tmp_path: Path, offset: int) -> None:
    (tmp_path / "m.cpp").write_text(CPP.replace("OFFSET", f"{offset}.0f"))


def vec(m: object, target: str, x: list[float]) -> list[float]:
    if target == "torch":
        import torch
        return m.v(torch.tensor(x)).tolist()  # type: ignore[attr-defined]
    arg = np.array(x, dtype=np.float32) if target == "ks" else x
    return np.array(m.v(arg)).tolist()  # type: ignore[attr-defined]


def f(m: object, target: str, x: float) -> float:
    return float(m.f(x))  # type: ignore[attr-defined]


@pytest.mark.parametrize("target", ["ks", "python", "torch"])
def test_edit_rebuild_call(tmp_path: Path, target: str) -> None:
    if target == "torch":
        pytest.importorskip("torch")
    cfg = project(tmp_path, target)
    build = lambda: ksbind.build(cfg, cache_dir=session_cache_dir(), quiet=True)  # noqa: E731
    m1 = build()
    assert f(m1, target, 1.0) == 2.0 and vec(m1, target, [1.0, 2.0]) == [1.0, 2.0]
    assert build() is m1  # unchanged: the module already loaded, no reload

    set_offset(tmp_path, 2)  # edit the C++
    m2 = build()
    assert m2 is not m1
    assert f(m2, target, 1.0) == 3.0 and vec(m2, target, [1.0, 2.0]) == [2.0, 4.0]
    assert f(m1, target, 1.0) == 2.0 and vec(m1, target, [1.0, 2.0]) == [1.0, 2.0]  # old object: old code
    name = cfg.read_text().split("\n")[0].removeprefix("name: ")
    assert sys.modules[name] is m2  # `import NAME` gets the newest code

    if target != "torch":  # (torch builds are slow: the torch case edits once less)
        set_offset(tmp_path, 3)  # edit again
        m3 = build()
        assert f(m3, target, 1.0) == 4.0 and f(m2, target, 1.0) == 3.0

    set_offset(tmp_path, 1)  # back to the first code: the module loaded first
    assert build() is m1
    assert sys.modules[name] is m1  # A, B, A: `import NAME` follows what build() returned last

    (tmp_path / "m.ks").write_text(KS + "(edef g Float (Float))\n")  # edit the declarations
    (tmp_path / "m.cpp").write_text(CPP.replace("OFFSET", "1.0f") + "namespace ks { ks::Float g$af(ks::allocator *, "
                                    "ks::Float x) { return -x; } }\n")
    m4 = build()
    assert f(m4, target, 1.0) == 2.0 and float(m4.g(5.0)) == -5.0
    assert not hasattr(m1, "g")


def test_torch_library_ops_after_an_edit(tmp_path: Path) -> None:
    """Each version registers its ops under a namespace of its own, NS_v<key>, named like the module."""
    torch = pytest.importorskip("torch")
    cfg = project(tmp_path, "torch", "torch_library: edit_ops\nbindings: [{name: v}]\n")
    m1 = ksbind.build(cfg, cache_dir=session_cache_dir(), quiet=True)
    x = torch.tensor([1.0, 2.0])
    assert torch.ops.edit_ops.v(x).tolist() == [1.0, 2.0]
    set_offset(tmp_path, 2)
    m2 = ksbind.build(cfg, cache_dir=session_cache_dir(), quiet=True)
    assert m2.v(x).tolist() == [2.0, 4.0] and m1.v(x).tolist() == [1.0, 2.0]
    suffix = m2.__name__.removeprefix("edit_torch_lib")
    assert suffix.startswith("_v") and len(suffix) == 12
    assert getattr(torch.ops, "edit_ops" + suffix).v(x).tolist() == [2.0, 4.0]
    assert torch.ops.edit_ops.v(x).tolist() == [1.0, 2.0]  # the first build's ops are still its own
