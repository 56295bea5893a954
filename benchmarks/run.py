"""The performance table: every comparison, side by side, in one run.

    python -m benchmarks.run            # full sizes (about 3-4 minutes on 2 cores)
    python -m benchmarks.run --quick    # tiny sizes: checks every row runs
    python -m benchmarks.run --quick --only render --only "import ksbind"   # some rows
    python -m benchmarks.run --write-doc docs/performance.md

Each row times ksbind and its reference *interleaved* (A, B, A, B, ...) after
a warm-up, so drift in machine load hits both sides alike, and reports the
ratio of the two medians (benchmarks/timing.py). Builds happen in fresh
processes with empty caches where the row is about a cold or cached build.
Everything is built into a temporary folder: nothing here touches the user's caches.

The rows come from GROUPS below, in order: each Group names the rows it yields
(checked when it runs, and read by tests/test_benchmarks.py) and says when it
cannot run. A new row is one more Group.
"""
from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ksbind
from benchmarks import (
    REPO,
    batch_build,
    call_rows,
    frontend_bench,
    gmm_overhead,
    import_time,
    inductor_rows,
    jax_rows,
    jvp_build,
    ks_patterns,
    ksc_gmm_build,
    limited_api,
    noop_build,
    render_bench,
    target_builds,
)
from benchmarks.scratch import scratch_dir
from benchmarks.timing import Row, build_in_new_process, load_inline_in_new_process, log, pair, parser, table

# ---------------------------------------------------------------- the modules under test

MODULES = textwrap.dedent("""\
    modules:
      - name: bench_ks
        target: ks
        ks: [{repo}/examples/relu3/relu3.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp]
        bindings:
          - {{name: relu3, function: "[relu3 Float]"}}
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
        output: {out}/bench_ks
      - name: bench_py
        target: python
        ks: [{repo}/examples/relu3/relu3.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp]
        bindings:
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
        output: {out}/bench_py
      - name: bench_torch
        target: torch
        ks: [{repo}/examples/relu3/relu3.ks, {repo}/examples/torch_ops/ops.ks, {repo}/examples/rownorm/rownorm.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp, {repo}/examples/torch_ops/ops.cpp, {repo}/examples/rownorm/rownorm.cpp]
        bindings:
          - {{name: vrelu3, vjp: vrelu3_vjp}}
          - {{name: relu3, vjp: relu3_vjp, mode: elementwise}}
          - {{name: poke}}
          - {{name: muladd_relu, mode: elementwise}}
          - {{name: rownorm, mode: vmap}}
        output: {out}/bench_torch
      - name: bench_torch_fast
        target: torch
        ks: [{repo}/examples/rownorm/rownorm.ks]
        cpp: [{repo}/examples/rownorm/rownorm.cpp]
        bindings:
          - {{name: rownorm, mode: vmap}}
        fast_math: true
        output: {out}/bench_torch_fast
    """)

# A (Float, Integer) -> Float function for the python target's call-overhead row:
# written into the temporary folder, bound on the python target (POLY_CONFIG) and by hand.
POLY_KS = """\
; poly(x, n) = 1 + x + x^2 + ... + x^n (Horner)
(def poly Float ((x : Float) (n : Integer))
     (if (lte n 0) 1.0 (add 1.0 (mul x (poly x (sub n 1))))))
"""
POLY_CPP = """\
#include "knossos.h"
namespace ks {
ks::Float poly$afi(ks::allocator * $alloc, ks::Float x, ks::Integer n) {
    ks::Float r = 1.0f;
    for (ks::Integer i = 0; i < n; ++i) r = 1.0f + x * r;
    return r;
}
}  // namespace ks
"""
POLY_CONFIG = textwrap.dedent("""\
    modules:
      - name: bench_poly
        target: python
        ks: [{dir}/poly.ks]
        cpp: [{dir}/poly.cpp]
        bindings:
          - {{name: poly, function: "[poly (Tuple Float Integer)]"}}
        output: {dir}/out
    """)

