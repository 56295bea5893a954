"""Time to read and render 10,000 ks functions (plus 5,000 gdef'd vjps) with the ks target.

Run: python -m benchmarks.parse_render_10k. Prints CPU seconds (process time), which
is what ksbind itself costs whatever else the machine is doing.

``--gc`` times it with and without ``ksbind.lang.sexpr.gc_paused`` (the cyclic
collector paused while reading), interleaved (with, without, with, ...), and
prints both medians: the figure in docs/performance.md that decides whether
the pause pays for itself.
"""
from __future__ import annotations

import contextlib
import statistics
import sys
import time

import ksbind

TYPES = ["Float", "Integer", "(Vec Float)", "(Tensor 2 Float)", "(Tuple Float (Vec Integer))", "Bool"]


def source(n: int = 10_000) -> str:
    lines = []
    for i in range(n):
        a, b, r = TYPES[i % 6], TYPES[(i // 6) % 6], TYPES[(i // 36) % 6]
        lines.append(f"(def f{i} {r} ((a : {a}) (b : {b})) 0)")
        if i % 2 == 0:
            lines.append(f"(gdef sufrev [f{i} (Tuple {a} {b})])")
    return "\n".join(lines)


def main() -> None:
    text = source()
    for run in range(3):
        t0 = time.process_time()
        decls = ksbind.parse_ks(text, "bench.ks")
        t1 = time.process_time()
        module = ksbind.render_module(decls, module_name="bench", target="ks")  # default bindings
        t2 = time.process_time()
        size = sum(len(v) for v in module.files.values()) / 1e6
        print(f"run {run}: {len(decls)} decls, parse {t1 - t0:.2f} s, render {t2 - t1:.2f} s, "
              f"total {t2 - t0:.2f} s CPU, {size:.1f} MB of output")


def compare_gc(rounds: int = 7) -> tuple[float, float]:
    """Median CPU seconds of parse + render with the collector paused while reading, and without."""
    import ksbind.lang.reader as reader
    import ksbind.lang.sexpr as sexpr
    import ksbind.pipeline as pipeline

    text = source()
    paused = sexpr.gc_paused
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for pause in (True, False):
            for module in (sexpr, reader, pipeline):
                if hasattr(module, "gc_paused"):
                    module.gc_paused = paused if pause else contextlib.nullcontext  # type: ignore[attr-defined]
            t0 = time.process_time()
            decls = ksbind.parse_ks(text, "bench.ks")
            ksbind.render_module(decls, module_name="bench", target="ks")
            times[pause].append(time.process_time() - t0)
    for module in (sexpr, reader, pipeline):
        if hasattr(module, "gc_paused"):
            module.gc_paused = paused  # type: ignore[attr-defined]
    return statistics.median(times[True]), statistics.median(times[False])


if __name__ == "__main__":
    if "--gc" in sys.argv[1:]:
        with_pause, without = compare_gc()
        print(f"parse + render, 10,000 functions: {with_pause:.2f} s CPU with gc_paused, "
              f"{without:.2f} s without (ratio {with_pause / without:.2f})")
    else:
        main()
