"""Build times of ksc's GMM objective + vjp through ksbind (``ks: [gmm.ks]`` +
``ksc:``, which runs ksc with --remove-unused; python target), side by side in
one run: each repeat runs every case once, in the same order, each in a fresh
process; the figures are medians.

    python -m benchmarks.ksc_gmm_build [--repeats N] [--baseline OLD_CHECKOUT]

The cases (the edit-build-call loop: what a build costs after each kind of edit):

- ``g++ alone``: g++ compiling the module's user C++ (ksc's output for it, as
  the build used it) with ksbind's flags: the reference.
- ``cold, warm shared parts``: a module never built before (its own name and
  binding names, so no object of it is cached) in a cache where two other
  modules were built (ksc's ex1.ks, through ksc: the same runtime and
  toolchain): the shared precompiled header exists.
- ``after editing the .ks``: the same module after changing one literal of
  its gmm.ks (ksc runs again; its C++ is recompiled; the bindings' object is reused).
- ``after editing the bindings``: the same module after renaming its binding
  (the generated unit is recompiled; the user's C++ object is reused).
- ``first build ever``: an empty cache (no objects, no precompiled header),
  this ksbind against the baseline: ``--baseline DIR`` is an older checkout
  of ksbind (e.g. ``git archive a939dbc | tar -x -C DIR``: the commit before
  the object cache); without it, this ksbind with ``KSBIND_OBJECT_CACHE=0
  KSBIND_PCH=0`` (no object cache, no precompiled header).

Needs ksc beside the repository (``available()`` says why not).
benchmarks/run.py shows these as rows of its table.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import KSC, KSC_PROGRAMS, ksc_missing
from benchmarks import KSC_RUNTIME as RUNTIME
from benchmarks.timing import NO_COMPILER_CACHE, Times, build_in_new_process, children_cpu, log, parser

GMM = KSC_PROGRAMS / "gmm.ks"
#: The literal edited in gmm.ks (n * d * -0.5 * log(2 pi)): each edit gives it another value.
LITERAL = "0.9189385332046727"

CONFIG = """\
name: {name}
target: python
ks: [{ks}]
ksc: {{path: {ksc}, runtime: {runtime}}}
bindings:
  - {{name: {binding}, function: gmm_knossos_gmm_objective, vjp: {binding}_vjp}}
output: {out}
"""

#: The other modules built first: another small program through ksc (so the same
#: runtime and toolchain as the GMM module's, whose shared parts they warm).
WARMUP_KS = KSC_PROGRAMS / "ex1.ks"
WARMUP = """\
name: {name}
target: python
ks: [{ks}]
ksc: {{path: {ksc}, runtime: {runtime}}}
bindings:
  - {{name: g, function: g, vjp: g_vjp}}
