"""The jax target's compatibility check (scripts/test_jax_compat.sh).

``build OUT``: in the venv that builds (CPython 3.11, jax 0.10.2: the oldest
FFI API supported), build two jax-target modules (configs/relu3_jax.yaml,
tests/data/jax/calls.yaml) into OUT/cache and record where their wrappers are
and what they return here (OUT/expected.npz).

``check OUT``: in another venv (CPython 3.12, jax 0.12), import those same
built files (no rebuild: ksbind's build is never called) and check that every
function gives the recorded values eagerly, under jax.jit, jax.grad, jax.vjp
and jax.vmap, and that a KS_ASSERT still arrives as a JAX error with its message.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def cases(m: ModuleType, c: ModuleType) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    x = jnp.linspace(-1.5, 2.5, 12, dtype=jnp.float32)
    xs = x.reshape(3, 4)
    v = jnp.arange(1, 5, dtype=jnp.float32)
    return {
        "relu3": m.relu3(xs),
        "relu3_jit_grad": jax.jit(jax.grad(lambda a: m.relu3(a).sum()))(xs),
        "vrelu3": m.vrelu3(x),
        "vrelu3_vjp": jax.vjp(m.vrelu3, x)[1](jnp.ones(12, jnp.float32))[0],
        "vrelu3_vmap_grad": jax.vmap(jax.grad(lambda a: m.vrelu3(a).sum()))(xs),
        "rowsum": c.rowsum(xs),
        "rowsum_grad": jax.grad(lambda a: c.rowsum(a).sum())(xs),
        "mulsin_grad": jax.grad(lambda a, b: c.mulsin(a, b).sum(), argnums=1)(xs, v),
        "stats": c.stats(v, 3)[2],
        "nested_grad": jax.jit(jax.grad(lambda a: c.nested(a).sum()))(xs),
        "repeat_sized": c.repeat_sized(v, 2),
    }


def _import(name: str, path: str) -> ModuleType:
    """The wrapper as ksbind's build imports it (ksbind/backend/loader.py)."""
    from ksbind.backend.loader import import_wrapper

    return import_wrapper(name, Path(path))


def build(out: Path) -> None:
    import numpy as np

    import ksbind

    m = ksbind.build(REPO / "configs" / "relu3_jax.yaml", cache_dir=out / "cache", quiet=True)
    c = ksbind.build(REPO / "tests" / "data" / "jax" / "calls.yaml", cache_dir=out / "cache", quiet=True)
    (out / "modules.json").write_text(json.dumps({"relu3_jax": m.__file__, "jax_calls": c.__file__}))
    np.savez(out / "expected.npz", **{k: np.asarray(v) for k, v in cases(m, c).items()})
    print(f"built with {_versions()}: {m.__file__}, {c.__file__}")


def check(out: Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    paths = json.loads((out / "modules.json").read_text())
    m, c = _import("relu3_jax", paths["relu3_jax"]), _import("jax_calls", paths["jax_calls"])
    expected = np.load(out / "expected.npz")
    got = cases(m, c)
    for k, v in got.items():
        np.testing.assert_allclose(np.asarray(v), expected[k], rtol=1e-6, err_msg=k)
    try:
        np.asarray(jax.jit(c.checked)(jnp.float32(-1)))
    except Exception as e:  # the error XLA raises for INVALID_ARGUMENT
        assert "Assert failed [x >= 0.0f]" in str(e), str(e)
    else:
        raise AssertionError("KS_ASSERT did not fail")
    print(f"checked {len(got)} cases and a KS_ASSERT on {_versions()} with modules built elsewhere: OK")


def _versions() -> str:
    import jax
    import jaxlib

    return f"CPython {sys.version.split()[0]}, jax {jax.__version__}, jaxlib {jaxlib.__version__}"


if __name__ == "__main__":
    {"build": build, "check": check}[sys.argv[1]](Path(sys.argv[2]))
