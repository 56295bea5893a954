"""No-op builds, side by side: ``import ksbind; ksbind.build(config)`` of an unchanged
module in a new process, against ``import ksbind`` alone in a new process, on every
target (benchmarks/run.py shows the rows; target: at most 2x).

Each command runs in a fresh interpreter, all of them interleaved round by round
(``import ksbind``, then each target's build), and reports the time from just
before its process was started to the end of its work (the clock is the wall
clock, read by the parent when it starts the process and by the child when it is
done, so the interpreter's start counts and its exit does not); the medians are
compared. The torch and jax builds import torch or jax first, in the same
process: the time that import took there is subtracted from that run, since any
program using the module pays it. Every timed build must have reused its last
build (nothing of the pipeline imported): the benchmark fails otherwise rather
than time something else.

    python benchmarks/noop_build.py [--quick] [--cache DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CONFIG = textwrap.dedent("""\
    modules:
      - name: noop_bench_py
        target: python
        ks: [{repo}/examples/relu3/relu3.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp]
        bindings:
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
        output: {out}/noop_bench_py
      - name: noop_bench_ks
        target: ks
        ks: [{repo}/examples/relu3/relu3.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp]
        bindings:
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
        output: {out}/noop_bench_ks
      - name: noop_bench_torch
        target: torch
        ks: [{repo}/examples/relu3/relu3.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp]
        bindings:
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
        output: {out}/noop_bench_torch
      - name: noop_bench_jax
        target: jax
        ks: [{repo}/examples/relu3/relu3.ks]
        cpp: [{repo}/examples/relu3/relu3.cpp]
        bindings:
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
        output: {out}/noop_bench_jax
    """)
#: target -> (module name, what its users import first: its own import time is subtracted)
TARGETS = {"python": ("noop_bench_py", ""), "ks": ("noop_bench_ks", ""),
           "torch": ("noop_bench_torch", "torch"), "jax": ("noop_bench_jax", "jax")}


def available() -> dict[str, tuple[str, str]]:
    import importlib.util

    return {t: v for t, v in TARGETS.items() if not v[1] or importlib.util.find_spec(v[1]) is not None}


#: Ends every command: seconds since the parent started the process, less an import it timed
#: (not a KSBIND_ variable: those are part of a no-op record, and this one changes every run).
_DONE = "print(time.time() - float(os.environ['NOOP_BENCH_T0']) - own)"


def _build_code(config: Path, name: str, first: str, check: bool = True) -> str:
    timed_first = (f"s = time.perf_counter(); import {first}; own = time.perf_counter() - s; " if first
                   else "own = 0.0; ")
    build = f"import ksbind; ksbind.build({str(config)!r}, name={name!r}, quiet=True); "
    reused = "sys.exit(3) if 'ksbind.pipeline' in sys.modules else None; " if check else ""
    return "import os, sys, time; " + timed_first + build + reused + _DONE


def _run(code: str, env: dict[str, str]) -> float:
    proc = subprocess.run([sys.executable, "-c", code], env={**env, "NOOP_BENCH_T0": repr(time.time())},
                          cwd=os.path.dirname(REPO), capture_output=True, text=True)
    if proc.returncode == 3:
        raise RuntimeError(f"the no-op build did not reuse its last build: {code}")
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed: {code}\n{proc.stderr[-3000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def measure(tmp: Path, cache: Path, rounds: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Median seconds of each command (see the module's docstring), and the targets measured."""
    targets = available()
    config = tmp / "noop_bench.yaml"
    config.write_text(CONFIG.format(repo=REPO, out=tmp / "out"))
    env = {**os.environ, "KSBIND_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    env.pop("KSBIND_VERBOSE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # each process compiling ksbind's sources is not what users see
    commands = {"import ksbind": "import os, sys, time; own = 0.0; import ksbind; " + _DONE}
    for target, (name, first) in targets.items():
        log(f"no-op build rows: building {name}")
        # Built (or found) by a first process, which writes the record the timed ones reuse.
        _run(_build_code(config, name, first, check=False), env)
        commands[f"build {target}"] = _build_code(config, name, first)
    for code in commands.values():  # warm-up: the page cache, .pyc files
        _run(code, env)
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(rounds):
        for label, code in commands.items():
            times[label].append(_run(code, env))
    return {"medians": {label: statistics.median(t) for label, t in times.items()}, "targets": targets}


def rows(tmp: Path, cache: Path, quick: bool, log: Callable[[str], None], row: Callable[..., Any]) -> list[Any]:
    """benchmarks/run.py's rows: one per target (its Row class passed as ``row``)."""
    tmp.mkdir(parents=True, exist_ok=True)
    result = measure(tmp, cache, 3 if quick else 11, log)
    m = result["medians"]
    out = []
    for target, (_, first) in result["targets"].items():
        aside = f" (`import {first}` first, its time subtracted)" if first else ""
        out.append(row(f"no-op build, {target} target",
                       f"new process: `import ksbind; ksbind.build(config)`, unchanged module{aside}",
                       "new process: `import ksbind`", m[f"build {target}"], m["import ksbind"], "s", "<= 2.0"))
    missing = sorted(set(TARGETS) - set(result["targets"]))
    if missing:
        print(f"no-op build rows skipped for {', '.join(missing)}: not installed")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 rounds instead of 11")
    ap.add_argument("--cache", type=Path, help="build cache (default: a fresh temporary one)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ksbind-noop-bench-") as d:
        tmp = Path(d)
        cache = args.cache or tmp / "cache"
        result = measure(tmp, cache, 3 if args.quick else 11)
    m = result["medians"]
    print(json.dumps({k: round(v, 4) for k, v in m.items()}))
    for target, (_, first) in result["targets"].items():
        value = m[f"build {target}"]
        print(f"no-op build, {target} target: {value:.3f} s vs import ksbind {m['import ksbind']:.3f} s: "
              f"ratio {value / m['import ksbind']:.2f}" + (f" (import {first}'s own time subtracted)"
                                                            if first else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