# The same relu3 and poly bound by hand with pybind11's m.def (reference for the ks and python targets),
# and vrelu3 on lists of floats (pybind11's std::vector caster: the python target's list row).
HAND_PYBIND = textwrap.dedent("""\
    #include <ksbind/pybind.h>
    #include <pybind11/stl.h>
    #include <vector>
    namespace ks {
    ks::Float relu3$af(ks::allocator *, ks::Float);
    ks::Float poly$afi(ks::allocator *, ks::Float, ks::Integer);
    }
    static ks::allocator hand_alloc(1000000);
    PYBIND11_MODULE(bench_hand, m) {
        m.def("relu3", [](ks::Float x) { return ks::relu3$af(&hand_alloc, x); });
        m.def("poly", [](ks::Float x, ks::Integer n) { return ks::poly$afi(&hand_alloc, x, n); });
        m.def("vrelu3", [](const std::vector<ks::Float>& xs) {
            std::vector<ks::Float> out(xs.size());
            for (size_t i = 0; i < xs.size(); ++i) out[i] = ks::relu3$af(&hand_alloc, xs[i]);
            return out;
        });
    }
    """)

# The same vrelu3 as a hand-written torch extension (reference for the torch target).
HAND_TORCH = r"""
#include <torch/extension.h>
static inline float relu3(float x) {
    if (x < 0.0f) return 0.0f;
    if (x < 1.0f) return x * x * x / 3.0f;
    return x - 2.0f / 3.0f;
}
torch::Tensor vrelu3(torch::Tensor t) {
    TORCH_CHECK_TYPE(t.scalar_type() == torch::kFloat32, "t: expected float32");
    TORCH_CHECK_VALUE(t.device().is_cpu() && t.dim() == 1, "t: expected a 1-d CPU tensor");
    t = t.contiguous();
    auto out = torch::empty_like(t);
    const float* in = t.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) o[i] = relu3(in[i]);
    return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("vrelu3", &vrelu3); }
"""


@dataclass(frozen=True)
class Sizes:
    render_bindings: int
    render_repeats: int
    calls: int            # calls per timed batch (overhead rows)
    repeats: int          # timed batches per side
    elements: int         # size of the "large" tensors
    memory_calls: int
    cached_builds: int
    batch_modules: int    # modules of the batch-build row (benchmarks/batch_build.py)


FULL = Sizes(10_000, 5, 20_000, 21, 1_000_000, 100_000, 5, 40)
QUICK = Sizes(200, 2, 200, 3, 10_000, 1_000, 2, 4)
#: Repeats of the GMM build rows (each repeat builds it six ways: about a minute on 2 cores).
GMM_REPEATS = 3


