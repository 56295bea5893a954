"""Binding overhead on a real workload: examples/gmm's
objective and its vjp through the torch target against the same compiled ksc
functions called from C++ (benchmarks/gmm_harness.cpp, no Python), on the
same data, and eager PyTorch (examples/gmm/reference.py in float32) for context.

    python -m benchmarks.gmm_overhead [--quick]

One "pair" is one objective call and one vjp call (dret = 1). The harness is a
long-lived process fed batch sizes on stdin, so the two sides alternate
batch by batch (harness, ksbind, eager, harness, ...) with no process start
inside any timing; each side's figure is the median over its pairs.
benchmarks/run.py shows these as rows of its table (gmm_rows below).
"""
from __future__ import annotations

import math
import statistics
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import GMM, HERE, gmm_reference
from benchmarks.timing import Row, log, parser

HARNESS = HERE / "gmm_harness.cpp"


@dataclass(frozen=True)
class Case:
    n: int
    d: int
    k: int
    # ksc's vjp keeps, for every (point, component), a zero gradient of all of x
    # (the reverse of `index i x`): its memory and time grow as N^2 K D, so the
    # arena, not the objective, bounds N (N=1000: 350 MB; N=2000: 1.02 GB).
    arena_bytes: int
    batch: int    # pairs per batch
    repeats: int  # batches per side

    @property
    def label(self) -> str:
        return f"N={self.n:,} K={self.k} D={self.d}"


FULL = (Case(1000, 8, 10, 400_000_000, 1, 9), Case(2000, 8, 10, 1_200_000_000, 1, 5))
QUICK = (Case(30, 3, 2, 100_000_000, 3, 2),)

CONFIG = textwrap.dedent("""\
    modules:
      - name: bench_gmm_torch
        target: torch
        ks: [{gmm}/gmm.kso]
        cpp: [{gmm}/gmm.cpp]
        bindings:
          - {{name: gmm_objective, vjp: gmm_objective_vjp}}
        output: {out}
    """)


@dataclass
class Result:
    case: Case
    ksbind: float     # median seconds per pair
    harness: float
    eager: float
    ksbind_objective: float  # median seconds of the objective call alone
    harness_objective: float


def harness_flags() -> list[str]:
    """The flags the torch target compiles gmm.cpp with (its unit of ks code and entries)."""
    from ksbind.backend.toolchain import RUNTIME_DIR
    from ksbind.targets.torch.build import CFLAGS

    return [*CFLAGS, f"-I{RUNTIME_DIR}", f"-I{GMM}"]


def compile_harness(out: Path) -> Path:
    exe = out / "gmm_harness"
    subprocess.run(["g++", *harness_flags(), str(HARNESS), "-o", str(exe)], check=True)
    return exe


def write_data(path: Path, inputs: Any) -> None:
    import numpy as np

    gamma, m = inputs.wishart
    n, d = inputs.x.shape
    k = inputs.alphas.shape[0]
    with path.open("wb") as f:
        f.write(np.array([n, d, k, m], dtype="<i4").tobytes())
        f.write(np.array([gamma], dtype="<f4").tobytes())
        for t in (inputs.x, inputs.alphas, inputs.means, inputs.qs, inputs.ls):
            f.write(t.contiguous().numpy().astype("<f4").tobytes())


