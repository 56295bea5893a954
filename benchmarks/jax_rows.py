"""The jax target's rows, side by side in one run (benchmarks/run.py shows them):

- call: 10-element vrelu3 under jax.jit, against a hand-written jax.ffi
  handler of the same loop (compiled here with the same flags), jitted;
- elementwise relu3 forward on 1M floats under jax.jit, against jax.jit of
  the jnp formula;
- forward+backward of the same (jax.grad of the sum), against
  jax.jit(jax.grad(...)) of the jnp formula;
- jax-target build of the GMM module (examples/gmm, ksc's committed output),
  cold in a fresh cache, in a new process, against g++ alone on its user C++
  with the jax build's flags;
- GMM objective + gradient from JAX (jit of value_and_grad), against the torch
  target's forward + backward; a jnp GMM under jax.jit(jax.value_and_grad) is
  the second reference.

    python -m benchmarks.jax_rows [--quick] [--fresh-cache] [--no-gmm]
    python -m benchmarks.jax_rows --gmm-build [--repeats N]   (only the GMM build row)

(standalone it uses KSBIND_CACHE_DIR's cache, where the GMM modules may already be built)
"""
from __future__ import annotations

import ctypes
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import GMM, REPO, gmm_reference
from benchmarks.timing import Row, build_in_new_process, log, pair, parser, table

#: The rows of rows(), and of gmm_rows() (not under --quick: a jax and a torch GMM build).
ROW_NAMES = ("jax call, 10-element vrelu3", "jax elementwise relu3 forward", "jax relu3 forward+backward")
GMM_ROW_NAMES = ("gmm build, jax target", "jax gmm objective+gradient")

HAND_HANDLER = r"""
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;
static inline float relu3(float x) { return x < 0.f ? 0.f : x < 1.f ? x * x * x / 3.f : x - 2.f / 3.f; }
static ffi::Error impl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
    const float* in = x.typed_data();
    float* out = y->typed_data();
    for (size_t i = 0, n = x.element_count(); i < n; ++i) out[i] = relu3(in[i]);
    return ffi::Error::Success();
}
#pragma GCC visibility push(default)
XLA_FFI_DEFINE_HANDLER_SYMBOL(hand_vrelu3, impl, ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
#pragma GCC visibility pop
"""