@dataclass
class Run:
    """One run's sizes and scratch folder, and the modules its rows share: each is built
    once, on first use, into one cache (the cold-build group runs before any of them)."""

    sizes: Sizes
    tmp: Path
    baseline: Path | None = None
    _made: dict[str, Any] = field(default_factory=dict)

    @property
    def quick(self) -> bool:
        return self.sizes == QUICK

    @property
    def cache(self) -> Path:
        return self.tmp / "cache"

    @property
    def config(self) -> Path:
        """MODULES' config, written once."""
        return self.once("config", lambda: _write(self.tmp / "bench.yaml", MODULES.format(repo=REPO, out=self.tmp / "out")))

    def module(self, name: str) -> Any:
        """One of MODULES, built into the run's cache."""
        return self.once(name, lambda: ksbind.build(self.config, name=name, cache_dir=self.cache, quiet=True))

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def poly_config(self) -> Path:
        """poly's .ks, C++ and python-target config in tmp/poly; returns the config."""
        d = self.tmp / "poly"

        def write() -> Path:
            d.mkdir(exist_ok=True)
            _write(d / "poly.ks", POLY_KS)
            _write(d / "poly.cpp", POLY_CPP)
            return _write(d / "poly.yaml", POLY_CONFIG.format(dir=d))
        return self.once("poly config", write)

    def hand_pybind(self) -> Any:
        """The hand-written pybind11 module of relu3 and poly, compiled with the flags ksbind uses."""
        return self.once("hand pybind", lambda: _compile_hand_pybind(self.tmp, self.poly_config().parent))

    def inline(self) -> Any:
        """HAND_TORCH through load_inline (in tmp/inline-build: a hit after the cold-build group)."""
        def load() -> Any:
            from torch.utils.cpp_extension import load_inline
            return load_inline("bench_inline", cpp_sources=[HAND_TORCH], extra_cflags=["-O3"],
                               build_directory=str(self.inline_dir))
        return self.once("inline", load)

    @property
    def inline_dir(self) -> Path:
        d = self.tmp / "inline-build"
        d.mkdir(parents=True, exist_ok=True)
        return d


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _compile_hand_pybind(tmp: Path, poly_dir: Path) -> Any:
    import importlib.util

    import pybind11

    from ksbind.backend.toolchain import BASE_FLAGS, INCLUDE_DIR, RUNTIME_DIR
    from ksbind.targets.registry import get_target

    src = _write(tmp / "bench_hand.cpp", HAND_PYBIND)
    out = tmp / f"bench_hand{sysconfig.get_config_var('EXT_SUFFIX')}"
    # ksbind's shared headers, then the ks target's own (ksbind/pybind.h is in its package)
    subprocess.run(["g++", *BASE_FLAGS, "-shared", f"-I{RUNTIME_DIR}", f"-I{INCLUDE_DIR}",
                    *(f"-I{d}" for d in get_target("ks").include_dirs), f"-I{pybind11.get_include()}",
                    f"-I{sysconfig.get_paths()['include']}", str(src),
                    str(REPO / "examples/relu3/relu3.cpp"), str(poly_dir / "poly.cpp"), "-o", str(out)],
                   check=True)
    spec = importlib.util.spec_from_file_location("bench_hand", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the rows measured here

def import_rows(run: Run) -> list[Row]:
    medians = import_time.measure(runs=5 if run.quick else 21, commands={"bare": "pass", "ksbind": "import ksbind"})
    return [Row("import ksbind", "start-up added by `import ksbind` (median, fresh processes)",
                "the 30 ms budget", max(0.0, medians["ksbind"] - medians["bare"]), 0.030, "s",
                "<= 1.0")]  # 0: below the noise of a process start


def render_rows(run: Run) -> list[Row]:
    n = run.sizes.render_bindings
    cases = render_bench.render_cases(n)
    assert cases.identical, "the f-string generator no longer writes what the templates write"
    t_render, t_fstring = pair(cases.default, cases.fstring, 1, run.sizes.render_repeats, time.process_time)
    return [Row("render", f"render_module, {n:,} bindings", "plain f-string generator of the same files",
                t_render, t_fstring, "s", "<= 3.0")]


#: The build-cost row's torch module: vrelu3 over a 1-d float tensor, as HAND_TORCH writes it.
BUILD_COST_MODULE = textwrap.dedent("""\
    name: {name}
    target: torch
    ks: [{repo}/examples/relu3/relu3.ks]
    cpp: [{repo}/examples/relu3/relu3.cpp]
    bindings:
      - {{name: {binding}, function: "[vrelu3 (Tensor 1 Float)]"}}
    output: {out}
    """)


def cold_build_rows(run: Run) -> list[Row]:
    """A cold build, then cached builds, of bench_ks in fresh processes; then the build cost:
    a torch-target module of vrelu3 built in an empty cache against load_inline of the same
    by hand in an empty folder, interleaved, each repeat with fresh names (nothing cached on
    either side, ccache off: benchmarks/timing.py). The cold build needs the run's cache
    empty: this group runs before any that builds."""
    if run.cache.exists():
        raise RuntimeError(f"{run.cache} is not empty: the cold-build group must run before any group that builds")
    t_cold = build_in_new_process(run.config, run.cache, "bench_ks")[0]
    t_cached = statistics.median(build_in_new_process(run.config, run.cache, "bench_ks")[0]
                                 for _ in range(run.sizes.cached_builds))
    ours, theirs = [], []
    for r in range(1 if run.quick else 3):
        name = f"build_cost_{r}"
        config = _write(run.tmp / f"{name}.yaml", BUILD_COST_MODULE.format(
            name=name, binding=f"vrelu3_{r}", repo=REPO, out=run.tmp / "out" / name))
        cache = run.tmp / f"{name}-cache"
        ours.append(build_in_new_process(config, cache)[0])
        shutil.rmtree(cache, ignore_errors=True)
        # The first load_inline builds into run.inline_dir, which the call rows then load (a hit).
        folder = run.inline_dir if r == 0 else run.tmp / f"inline-build-{r}"
        theirs.append(load_inline_in_new_process(f"bench_inline{'' if r == 0 else r}", HAND_TORCH, folder)[0])
    return [Row("cached build", "ksbind.build, unchanged module, new process",
                "cold build of the same", t_cached, t_cold, "s", "<= 0.05"),
            Row("build cost", "cold build, torch-target module of vrelu3 (empty cache)",
                "cold load_inline of the same by hand (empty folder), interleaved",
                statistics.median(ours), statistics.median(theirs), "s", "<= 0.5")]


def ks_call_rows(run: Run) -> list[Row]:
    ks_mod, hand, s = run.module("bench_ks"), run.hand_pybind(), run.sizes
    assert ks_mod.relu3(0.5) == hand.relu3(0.5)
    t_gen, t_hand = pair(lambda: ks_mod.relu3(0.5), lambda: hand.relu3(0.5), s.calls, s.repeats)
    return [Row("call overhead, ks target", "generated entry, scalar relu3",
                "hand-written pybind11 m.def", t_gen * 1e9, t_hand * 1e9, "ns", "<= 1.10")]


def python_call_rows(run: Run) -> list[Row]:
    hand, s = run.hand_pybind(), run.sizes
    poly_mod = ksbind.build(run.poly_config(), name="bench_poly", cache_dir=run.cache, quiet=True)
    assert poly_mod.poly(2.0, 3) == hand.poly(2.0, 3) == 15.0
    t_py, t_hand = pair(lambda: poly_mod.poly(2.0, 3), lambda: hand.poly(2.0, 3),
                        s.calls, s.repeats)
    return [Row("call overhead, python target", "generated entry, scalar poly(2.0, 3)",
                "hand-written pybind11 m.def", t_py * 1e9, t_hand * 1e9, "ns", "<= 1.10")]


def torch_rows(run: Run) -> list[Row]:
    import torch

    torch_mod, inline, s = run.module("bench_torch"), run.inline(), run.sizes
    small = torch.randn(10)
    assert torch.allclose(torch_mod.vrelu3(small), inline.vrelu3(small))
    t_entry, t_inline = pair(lambda: torch_mod.vrelu3(small), lambda: inline.vrelu3(small), s.calls, s.repeats)
    rows = [Row("call overhead, torch target", "generated entry, 10-element vrelu3",
                "load_inline hand-written equivalent", t_entry * 1e9, t_inline * 1e9, "ns", "<= 1.10")]

    one, big = torch.zeros(1), torch.zeros(s.elements)
    t_one, t_big = pair(lambda: torch_mod.poke(one, 1.0), lambda: torch_mod.poke(big, 1.0), s.calls, s.repeats)
    rows.append(Row("size independence", "torch entry, do-nothing kernel, 1 element",
                    f"the same with {s.elements:,} elements", t_one * 1e9, t_big * 1e9, "ns", ">= 0.9"))

    x = torch.randn(s.elements)

    def eager() -> torch.Tensor:
        return torch.where(x < 0, torch.zeros_like(x), torch.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))

    assert torch.allclose(torch_mod.relu3(x), eager(), atol=1e-6)
    t_elem, t_eager = pair(lambda: torch_mod.relu3(x), eager, max(1, s.calls // 200), s.repeats)
    rows.append(Row("elementwise throughput", f"elementwise relu3, {s.elements:,} floats",
                    "eager PyTorch torch.where composite", t_elem * 1e6, t_eager * 1e6, "us", "<= 1.0"))
    return rows


def vs_inductor_rows(run: Run) -> list[Row]:
    """Against torch.compile (inductor), eager as a second reference. The fast_math module is
    one more torch build (~30 s): not under --quick; tests/test_cpu_capability.py checks
    the same module's results."""
    fast_mod = None if run.quick else run.module("bench_torch_fast")
    if run.quick:
        print("vmap rownorm, fast_math rows skipped: --quick (one more torch build)")
    return inductor_rows.measure(run.module("bench_torch"), inductor_rows.QUICK if run.quick else inductor_rows.FULL,
                                 log, inductor=not run.quick or os.environ.get("KSBIND_BENCH_INDUCTOR") == "1",
                                 fast_module=fast_mod)


def memory_rows(run: Run) -> list[Row]:
    import torch

    rows = []
    for label, mod, arg in (("python", run.module("bench_py"), [0.5] * 100),
                            ("torch", run.module("bench_torch"), torch.randn(100))):
        mod.reset_allocator()
        mod.vrelu3(arg)
        first = mod.allocator_peak()
        for _ in range(run.sizes.memory_calls - 1):
            mod.vrelu3(arg)
        rows.append(Row(f"memory, {label} target", f"arena peak after {run.sizes.memory_calls:,} calls of vrelu3",
                        "peak after 1 call", float(mod.allocator_peak()), float(first), "bytes", "= 1.0"))
    return rows


def debug_rows(run: Run) -> list[Row]:
    """What a debug build (`debug: true`: bounds checks, -O0 -g) costs a call of ks code: vrelu3 over
    a tensor, in the default build and in a debug build of the same module, side by side."""
    import dataclasses

    import numpy as np

    from ksbind import load_config
    from ksbind.pipeline import build_spec

    ks_mod, s = run.module("bench_ks"), run.sizes
    spec = next(m for m in load_config(run.config) if m.name == "bench_ks")
    debug = build_spec(dataclasses.replace(spec, name="bench_ks_debug", debug=True,
                                           output=Path(spec.output).with_name("bench_ks_debug")),
                       cache_dir=run.cache, quiet=True)
    x = np.linspace(-2, 2, s.elements // 10, dtype=np.float32)
    assert np.array_equal(np.asarray(debug.vrelu3(x)), np.asarray(ks_mod.vrelu3(x)))

    def call(m: Any) -> Callable[[], object]:
        def once() -> object:
            m.reset_allocator()
            return m.vrelu3(x)
        return once

    t_debug, t_default = pair(call(debug), call(ks_mod), max(1, s.calls // 100), s.repeats)
    # No target: the row says what debug costs (docs/ks.md#debug-builds); >= 1 only checks it is not faster.
    return [Row("debug build", f"vrelu3 over {x.size:,} floats, ks target, debug build (bounds checks, -O0 -g)",
                "the same call, default build", t_debug * 1e6, t_default * 1e6, "us", ">= 1.0")]


def batch_rows(run: Run) -> list[Row]:
    n = run.sizes.batch_modules
    t_one, t_each = batch_build.measure(run.tmp / "batch", n, 1)
    return [Row("batch build", f"`ksbind build` of {n} small modules, one command",
                "the same, one command per module, one after another", t_one, t_each, "s", "<= 0.6")]


def gmm_build_rows(run: Run) -> list[Row]:
    """The edit-build-call loop on ksc's GMM module (benchmarks/ksc_gmm_build.py), side by side."""
    t = ksc_gmm_build.measure(run.tmp / "gmm", GMM_REPEATS, run.baseline, log)
    print(ksc_gmm_build.report(t), file=sys.stderr)  # with CPU seconds: steadier on a loaded machine
    cold = t.median("cold")
    what = "GMM module (gmm.ks via ksc, python target)"
    return [
        Row("gmm cold build, warm shared parts", f"{what}, new module, cache where two others were built",
            "g++ alone on its user C++ (ksc's output), same flags", cold, t.median("gxx"), "s", "<= 2.0"),
        Row("gmm rebuild, .ks edited", "the same module after editing one literal of its .ks",
            "its cold build (row above)", t.median("edit_ks"), cold, "s", "<= 0.25"),
        Row("gmm rebuild, bindings edited", "the same module after renaming its binding",
            "its cold build", t.median("edit_bindings"), cold, "s", "<= 0.5"),
        Row("gmm first build ever", f"{what}, empty cache (no objects, no precompiled header)",
            f"the same, {t.baseline}", t.median("first_new"), t.median("first_old"), "s", "<= 1.0"),
    ]


#: (target, bound) of the per-target GMM build rows
TARGET_BOUNDS = (("torch", "<= 2.0"), ("python", "<= 1.5"), ("ks", "<= 1.5"))


def target_build_rows(run: Run) -> list[Row]:
    """Each target's build against its compiler alone, and the torch target against
    load_inline (benchmarks/target_builds.py), side by side."""
    t = target_builds.measure(run.tmp / "targets", GMM_REPEATS, run.baseline, log)
    print(target_builds.report(t), file=sys.stderr)
    rows = []
    for target, bound in TARGET_BOUNDS:
        rows.append(Row(f"gmm build, {target} target", f"GMM module via ksc, {target} target, new module, shared "
                        "parts warm", "the compiler alone on its user C++, the target's flags",
                        t.median(f"cold_{target}"), t.median(f"gxx_{target}"), "s", bound))
    rows.append(Row("elementwise build, torch target", "one elementwise binding, torch target, shared parts warm",
                    "load_inline of the same by hand, cold", t.median("elementwise"), t.median("load_inline"),
                    "s", "<= 0.33"))
    for target, _ in TARGET_BOUNDS:
        rows.append(Row(f"first build ever, {target} target", f"GMM module via ksc, {target} target, empty cache",
                        f"the same, {t.baseline}", t.median(f"first_new_{target}"), t.median(f"first_old_{target}"),
                        "s", "<= 1.0"))
    return rows


def jvp_build_rows(run: Run) -> list[Row]:
    """A torch module with a jvp beside each vjp against the same without (benchmarks/jvp_build.py)."""
    t = jvp_build.measure(run.tmp / "jvp", GMM_REPEATS, log)
    print(jvp_build.report(t), file=sys.stderr)
    return [Row("jvp build cost, torch target", "3 bindings via ksc, torch target, each with a vjp and a jvp, "
                "shared parts warm", "the same with a vjp only", t.median("jvp"), t.median("vjp"), "s", "report")]


# ---------------------------------------------------------------- the registry

def _runs_always(quick: bool) -> str | None:
    return None


def _not_quick(why: str) -> Callable[[bool], str | None]:
    return lambda quick: f"--quick ({why})" if quick else None


@dataclass(frozen=True)
class Group:
    """Rows measured together. ``names``: the rows ``measure`` yields, in order
    (``quick_names`` where --quick yields fewer); ``skipped``: why the group cannot
    run (given --quick or not), or None. run() checks what ``measure`` yields
    against ``names``, so the list the test reads cannot drift."""

    title: str
    measure: Callable[[Run], list[Row]]
    names: tuple[str, ...]
    quick_names: tuple[str, ...] | None = None
    skipped: Callable[[bool], str | None] = _runs_always

    def expected(self, quick: bool) -> tuple[str, ...]:
        return self.quick_names if quick and self.quick_names is not None else self.names


_INDUCTOR = ("relu3 forward", "relu3 forward+backward", "broadcast muladd_relu", "vmap rownorm")

GROUPS: list[Group] = [
    Group("import time", import_rows, ("import ksbind",)),
    Group("render", render_rows, ("render",)),
    Group("cold and cached builds", cold_build_rows, ("cached build", "build cost")),  # first to build
    Group("ks target call", ks_call_rows, ("call overhead, ks target",)),
    Group("python target call", python_call_rows, ("call overhead, python target",)),
    Group("limited API",
          lambda run: limited_api.rows(run.poly_config(), run.config, run.cache, run.hand_pybind(), run.sizes.calls,
                                       run.sizes.repeats, log),
          ("call overhead, python target, list", "limited API, python target", "limited API, python target")),
    Group("threads and strings", lambda run: call_rows.rows(run.cache, run.quick, log),
          ("threads, python target", *["strings, python target"] * len(call_rows.STRING_PATHS))),
    Group("torch target", torch_rows, ("call overhead, torch target", "size independence", "elementwise throughput")),
    Group("vs inductor", vs_inductor_rows,
          tuple(f"vs inductor: {row}, {n} thr" for n in (2, 1) for row in (*_INDUCTOR, "vmap rownorm, fast_math")),
          quick_names=tuple(f"vs inductor: {row}, {n} thr" for n in (2, 1) for row in _INDUCTOR)),
    Group("GMM binding-overhead", lambda run: gmm_overhead.gmm_rows(run.tmp / "gmm-overhead", run.quick, run.cache, log),
          tuple(f"gmm objective+vjp, torch target, {c.label}" for c in gmm_overhead.FULL),
          skipped=_not_quick("a torch build and the C++ harness; python -m benchmarks.gmm_overhead --quick runs them")),
    Group("ks pattern", lambda run: ks_patterns.rows(run.tmp / "ks-patterns", run.quick, run.cache, log),
          ks_patterns.ROW_NAMES, skipped=lambda quick: ks_patterns.available()),
    Group("frontend (ksbind.compile)",
          lambda run: frontend_bench.rows(run.tmp / "frontend", run.quick, run.cache, log),
          frontend_bench.ROW_NAMES, skipped=lambda quick: frontend_bench.available()),
    Group("jax", lambda run: jax_rows.rows(run.cache, run.quick, log), jax_rows.ROW_NAMES),
    Group("jax GMM", lambda run: jax_rows.gmm_rows(run.cache, log), jax_rows.GMM_ROW_NAMES,
          skipped=_not_quick("the GMM module built for jax and torch; python -m benchmarks.jax_rows runs them")),
    Group("no-op builds (fresh processes)",
          lambda run: noop_build.rows(run.tmp / "noop", run.cache, run.quick, log, Row),
          tuple(f"no-op build, {t} target" for t in noop_build.TARGETS)),
    Group("batch build", batch_rows, ("batch build",)),
    Group("memory", memory_rows, ("memory, python target", "memory, torch target")),
    Group("debug build", debug_rows, ("debug build",)),
    Group("GMM build", gmm_build_rows, ("gmm cold build, warm shared parts", "gmm rebuild, .ks edited",
                                        "gmm rebuild, bindings edited", "gmm first build ever"),
          skipped=lambda quick: "--quick (they build the GMM module many ways, 3 times)" if quick
          else ksc_gmm_build.available()),
    Group("build per target", target_build_rows,
          (*(f"gmm build, {t} target" for t, _ in TARGET_BOUNDS), "elementwise build, torch target",
           *(f"first build ever, {t} target" for t, _ in TARGET_BOUNDS)),
          skipped=lambda quick: "--quick (they build the GMM module for each target, 3 times)" if quick
          else ksc_gmm_build.available()),
    Group("jvp build cost", jvp_build_rows, ("jvp build cost, torch target",),
          skipped=lambda quick: "--quick (six torch builds)" if quick else jvp_build.available()),
]


def row_names(quick: bool, only: list[str] | None = None) -> list[str]:
    """The rows a run prints here, in order (groups that cannot run left out)."""
    return [name for g in selected(only) if g.skipped(quick) is None for name in g.expected(quick)]


def selected(only: list[str] | None) -> list[Group]:
    """The groups whose title or a row name contains one of ``only`` (case aside); all without it."""
    if not only:
        return list(GROUPS)
    wanted = [w.lower() for w in only]
    return [g for g in GROUPS if any(w in text.lower() for w in wanted for text in (g.title, *g.names))]


def measure(run: Run, groups: list[Group]) -> list[Row]:
    rows: list[Row] = []
    for group in groups:
        why = group.skipped(run.quick)
        if why:
            print(f"{group.title} rows skipped: {why}")
            continue
        log(group.title)
        got = group.measure(run)
        names = [r.name for r in got]
        if names != list(group.expected(run.quick)):
            raise RuntimeError(f"group {group.title!r} yielded rows {names}, "
                               f"its declaration says {list(group.expected(run.quick))}")
        rows += got
    return rows


# ---------------------------------------------------------------- reporting

def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return (f"{cpu}, {os.cpu_count()} cores; Linux {platform.release()}; Python {platform.python_version()}; "
            f"torch {torch.__version__} ({torch.get_num_threads()} threads); {gxx}; ksbind {ksbind.__version__}")


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: check that every row runs")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="only the groups whose title or a row name contains NAME (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the rows this run would measure, and stop")
    ap.add_argument("--write-doc", metavar="FILE", help="also write the table into this markdown file")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="an older ksbind checkout for the 'first build ever' rows (see benchmarks/ksc_gmm_build.py)")
    args = ap.parse_args(argv)
    groups = selected(args.only)
    if not groups:
        ap.error(f"no group or row matches {args.only}")
    if args.only and args.write_doc:
        ap.error("--write-doc writes the whole table: not with --only")
    if args.list:
        print("\n".join(row_names(args.quick, args.only)))
        return 0
    sizes = QUICK if args.quick else FULL
    start = time.perf_counter()
    with scratch_dir(prefix="ksbind-benchmarks-") as d:
        rows = measure(Run(sizes, Path(d), args.baseline), groups)
    command = "python -m benchmarks.run" + (" --quick" if args.quick else "") + "".join(
        f" --only {o!r}" for o in args.only or ())
    about = (f"Measured {time.strftime('%Y-%m-%d')} with `{command}` in {time.perf_counter() - start:.0f} s "
             f"on: {machine()}.")
    print(about)
    print()
    print(table(rows))
    if args.write_doc:
        _write_doc(Path(args.write_doc), about, table(rows))
    return 0


def _write_doc(path: Path, about: str, text: str) -> None:
    """Replace the table between the markers in path (the prose around it is kept)."""
    begin, end = "<!-- benchmarks:begin -->", "<!-- benchmarks:end -->"
    old = path.read_text() if path.exists() else f"# Performance\n\n{begin}\n{end}\n"
    head, rest = old.split(begin, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(f"{head}{begin}\n{about}\n\n{text}\n{end}{tail}")


if __name__ == "__main__":
    sys.exit(main())
