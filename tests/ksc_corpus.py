"""ksc's own test programs (../shared/ksc/programs) through ksbind: ``ks: [PROGRAM.ks]`` +
``ksc:`` with default bindings, built and imported, each bound function present,
each vjp over Float/tensors of Float checked against central finite differences.

Shared by tests/test_ksc_corpus.py (CI: a fixed third, every program with
``KSBIND_CORPUS=all``, as ``scripts/test.sh --all`` sets) and
scripts/ksc_corpus_table.py (the table in docs/ksc.md).
"""
from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ksbind.errors import KsbindError
from ksbind.lang.types import KsType, ScalarType, TensorType
from ksbind.resolve import resolve_spec
from ksbind.spec import Binding, KscSpec, ModuleSpec, RuntimeSpec, TargetName
from tests.conftest import SHARED

KSC_DIR = SHARED / "ksc"
KSC = KSC_DIR / "bin" / "ksc"
PROGRAMS = KSC_DIR / "programs"

#: Every corpus program builds: the functions its sources only edef (edef_example, dot...) are
#: defined by ksc's runtime (prelude.h). The error for an edef with no C++ is checked on
#: edef.ks with its edef renamed (tests/test_ksc_corpus.py).
#: vjps a program itself gets wrong, which the check must catch (and so keep catching).
KNOWN_WRONG_VJPS = {
    ("activations", "vrelu3_inlined"): "its hand-written [sufrev [vrelu3_inlined (Vec Float)]] ignores dret "
                                       "(the program's own TODO: 'should be multiplied by dret[i]')",
}


def all_programs() -> list[str]:
    return sorted(p.stem for p in PROGRAMS.glob("*.ks")) if PROGRAMS.is_dir() else []


def ci_programs() -> list[str]:
    """A fixed third of the corpus (every third program by name), or all of it with KSBIND_CORPUS=all."""
    programs = all_programs()
    if os.environ.get("KSBIND_CORPUS") == "all":
        return programs
    return programs[::3]


def module_name(program: str, target: str) -> str:
    return f"ksc_{program.replace('-', '_')}_{target}"


def program_spec(program: str, target: TargetName, out_root: Path, programs: Path = PROGRAMS) -> ModuleSpec:
    name = module_name(program, target)
    return ModuleSpec(name=name, config_path=out_root / f"{name}.yaml", target=target,
                      ks_files=(programs / f"{program}.ks",), runtime=RuntimeSpec(bundled=False, from_ksc=True),
                      ksc=KscSpec(KSC), output=out_root / name)


@dataclass
class ProgramResult:
    program: str
    bindings: list[Binding] = field(default_factory=list)
    module: ModuleType | None = None
    error: KsbindError | None = None
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def build_program(program: str, target: TargetName, out_root: Path, cache: Path, programs: Path = PROGRAMS
                  ) -> ProgramResult:
    from ksbind.pipeline import build_spec

    result = ProgramResult(program)
    spec = program_spec(program, target, out_root, programs)
    start = time.monotonic()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result.bindings = resolve_spec(spec, cache).bindings
            result.module = build_spec(spec, cache_dir=cache, quiet=True)
        except KsbindError as e:
            result.error = e
    result.warnings = [str(w.message) for w in seen]
    result.seconds = time.monotonic() - start
    return result


def build_programs(programs: list[str], target: TargetName, out_root: Path, cache: Path,
                   parallel: int = 2) -> dict[str, ProgramResult]:
    """Build several programs at once (each build also compiles its files in parallel)."""
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        results = pool.map(lambda p: build_program(p, target, out_root, cache), programs)
        return {r.program: r for r in results}


# ------------------------------------------------------------------ vjp vs finite differences


def differentiable(t: KsType) -> bool:
    """Float, or a tensor of Float (any rank): what the corpus check perturbs."""
    if isinstance(t, ScalarType):
        return t.name == "Float"
    return isinstance(t, TensorType) and differentiable(t.element) and isinstance(t.element, ScalarType)


def checkable(b: Binding) -> bool:
    return b.vjp_decl is not None and all(differentiable(p) for p in b.decl.params) and differentiable(
        b.decl.return_type)


def _random(t: KsType, rng: np.random.Generator, n: int) -> np.ndarray:
    shape = (n,) * (t.rank if isinstance(t, TensorType) else 0)
    return rng.uniform(0.5, 1.5, size=shape)  # positive, away from 0: log/sqrt/div-safe


def _to_py(t: KsType, a: np.ndarray) -> Any:
    return float(a) if isinstance(t, ScalarType) else np.asarray(a, dtype=np.float32).tolist()


def _to_torch(t: KsType, a: np.ndarray) -> Any:
    import torch

    return float(a) if isinstance(t, ScalarType) else torch.from_numpy(np.asarray(a, dtype=np.float32))


def _to_jax(t: KsType, a: np.ndarray) -> Any:
    import jax.numpy as jnp

    return jnp.asarray(np.asarray(a, dtype=np.float32))


