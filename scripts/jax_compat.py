"""The jax target's compatibility check (scripts/test_jax_compat.sh).

``build OUT``: in the venv that builds (CPython 3.11, jax 0.10.2: the oldest
FFI API supported), build the jax-target modules (configs/relu3_jax.yaml,
tests/data/jax/calls.yaml, and with ksc tests/data/jax/fwd.yaml, bindings with
a jvp) into OUT/cache and record where their wrappers are and what they return
here (OUT/expected.npz).

``check OUT``: in another venv (CPython 3.12, jax 0.12), import those same
built files (no rebuild: ksbind's build is never called) and check that every
function gives the recorded values eagerly, under jax.jit, jax.grad, jax.vjp
and jax.vmap (and forward mode: jax.jvp, jacfwd, linearize, and jax.grad through
a jvp's transpose), and that a KS_ASSERT still arrives as a JAX error with its message.
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared"))


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


def forward_cases(f: ModuleType) -> dict[str, Any]:
    """Forward mode (tests/data/jax/fwd.yaml): the jvp's handler, its transpose (the vjp's) and vmap."""
    import jax
    import jax.numpy as jnp

    x, v = jnp.float32(1.5), jnp.linspace(-1, 2, 4, dtype=jnp.float32)
    vs = v.reshape(2, 2)
    return {
        "dot_jvp": jax.jit(lambda a, b: jax.jvp(f.dot, (a, b), (jnp.float32(0.5), b))[1])(x, v),
        "dot_grad": jax.grad(f.dot, argnums=1)(x, v),
        "cube_jacfwd": jax.jacfwd(f.cube)(v),
        "mulsin_linearize": jax.linearize(f.mulsin, vs, v[:2])[1](vs, v[:2]),
        "mulsin_grad": jax.jit(jax.grad(lambda a, b: f.mulsin(a, b).sum(), argnums=1))(vs, v[:2]),
        "sq_jacfwd": jax.jacfwd(f.sq)(vs),
        "scaled_vmap_jvp": jax.vmap(lambda a: jax.jvp(f.scaled, (a, x), (a, x))[1])(jnp.stack([vs, -vs])),
        "pack_jvp": jax.jvp(lambda p: f.pack(p, 3), ((x, v),), ((x, v),))[1][2],
        "pack_grad": jax.grad(lambda p: f.pack(p, 3)[2].sum())((x, v))[1],
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
    modules = {"relu3_jax": m.__file__, "jax_calls": c.__file__}
    # ksc runs after jax started its threads: the jax tests' filter, for the same reason
    warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
    expected = cases(m, c)
    ksc = SHARED / "ksc"
    if (ksc / "bin" / "ksc").is_file():  # the jvps are ksc's ([fwd F])
        import dataclasses

        from ksbind.config import load_config
        [spec] = load_config(REPO / "tests" / "data" / "jax" / "fwd.yaml")
        assert spec.ksc is not None
        spec = dataclasses.replace(spec, ksc=dataclasses.replace(spec.ksc, path=ksc / "bin" / "ksc",
                                                                 runtime=ksc / "runtime"))
        f = ksbind.build(spec, cache_dir=out / "cache", quiet=True)
        modules["jax_fwd"] = f.__file__
        expected.update(forward_cases(f))
    elif os.environ.get("CI"):
        raise SystemExit(f"CI needs ksc at {ksc / 'bin' / 'ksc'} for the forward-mode module")
    else:
        print(f"ksc is not at {ksc / 'bin' / 'ksc'}: forward mode (tests/data/jax/fwd.yaml) not checked")
    (out / "modules.json").write_text(json.dumps(modules))
    np.savez(out / "expected.npz", **{k: np.asarray(v) for k, v in expected.items()})
    print(f"built with {_versions()}: {', '.join(str(p) for p in modules.values())}")


def check(out: Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    paths = json.loads((out / "modules.json").read_text())
    m, c = _import("relu3_jax", paths["relu3_jax"]), _import("jax_calls", paths["jax_calls"])
    expected = np.load(out / "expected.npz")
    got = cases(m, c)
    if "jax_fwd" in paths:
        f = _import("jax_fwd", paths["jax_fwd"])
        got.update(forward_cases(f))
        v = jnp.ones(3, jnp.float32)
        for fn, says in [(jax.grad(lambda a: f.cube(a).sum()), "binding 'cube' has a jvp but no vjp"),
                         (jax.hessian(lambda a: f.dot(jnp.float32(1), a)),
                          "binding 'dot' cannot be differentiated twice")]:
            try:
                fn(v)
            except TypeError as e:
                assert says in str(e), str(e)
            else:
                raise AssertionError(f"no error: {says}")
    for k, v in got.items():
        np.testing.assert_allclose(np.asarray(v), expected[k], rtol=1e-6, err_msg=k)
    try:
        np.asarray(jax.jit(c.checked)(jnp.float32(-1)))
    except Exception as e:  # the error XLA raises for INVALID_ARGUMENT
        assert "Assert failed [x >= 0.0f]" in str(e), str(e)
    else:
        raise AssertionError("KS_ASSERT did not fail")
    forward = " (forward mode too)" if "jax_fwd" in paths else ""
    print(f"checked {len(got)} cases{forward} and a KS_ASSERT on {_versions()} with modules built elsewhere: OK")


def _versions() -> str:
    import jax
    import jaxlib

    return f"CPython {sys.version.split()[0]}, jax {jax.__version__}, jaxlib {jaxlib.__version__}"


if __name__ == "__main__":
    {"build": build, "check": check}[sys.argv[1]](Path(sys.argv[2]))