def _pair(a: Callable[[], Any], b: Callable[[], Any], number: int, repeats: int) -> tuple[float, float]:
    """timing.pair with a warm-up of at least two calls (the first call under jax.jit compiles)."""
    return pair(a, b, number, repeats, warmup=max(2, number // 10))


def _relu3_jnp(x: Any) -> Any:
    import jax.numpy as jnp

    return jnp.where(x < 0, 0.0, jnp.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))


def _hand_handler(tmp: Path) -> str:
    import jax
    import jax.ffi

    from ksbind.targets.jax.build import CFLAGS

    src, lib = tmp / "hand.cpp", tmp / "libhand.so"
    src.write_text(HAND_HANDLER)
    subprocess.run(["g++", *CFLAGS, "-shared", "-isystem", jax.ffi.include_dir(), str(src), "-o", str(lib)],
                   check=True)
    jax.ffi.register_ffi_target("bench_hand_vrelu3", jax.ffi.pycapsule(ctypes.CDLL(str(lib)).hand_vrelu3),
                                platform="cpu")
    return "bench_hand_vrelu3"


def _jnp_gmm(x: Any, alphas: Any, means: Any, qs: Any, ls: Any, wishart: tuple[float, int]) -> Any:
    """reference.gmm_objective in jnp."""
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    n, d = x.shape
    k = alphas.shape[0]
    rows, cols = [], []
    for col in range(d):
        for row in range(col + 1, d):
            rows.append(row)
            cols.append(col)
    lower = jnp.zeros((k, d, d), x.dtype).at[:, jnp.array(rows, int), jnp.array(cols, int)].set(ls)
    q = lower + jnp.eye(d, dtype=x.dtype)[None] * jnp.exp(qs)[:, None, :]
    centered = x[:, None, :] - means[None, :, :]
    qx = jnp.einsum("kij,nkj->nki", q, centered)
    main = alphas + qs.sum(1) - 0.5 * (qx * qx).sum(2)
    loglik = logsumexp(main, 1).sum() - n * logsumexp(alphas, 0)
    gamma, m = wishart
    p = d
    nn = p + m + 1
    lmg = 0.25 * p * (p - 1) * math.log(math.pi) + sum(math.lgamma(0.5 * nn - 0.5 * j) for j in range(p))
    c = nn * p * (math.log(gamma) - 0.5 * math.log(2.0)) - lmg
    frob = jnp.exp(2 * qs).sum(1) + (ls * ls).sum(1)
    prior = (0.5 * gamma * gamma * frob - m * qs.sum(1)).sum() - k * c
    return loglik - n * d * 0.5 * math.log(2 * math.pi) + prior


def _gmm_build_row(tmp: Path, repeats: int = 3) -> tuple[float, float]:
    """Cold jax-target build of the GMM module in a new process and fresh cache; g++ alone on gmm.cpp
    (alternating, ``repeats`` of each; medians)."""
    from ksbind.backend.toolchain import RUNTIME_DIR
    from ksbind.targets.jax.build import CFLAGS

    cfg = tmp / "gmm_bench.yaml"
    cfg.write_text(f"name: gmm_jax_bench\ntarget: jax\nks: [{GMM / 'gmm.kso'}]\ncpp: [{GMM / 'gmm.cpp'}]\n"
                   f"bindings:\n  - {{name: gmm_objective, vjp: gmm_objective_vjp}}\noutput: {tmp / 'gmm_out'}\n")
    builds, alone = [], []
    for i in range(repeats):
        builds.append(build_in_new_process(cfg, tmp / f"cache{i}", env={"KSBIND_PCH": "0"})[0])
        start = time.perf_counter()
        subprocess.run(["g++", *CFLAGS, f"-I{RUNTIME_DIR}", f"-I{GMM}", "-c", str(GMM / "gmm.cpp"), "-o",
                        str(tmp / "user.o")], check=True)
        alone.append(time.perf_counter() - start)
    return statistics.median(builds), statistics.median(alone)


def _gmm_build(t_build: float, t_gxx: float) -> Row:
    return Row("gmm build, jax target", "GMM module (examples/gmm), jax target, cold, new process",
               "g++ alone on its user C++, the jax build's flags", t_build, t_gxx, "s", "<= 1.3")


def _add(out: list[Row], log: Callable[[str], None], r: Row) -> None:
    out.append(r)
    log(f"{r.name}: {r.ksbind_value:.4g} vs {r.reference_value:.4g} {r.unit}")


def rows(cache: Path, quick: bool, log: Callable[[str], None]) -> list[Row]:
    """The call and elementwise rows (ROW_NAMES)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import ksbind

    out: list[Row] = []
    number, repeats = (50, 3) if quick else (2000, 15)
    elements = 10_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory(prefix="ksbind-jax-bench-") as d:
        tmp = Path(d)
        log("jax target")
        m = ksbind.build(REPO / "configs" / "relu3_jax.yaml", cache_dir=cache, quiet=True)
        target = _hand_handler(tmp)
        x10 = jnp.linspace(-1, 2, 10, dtype=jnp.float32)
        gen = jax.jit(m.vrelu3)
        hand = jax.jit(lambda x: jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x))
        np.testing.assert_allclose(gen(x10), hand(x10), rtol=1e-6)
        t_gen, t_hand = _pair(lambda: gen(x10).block_until_ready(), lambda: hand(x10).block_until_ready(),
                            number, repeats)
        _add(out, log, Row("jax call, 10-element vrelu3", "generated function under jax.jit",
                           "hand-written jax.ffi handler, jitted", t_gen * 1e6, t_hand * 1e6, "us", "<= 1.10"))

        x = jnp.asarray(np.random.default_rng(0).standard_normal(elements).astype(np.float32))
        f_ks, f_jnp = jax.jit(m.relu3), jax.jit(_relu3_jnp)
        np.testing.assert_allclose(f_ks(x), f_jnp(x), rtol=1e-5, atol=1e-6)
        n_big = max(3, number // 100)
        t_ks, t_jnp = _pair(lambda: f_ks(x).block_until_ready(), lambda: f_jnp(x).block_until_ready(),
                            n_big, repeats)
        _add(out, log, Row("jax elementwise relu3 forward", f"elementwise relu3, {elements:,} floats, jax.jit",
                           "jax.jit of the jnp formula", t_ks * 1e6, t_jnp * 1e6, "us", "<= 1.0"))
        g_ks = jax.jit(jax.grad(lambda v: m.relu3(v).sum()))
        g_jnp = jax.jit(jax.grad(lambda v: _relu3_jnp(v).sum()))
        np.testing.assert_allclose(g_ks(x), g_jnp(x), rtol=1e-5, atol=1e-6)
        t_ks, t_jnp = _pair(lambda: g_ks(x).block_until_ready(), lambda: g_jnp(x).block_until_ready(),
                            n_big, repeats)
        _add(out, log, Row("jax relu3 forward+backward", f"jax.jit(jax.grad) of the sum, {elements:,} floats",
                           "jax.jit(jax.grad) of the jnp formula", t_ks * 1e6, t_jnp * 1e6, "us", "<= 1.0"))

    return out


def gmm_rows(cache: Path, log: Callable[[str], None]) -> list[Row]:
    """The GMM rows (GMM_ROW_NAMES): its jax-target build, and its objective + gradient from JAX."""
    import jax
    import jax.numpy as jnp

    import ksbind

    out: list[Row] = []
    repeats = 15
    with tempfile.TemporaryDirectory(prefix="ksbind-jax-bench-") as d:
        log("jax target: GMM build")
        _add(out, log, _gmm_build(*_gmm_build_row(Path(d))))

        log("jax target: GMM objective + gradient")
        import torch

        reference = gmm_reference()
        mj = ksbind.build(GMM / "gmm.yaml", name="gmm_jax", cache_dir=cache, quiet=True)
        mt = ksbind.build(GMM / "gmm.yaml", name="gmm_torch", cache_dir=cache, quiet=True)
        n, dd, k = 200, 8, 5
        for mod in (mj, mt):  # ksc's vjp keeps its tape in the arena: more than the default 100 MB
            mod.set_arena_bytes(1 << 30)
        inputs = reference.random_inputs(n, dd, k, dtype=torch.float32, wishart=(1.3, 2))
        arrays = [jnp.asarray(t.numpy()) for t in inputs[:5]]
        wishart = (jnp.float32(1.3), jnp.int32(2))
        vg = jax.jit(jax.value_and_grad(lambda *a: mj.gmm_objective(*a, wishart), argnums=(0, 1, 2, 3, 4)))
        vg_jnp = jax.jit(jax.value_and_grad(lambda x, al, mu, q, lt: _jnp_gmm(x, al, mu, q, lt, (1.3, 2)), argnums=(0, 1, 2, 3, 4)))
        tensors = [t.clone().requires_grad_(True) for t in inputs[:5]]

        def torch_step() -> None:
            for t in tensors:
                t.grad = None
            mt.gmm_objective(*tensors, inputs.wishart).backward()

        v_ks, _ = vg(*arrays)
        v_ref, _ = vg_jnp(*arrays)
        assert abs(float(v_ks) - float(v_ref)) <= 1e-4 * abs(float(v_ref)), (float(v_ks), float(v_ref))
        n_gmm = 50
        t_jax, t_torch = _pair(lambda: jax.block_until_ready(vg(*arrays)), torch_step, n_gmm, repeats)
        t_jnp, _ = _pair(lambda: jax.block_until_ready(vg_jnp(*arrays)), lambda: None, n_gmm, repeats)
        _add(out, log, Row("jax gmm objective+gradient", f"jit(value_and_grad), N={n} D={dd} K={k}",
                           "torch target's forward+backward", t_jax * 1e6, t_torch * 1e6, "us", "report",
                       eager_value=t_jnp * 1e6))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, no GMM rows")
    ap.add_argument("--fresh-cache", action="store_true", help="build in an empty cache, not KSBIND_CACHE_DIR's")
    ap.add_argument("--no-gmm", action="store_true", help="leave out the GMM rows")
    ap.add_argument("--gmm-build", action="store_true", help="only the GMM build row, its own repeats")
    ap.add_argument("--repeats", type=int, default=3, help="--gmm-build's repeats")
    args = ap.parse_args(argv)
    if args.gmm_build:
        with tempfile.TemporaryDirectory(prefix="ksbind-jax-bench-") as d:
            print(table([_gmm_build(*_gmm_build_row(Path(d), args.repeats))]))
        return 0
    with tempfile.TemporaryDirectory() as c:
        cache = Path(c) if args.fresh_cache else Path(os.environ.get("KSBIND_CACHE_DIR", c))
        found = rows(cache, args.quick, log)
        if not (args.quick or args.no_gmm):
            found += gmm_rows(cache, log)
        print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
