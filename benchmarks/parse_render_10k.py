"""Time to read and render 10,000 ks functions (plus 5,000 gdef'd vjps) with the ks target.

Run: python -m benchmarks.parse_render_10k. Prints CPU seconds (process time), which
is what ksbind itself costs whatever else the machine is doing.
"""
from __future__ import annotations

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


if __name__ == "__main__":
    main()
