"""Calls from two threads against one on a GIL-releasing ks function (python
target), and the memory a call's strings leave behind (what a call must survive:
tests/test_calls.py).

Both use configs/calls.yaml's module (examples/calls), built into the
benchmark's cache.
"""
from __future__ import annotations

import gc
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import REPO
from benchmarks.timing import Row

#: The paths string_growth measures, one row each.
STRING_PATHS = ("Vec String argument", "Vec String result", "the ks call fails", "a conversion fails half-way")
#: vwork's data and passes: about 2-3 ms a call, all of it in ks code without the GIL.
ELEMENTS, PASSES = 4096, 200


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _throughput(call: Callable[[], Any], threads: int, calls_per_thread: int) -> float:
    """Calls per second with `threads` threads each making calls_per_thread calls."""
    start_line = threading.Barrier(threads + 1)

    def worker() -> None:
        start_line.wait()
        for _ in range(calls_per_thread):
            call()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for w in workers:
        w.start()
    start_line.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return threads * calls_per_thread / (time.perf_counter() - start)


def thread_scaling(mod: Any, calls: int, repeats: int) -> tuple[float, float]:
    """Median calls/s of vwork from 2 threads and from 1, measured alternately."""
    data = [float(i % 13) / 7 for i in range(ELEMENTS)]
    expected = mod.vwork(data, PASSES)
    call = lambda: mod.vwork(data, PASSES)  # noqa: E731
    two: list[float] = []
    one: list[float] = []
    _throughput(call, 2, 2)  # warm-up: each thread's arena made
    for _ in range(repeats):
        one.append(_throughput(call, 1, calls))
        two.append(_throughput(call, 2, calls))
    assert mod.vwork(data, PASSES) == expected
    return statistics.median(two), statistics.median(one)


def string_growth(mod: Any, calls: int) -> dict[str, int]:
    """RSS growth (bytes) over `calls` calls of each path that puts strings in the arena."""
    words = ["a" * 40] * 50

    def fails(fn: Callable[[], Any], exc: type[BaseException]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except exc:
                return
        return run

    paths = {
        "Vec String argument": lambda: mod.strs(words),
        "Vec String result": lambda: mod.shouts(words),
        "the ks call fails": fails(lambda: mod.strs_nonempty(words + [""]), RuntimeError),
        "a conversion fails half-way": fails(lambda: mod.strs(words + [7]), TypeError),
    }
    assert tuple(paths) == STRING_PATHS
    grown: dict[str, int] = {}
    for name, fn in paths.items():
        for _ in range(max(1, calls // 10)):
            fn()
        gc.collect()
        before = _rss()
        for _ in range(calls):
            fn()
        gc.collect()
        grown[name] = _rss() - before
    return grown


def rows(cache: Path, quick: bool, log: Callable[[str], None]) -> list[Row]:
    import ksbind

    log("threads and strings (examples/calls, python target)")
    mod = ksbind.build(REPO / "configs" / "calls.yaml", cache_dir=cache, quiet=True)
    calls, repeats = (4, 3) if quick else (150, 7)
    two, one = thread_scaling(mod, calls, repeats)
    out = [Row("threads, python target", f"2 threads, vwork ({ELEMENTS:,} floats x {PASSES}, GIL released)",
               "1 thread", two, one, "calls/s", ">= 1.8")]
    n = 2_000 if quick else 20_000
    for name, grown in string_growth(mod, n).items():
        out.append(Row("strings, python target", f"RSS growth over {n:,} calls: {name}", "1 MB",
                       float(max(grown, 0)), 1_000_000.0, "bytes", "<= 1.0"))
    return out
