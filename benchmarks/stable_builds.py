"""Build times of the torch target (stable-ABI op libraries), each against the compiler
alone on the same user C++, in one run: each repeat builds every case once, each build
in a fresh process; the figures are medians.

    python -m benchmarks.stable_builds [--repeats N]

The rows:

- ``gmm, second module``: ksc's GMM objective + vjp (``gmm.ks`` through ksc) as a
  module never built before, in a cache where another torch module was built first
  (ksc's ``ex1.ks``: the shared parts are warm), against ``g++ alone``: the compiler
  (``CXX``) on the module's user C++ (ksc's output) with the flags the target gives it.
- ``gmm, first build ever``: the same module in an empty cache, in a new process
  (build and import), against the same ``g++ alone``.
- ``32 bindings, second module``: 32 one-line ks functions, each bound with its vjp,
  against g++ alone on that module's user C++.

Needs ksc beside the repository, and torch. benchmarks/run.py does not run it (about
1.5 minutes a repeat on 2 cores); docs/performance.md keeps its figures.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from benchmarks.ksc_gmm_build import GMM, KSC, RUNTIME, WARMUP_KS, available, build
from benchmarks.scratch import scratch_dir
from benchmarks.target_builds import GMM_CONFIG, WARMUP, compiler_alone, write
from benchmarks.timing import Times, log, parser

#: The targets timed (the rows are per target).
TARGETS = ("torch",)
#: How many one-line functions the many-bindings module binds.
MANY = 32


def many_ks(tag: str) -> str:
    """MANY one-line ks functions (their names carry ``tag``: a module of its own)."""
    return "".join(f"(def {tag}{i} (Vec Float) (x : Vec Float) (map (lam (y : Float) (mul y {i + 1}.0)) x))\n"
                   for i in range(MANY))


def many_config(name: str, target: str, ks: Path, out: Path, tag: str) -> str:
    bindings = "".join(f"  - {{name: {tag}{i}, vjp: {tag}{i}_vjp}}\n" for i in range(MANY))
    return (f"name: {name}\ntarget: {target}\nks: [{ks}]\nksc: {{path: {KSC}, runtime: {RUNTIME}}}\n"
            f"bindings:\n{bindings}output: {out}\n")


def cases() -> list[str]:
    return [f"{row}_{t}" for t in TARGETS for row in ("gmm", "gmm_gxx", "first", "first_gxx", "many", "many_gxx")]


def measure(work: Path, repeats: int) -> Times:
    work.mkdir(parents=True, exist_ok=True)
    times = Times(cases())
    warm = work / "warm-cache"
    for target in TARGETS:
        log(f"warming the shared parts of the {target} target (ksc's ex1.ks)")
        name = f"warm_{target}"
        build(write(work / f"{name}.yaml", WARMUP.format(name=name, target=target, ks=WARMUP_KS, ksc=KSC,
                                                         runtime=RUNTIME, out=work / "out" / name)), warm, work)
    for r in range(repeats):
        log(f"repeat {r + 1} of {repeats}")
        for target in TARGETS:
            name = f"gmm_{target}_{r}"
            times.add(f"gmm_{target}", build(write(work / f"{name}.yaml", GMM_CONFIG.format(
                name=name, binding=f"objective_{r}", target=target, ks=GMM, ksc=KSC, runtime=RUNTIME, out=work / "out" / name)), warm, work))
            times.add(f"gmm_gxx_{target}", compiler_alone(warm, name, target))
            cache = work / f"empty-{target}-{r}"
            first = f"first_{target}_{r}"
            times.add(f"first_{target}", build(write(work / f"{first}.yaml", GMM_CONFIG.format(
                name=first, binding=f"objective_first_{r}", target=target, ks=GMM, ksc=KSC, runtime=RUNTIME, out=work / "out" / first)), cache, work))
            times.add(f"first_gxx_{target}", compiler_alone(cache, first, target))
            shutil.rmtree(cache, ignore_errors=True)
            tag = f"m_{target}{r}_"
            many = f"many_{target}_{r}"
            ks = write(work / f"{many}.ks", many_ks(tag))
            times.add(f"many_{target}", build(write(work / f"{many}.yaml", many_config(
                many, target, ks, work / "out" / many, tag)), warm, work))
            times.add(f"many_gxx_{target}", compiler_alone(warm, many, target))
    return times


def report(t: Times) -> str:
    lines = [f"{'case':58} {'median s':>9} {'g++ alone':>10}  ratio"]
    labels = {"gmm": "gmm objective + vjp, second module", "first": "gmm objective + vjp, first build ever",
              "many": f"{MANY} one-line bindings with vjps, second module"}
    for row, label in labels.items():
        for target in TARGETS:
            built, alone = t.median(f"{row}_{target}"), t.median(f"{row}_gxx_{target}")
            lines.append(f"{label + ', ' + target:58} {built:9.2f} {alone:10.2f}  {built / alone:.2f}")
    return "\n".join(lines)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    why = available()
    if why:
        print(f"skipped: {why}")
        return
    with scratch_dir(prefix="ksbind-stable-builds-") as tmp:
        t = measure(Path(tmp), args.repeats)
    print(f"medians of {args.repeats}, {os.cpu_count()} cores, CXX={os.environ.get('CXX', 'g++')}")
    print(report(t))


if __name__ == "__main__":
    main()
