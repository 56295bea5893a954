"""How every benchmark times: its sides interleaved (A, B, A, B, ...) after a
warm-up, so drift in machine load hits each side alike, and the medians; builds
in fresh processes; the table's Row (two medians and their ratio against a target).
"""
from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import REPO

Clock = Callable[[], float]


# ---------------------------------------------------------------- interleaved sides

def interleaved(fns: Sequence[Callable[[], object]], number: int, repeats: int, clock: Clock = time.perf_counter,
                warmup: int | None = None) -> list[float]:
    """Median seconds per call of each function, timed in alternating batches of
    ``number`` calls, ``repeats`` batches each, after ``warmup`` untimed calls of
    each (default max(1, number // 10): caches, lazy imports, branch predictors)."""
    for fn in fns:
        for _ in range(max(1, number // 10) if warmup is None else warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times):
            start = clock()
            for _ in range(number):
                fn()
            out.append((clock() - start) / number)
    return [statistics.median(t) for t in times]


def pair(a: Callable[[], object], b: Callable[[], object], number: int, repeats: int,
         clock: Clock = time.perf_counter, warmup: int | None = None) -> tuple[float, float]:
    """``interleaved`` of two sides: (median of a, median of b)."""
    t_a, t_b = interleaved((a, b), number, repeats, clock, warmup)
    return t_a, t_b


@dataclass
class Times:
    """Seconds per named case, wall-clock and CPU (user + system of the processes the
    case ran and waited for: the steadier measure on a loaded machine), for
    benchmarks that run every case once per repeat and report medians."""

    cases: Iterable[str]
    baseline: str = ""
    wall: dict[str, list[float]] = field(init=False)
    cpu: dict[str, list[float]] = field(init=False)

    def __post_init__(self) -> None:
        self.cases = tuple(self.cases)
        self.wall = {c: [] for c in self.cases}
        self.cpu = {c: [] for c in self.cases}

    def add(self, case: str, measured: tuple[float, float]) -> None:
        """One (wall, cpu) measurement of ``case``."""
        self.wall[case].append(measured[0])
        self.cpu[case].append(measured[1])

    def median(self, case: str, cpu: bool = False) -> float:
        return statistics.median((self.cpu if cpu else self.wall)[case])


# ---------------------------------------------------------------- fresh processes

def children_cpu() -> float:
    """CPU seconds of every child process waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


#: Every timed build runs with no compiler cache: ksbind's launcher off (KSBIND_CCACHE=0) and
#: ccache itself disabled (for a CXX that names it, and for load_inline's builds). On a machine
#: with ccache, a "cold" build would otherwise be a cache hit while g++ alone never is.
NO_COMPILER_CACHE = {"KSBIND_CCACHE": "0", "CCACHE_DISABLE": "1"}


def in_new_process(code: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """A snippet that prints seconds (its last line, a float) run in a fresh interpreter
    with no compiler cache (NO_COMPILER_CACHE): (those seconds, the CPU seconds of the
    process and of what it ran)."""
    cpu = children_cpu()
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, **NO_COMPILER_CACHE, **(env or {})},
                          cwd=cwd,
                          capture_output=True, text=True)
    cpu = children_cpu() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{proc.stderr[-3000:]}")
    return float(proc.stdout.strip().splitlines()[-1]), cpu


def ensure_bytecode(checkout: Path) -> None:
    """The checkout's ksbind compiled to bytecode (__pycache__), as an installed ksbind is (pip
    compiles a wheel's modules when it installs them). A machine that sets
    PYTHONDONTWRITEBYTECODE, as this project's do, would otherwise compile ksbind's modules from
    source in every new process: about 80 ms of each build timed, which no user pays."""
    compileall.compile_dir(str(checkout / "ksbind"), quiet=1)


def build_in_new_process(config: Path, cache: Path, name: str | None = None, env: dict[str, str] | None = None,
                         cwd: Path | None = None, ksbind_path: Path | None = None) -> tuple[float, float]:
    """ksbind.build of a config (one module, or ``name``) in a fresh process with its own
    cache folder: seconds from before ``import ksbind`` to the imported module, and CPU
    seconds. ``ksbind_path``: another checkout's ksbind (a baseline) instead of this one."""
    from ksbind.backend.pch import wait_for_background

    ensure_bytecode(ksbind_path or REPO)
    which = "" if name is None else f", name={name!r}"
    code = ("import time; t0 = time.perf_counter(); import ksbind; "
            f"ksbind.build({str(config)!r}{which}, quiet=True); print(time.perf_counter() - t0)")
    measured = in_new_process(code, {"KSBIND_CACHE_DIR": str(cache), **(env or {}),
                                     "PYTHONPATH": str(ksbind_path or REPO)}, cwd)
    wait_for_background(cache)  # a background header build must not share the CPUs with the next case
    return measured


def load_inline_in_new_process(name: str, source: str, build_dir: Path) -> tuple[float, float]:
    """torch.utils.cpp_extension.load_inline of ``source`` in a fresh process: wall and CPU seconds."""
    build_dir.mkdir(parents=True, exist_ok=True)
    code = ("import time; t0 = time.perf_counter(); "
            "from torch.utils.cpp_extension import load_inline; "
            f"load_inline({name!r}, cpp_sources=[{source!r}], extra_cflags=['-O3'], "
            f"build_directory={str(build_dir)!r}); print(time.perf_counter() - t0)")
    return in_new_process(code, cwd=build_dir)


# ---------------------------------------------------------------- the table

@dataclass
class Row:
    """One row of the table: ksbind's median against its reference's, and the target
    for their ratio ("<= 1.10", ">= 0.9", "= 1.0", or "report": no target)."""

    name: str
    ksbind: str
    reference: str
    ksbind_value: float
    reference_value: float
    unit: str
    target: str
    eager_value: float | None = None  # a second reference: eager PyTorch (inductor rows)

    @property
    def ratio(self) -> float:
        return self.ksbind_value / self.reference_value if self.reference_value else float("inf")

    @property
    def met(self) -> bool:
        if self.target == "report":
            return True
        op, bound = self.target.split()
        # Judged on the ratio as measured: 1.054 against "<= 1.05" is not met, whatever the
        # table's rounding shows. "=" is for exact counts (bytes, calls), compared exactly too.
        r, b = self.ratio, float(bound)
        return {"<=": r <= b, ">=": r >= b, "=": r == b}[op]


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (docs/performance.md's)."""
    lines = ["| row | ksbind | reference | ksbind median | reference median | ratio | target | met "
             "| eager median | ratio to eager |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        eager = (f"{_fmt(r.eager_value)} {r.unit} | {_fmt_ratio(r.ksbind_value / r.eager_value)}"
                 if r.eager_value else " | ")
        lines.append(f"| {r.name} | {r.ksbind} | {r.reference} | {_fmt(r.ksbind_value)} {r.unit} | "
                     f"{_fmt(r.reference_value)} {r.unit} | {_fmt_ratio(r.ratio)} | {r.target} | "
                     f"{'yes' if r.met else 'NO'} | {eager} |")
    return "\n".join(lines)


def _fmt_ratio(r: float) -> str:
    """Three decimals; a ratio below 0.001 (a reference slowed by a loaded machine) keeps two
    significant digits rather than printing as 0.000."""
    return f"{r:.3f}" if r == 0 or r >= 0.001 else f"{r:.2g}"


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


# ---------------------------------------------------------------- a benchmark's command line

def log(what: str) -> None:
    """Progress, on stderr (stdout is the report)."""
    print(f"... {what}", file=sys.stderr, flush=True)


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark module's command line, its docstring as the help."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