def random_jax_value(t: KsType, rng: np.random.Generator, n: int = 3) -> Any:
    """A value of type t as the jax target takes it: Floats in [0.5, 1.5), Integers 1..n-1 (valid
    indices of the size-n tensors), Bools true, every tensor dimension n (tensors of tensors or
    tuples stacked), tuples as tuples, types holding no scalar as ()."""
    import jax.numpy as jnp

    from ksbind.lang.types import TupleType

    if not t.contains(lambda x: isinstance(x, ScalarType)):
        return ()
    if isinstance(t, ScalarType):
        return {"Float": lambda: jnp.float32(rng.uniform(0.5, 1.5)), "Integer": lambda: jnp.int32(rng.integers(1, n)),
                "Bool": lambda: jnp.bool_(True)}[t.name]()
    if isinstance(t, TupleType):
        return tuple(random_jax_value(e, rng, n) for e in t.elements)
    assert isinstance(t, TensorType)
    if isinstance(t.element, ScalarType):
        shape = (n,) * t.rank
        if t.element.name == "Float":
            return jnp.asarray(rng.uniform(0.5, 1.5, size=shape).astype(np.float32))
        if t.element.name == "Integer":
            return jnp.asarray(rng.integers(1, n, size=shape).astype(np.int32))
        return jnp.ones(shape, dtype=bool)
    import jax

    rows = [random_jax_value(t.element, rng, n) for _ in range(n)]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *rows)


@dataclass
class VjpCheck:
    name: str
    ok: bool
    detail: str


#: float32's unit roundoff: ks Float is float32, so f is only ever evaluated to this relative
#: precision (the differences below are taken in float64 from float32 values).
F32_EPS = float(np.finfo(np.float32).eps) / 2
#: The rounding error allowed in each value of f, in float32 ulps of |f| (K below).
ULPS = 8


def check_vjp(m: ModuleType, b: Binding, seed: int = 0, n: int = 3, target: str = "python") -> VjpCheck:
    """<vjp(x, dr), v> against <dr, J v> from central differences, for two random directions v.
    Arguments cross as nested lists (python target), float32 tensors (torch target) or jax arrays
    (jax target).

    How tight that can be: f computes in float32, so each value of f carries a rounding error of
    some ulps of its magnitude, which a difference over 2h divides by 2h; the central difference
    itself is off by h^2/6 times the third derivative. Richardson's extrapolation of the steps h
    and h/2, (4 D(h/2) - D(h)) / 3, cancels the h^2 term (leaving h^4) and weighs the rounding
    of the two by 4/3 and 1/3. So the check allows, per direction,
        |an - fd| <= K * u32 * (4 S(h/2) + S(h)) / 3 + 1e-4 * |fd|,   S(h) = sum|dr * f(x +- h v)| / 2h
    with K = 8 ulps (ULPS) for rounding accumulated inside f (sums of up to a few dozen terms here) and
    1e-4 for the h^4 remainder and the float32 rounding of x +- h v (h = 1e-2, inputs in
    [0.5, 1.5]). It was rtol 3e-2 with atol 3e-2 * (1 + |fd|): a gradient 3% off passed."""
    assert b.vjp_name is not None
    _to_py = {"torch": _to_torch, "jax": _to_jax}.get(target, globals()["_to_py"])
    f: Callable[..., Any] = getattr(m, b.name)
    vjp: Callable[..., Any] = getattr(m, b.vjp_name)
    params, ret = b.decl.params, b.decl.return_type
    rng = np.random.default_rng(seed)
    xs = [_random(t, rng, n) for t in params]

    def call(values: list[np.ndarray]) -> np.ndarray:
        return np.asarray(f(*[_to_py(t, v) for t, v in zip(params, values)]), dtype=np.float64)

    try:
        y = call(xs)
        dr = rng.normal(size=y.shape)
        grads = vjp(*[_to_py(t, v) for t, v in zip(params, xs)], _to_py(ret, dr))
        grads = [grads] if len(params) == 1 else list(grads)
        grads = [np.asarray(g, dtype=np.float64) for g in grads]
        def central(vs: list[np.ndarray], step: float) -> tuple[float, float]:
            """<dr, (f(x + step v) - f(x - step v)) / 2 step>, and its float32 rounding scale."""
            up = call([x + step * v for x, v in zip(xs, vs)])
            down = call([x - step * v for x, v in zip(xs, vs)])
            scale = float(np.sum(np.abs(dr * up)) + np.sum(np.abs(dr * down))) / (2 * step)
            return float(np.sum(dr * (up - down)) / (2 * step)), scale

        h = 1e-2
        for _ in range(2):
            vs = [rng.normal(size=x.shape) for x in xs]
            (d_h, s_h), (d_half, s_half) = central(vs, h), central(vs, h / 2)
            fd = (4 * d_half - d_h) / 3
            an = float(sum(np.sum(g * v) for g, v in zip(grads, vs)))
            tolerance = ULPS * F32_EPS * (4 * s_half + s_h) / 3 + 1e-4 * abs(fd)
            if abs(an - fd) > tolerance:
                return VjpCheck(b.name, False, f"vjp gives {an:.8g}, finite differences {fd:.8g} (allowed "
                                               f"{tolerance:.2g})")
    except Exception as e:  # a function may reject random inputs (sizes it asserts on)
        return VjpCheck(b.name, False, f"{type(e).__name__}: {e}")
    return VjpCheck(b.name, True, "ok")



__all__ = ["random_jax_value", "KNOWN_WRONG_VJPS", "all_programs", "ci_programs", "build_programs", "build_program", "check_vjp", "checkable",
           "ProgramResult", "module_name"]