class Harness:
    """The C++ harness process on one data file."""

    def __init__(self, exe: Path, data: Path, arena_bytes: int) -> None:
        self.proc = subprocess.Popen([str(exe), str(data), str(arena_bytes)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        words = self._line().split()
        if words[:1] != ["ready"]:
            raise RuntimeError(f"gmm harness: unexpected output {words}")
        self.value, self.dx00 = float(words[1]), float(words[2])

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"gmm harness exited with {self.proc.wait()}")
        return line

    def run(self, count: int) -> list[tuple[float, float]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{count}\n")
        self.proc.stdin.flush()
        return [(float(a), float(b)) for a, b in (self._line().split() for _ in range(count))]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure_case(module: Any, exe: Path, case: Case, work: Path) -> Result:
    import torch

    reference = gmm_reference()
    inputs = reference.random_inputs(case.n, case.d, case.k, dtype=torch.float32)
    data = work / f"gmm-{case.n}-{case.d}-{case.k}.bin"
    write_data(data, inputs)
    args = tuple(inputs)
    module.set_arena_bytes(case.arena_bytes)

    def ksbind_pairs(count: int) -> list[tuple[float, float]]:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            module.gmm_objective(*args)
            mid = time.perf_counter()
            module.gmm_objective_vjp(*args, 1.0)
            times.append((mid - start, time.perf_counter() - mid))
        return times

    leaves = [t.clone().requires_grad_() for t in args[:5]]

    def eager_pairs(count: int) -> list[float]:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            loss = reference.gmm_objective(*leaves, inputs.wishart)
            torch.autograd.grad(loss, leaves)
            times.append(time.perf_counter() - start)
        return times

    harness = Harness(exe, data, case.arena_bytes)
    try:
        # Same code, same data: the binding computes what the harness computes.
        value = float(module.gmm_objective(*args))
        dx00 = float(module.gmm_objective_vjp(*args, 1.0)[0][0, 0])
        for ours, theirs in ((value, harness.value), (dx00, harness.dx00)):
            if not math.isclose(ours, theirs, rel_tol=1e-5, abs_tol=1e-6):
                raise RuntimeError(f"gmm: binding gives {ours}, harness {theirs}")
        ksbind_pairs(1), eager_pairs(1), harness.run(1)  # warm-up (the arenas' pages, caches)
        ours_t: list[tuple[float, float]] = []
        theirs_t: list[tuple[float, float]] = []
        eager_t: list[float] = []
        for _ in range(case.repeats):
            theirs_t += harness.run(case.batch)
            ours_t += ksbind_pairs(case.batch)
            eager_t += eager_pairs(case.batch)
    finally:
        harness.close()
    return Result(case, statistics.median(a + b for a, b in ours_t), statistics.median(a + b for a, b in theirs_t),
                  statistics.median(eager_t), statistics.median(a for a, _ in ours_t),
                  statistics.median(a for a, _ in theirs_t))


def measure(tmp: Path, cases: tuple[Case, ...], cache: Path | None = None,
            log: Callable[[str], None] = lambda s: None) -> list[Result]:
    """Build the module and the harness (at once: two compilers), then time every case."""
    import ksbind

    tmp.mkdir(parents=True, exist_ok=True)
    config = tmp / "gmm_torch.yaml"
    config.write_text(CONFIG.format(gmm=GMM, out=tmp / "out"))
    log("gmm binding overhead: building the torch module and the C++ harness")
    with ThreadPoolExecutor(1) as pool:
        exe = pool.submit(compile_harness, tmp)
        module = ksbind.build(config, name="bench_gmm_torch", cache_dir=cache or tmp / "cache", quiet=True)
        harness = exe.result()
    results = []
    for case in cases:
        log(f"gmm binding overhead: {case.label}")
        results.append(measure_case(module, harness, case, tmp))
    return results


def gmm_rows(tmp: Path, quick: bool, cache: Path | None, log: Callable[[str], None]) -> list[Row]:
    """benchmarks/run.py's rows, eager PyTorch as the second reference."""
    rows = []
    for r in measure(tmp, QUICK if quick else FULL, cache, log):
        rows.append(Row(f"gmm objective+vjp, torch target, {r.case.label}",
                        "gmm_objective + gmm_objective_vjp from Python (torch tensors, viewed)",
                        "the same ksc functions from a C++ harness, same data and flags",
                        r.ksbind * 1e3, r.harness * 1e3, "ms", "<= 1.05", eager_value=r.eager * 1e3))
    return rows


def report(results: list[Result]) -> str:
    lines = [f"{'case':24} {'ksbind pair':>12} {'harness pair':>13} {'ratio':>6} {'ksbind obj':>11} "
             f"{'harness obj':>12} {'eager pair':>11}"]
    for r in results:
        lines.append(f"{r.case.label:24} {r.ksbind * 1e3:10.2f}ms {r.harness * 1e3:11.2f}ms "
                     f"{r.ksbind / r.harness:6.3f} {r.ksbind_objective * 1e3:9.3f}ms {r.harness_objective * 1e3:10.3f}ms "
                     f"{r.eager * 1e3:9.2f}ms")
    return "\n".join(lines)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ksbind-gmm-overhead-") as tmp:
        results = measure(Path(tmp), QUICK if args.quick else FULL, log=log)
    print(report(results))


if __name__ == "__main__":
    main()