output: {out}
"""


def available() -> str | None:
    """Why these rows cannot run here, or None."""
    return ksc_missing(GMM, WARMUP_KS)


CASES = ("gxx", "cold", "edit_ks", "edit_bindings", "first_new", "first_old")


def build(config: Path, cache: Path, cwd: Path, env: dict[str, str] | None = None,
          ksbind_path: Path | None = None) -> tuple[float, float]:
    """ksbind.build in a fresh process (benchmarks/timing.py): wall and CPU seconds."""
    return build_in_new_process(config, cache, env=env, cwd=cwd, ksbind_path=ksbind_path)


def gxx_alone(cache: Path, name: str, flags: Sequence[str] | None = None,
              cxx: Sequence[str] = ("g++",)) -> tuple[float, float]:
    """The compiler (g++) on the module's user C++ (ksc's output, from the cache) with
    ``flags`` (ksbind's BASE_FLAGS): wall and CPU seconds."""
    from ksbind.backend.toolchain import BASE_FLAGS

    (cpp,) = [p for d in cache.glob(f"ksc-{name}-*") for p in d.glob(f"{name}.cpp")]
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.perf_counter(), children_cpu()
        subprocess.run([*cxx, *(BASE_FLAGS if flags is None else flags), f"-I{RUNTIME}", f"-I{cpp.parent}", "-c",
                        str(cpp), "-o", str(Path(tmp) / "user.o")], check=True,
                       env={**os.environ, **NO_COMPILER_CACHE})
        return time.perf_counter() - start, children_cpu() - cpu


def measure(work: Path, repeats: int, baseline: Path | None = None,
            log: Callable[[str], None] = lambda s: None) -> Times:
    work.mkdir(parents=True, exist_ok=True)
    times = Times(CASES, baseline=f"ksbind at {baseline}" if baseline else
                  "this ksbind with KSBIND_OBJECT_CACHE=0 KSBIND_PCH=0")
    warm = work / "warm-cache"
    log("gmm: warming the shared parts (two other modules)")
    for name in ("warm_ex1", "warm_ex1b"):  # the first starts the precompiled header's build; build() waits for it
        (work / f"{name}.yaml").write_text(WARMUP.format(name=name, ks=WARMUP_KS, ksc=KSC, runtime=RUNTIME,
                                                                     out=work / "out" / name))
        build(work / f"{name}.yaml", warm, work)
    old_env = {} if baseline else {"KSBIND_OBJECT_CACHE": "0", "KSBIND_PCH": "0"}
    for i in range(repeats):
        log(f"gmm: repeat {i + 1} of {repeats}")
        ks = work / f"gmm_{i}.ks"
        shutil.copy(GMM, ks)
        name = f"gmm_cold{i}"

        def config(binding: str, module: str = name, ks: Path = ks) -> Path:
            path = work / f"{module}.yaml"
            path.write_text(CONFIG.format(name=module, ks=ks, ksc=KSC, runtime=RUNTIME, binding=binding,
                                          out=work / "out" / module))
            return path

        times.add("cold", build(config(f"objective{i}"), warm, work))
        times.add("gxx", gxx_alone(warm, name))
        text = ks.read_text()
        assert LITERAL in text
        ks.write_text(text.replace(LITERAL, f"0.91893{i + 1}"))
        times.add("edit_ks", build(config(f"objective{i}"), warm, work))
        times.add("edit_bindings", build(config(f"objective{i}b"), warm, work))
        first = config("objective", f"gmm_first{i}")
        for label, env, path in (("new", {}, None), ("old", old_env, baseline)):
            cache = work / f"empty-{label}-{i}"
            times.add(f"first_{label}", build(first, cache, work, env, path))
            shutil.rmtree(cache, ignore_errors=True)
    return times


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="an older ksbind checkout for the first-build-ever comparison")
    args = ap.parse_args()
    why = available()
    if why:
        print(f"skipped: {why}")
        return
    with tempfile.TemporaryDirectory(prefix="ksbind-gmm-") as tmp:
        t = measure(Path(tmp), args.repeats, args.baseline, log)
    print(f"gmm.ks objective+vjp, python target; medians of {args.repeats}, {os.cpu_count()} cores; "
          f"baseline: {t.baseline}")
    print(report(t))


def report(t: Times) -> str:
    """Each case's wall and CPU medians, and the ratios of benchmarks/run.py's rows."""
    lines = [f"{'case':44} {'wall s':>8} {'cpu s':>8}  {'wall ratio':>10} {'cpu ratio':>9}"]
    ref = {"cold": ("gxx", "g++ alone"), "edit_ks": ("cold", "cold"), "edit_bindings": ("cold", "cold"),
           "first_new": ("first_old", "baseline")}
    names = {"gxx": "g++ alone on the module's user C++", "cold": "cold build, warm shared parts",
             "edit_ks": "rebuild after editing the .ks", "edit_bindings": "rebuild after editing the bindings",
             "first_new": "first build ever (empty cache)", "first_old": "first build ever, baseline"}
    for c in CASES:
        row = f"{names[c]:44} {t.median(c):8.2f} {t.median(c, True):8.2f}"
        if c in ref:
            r, label = ref[c]
            row += (f"  {t.median(c) / t.median(r):10.2f} {t.median(c, True) / t.median(r, True):9.2f}"
                    f"  (x {label})")
        lines.append(row)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
