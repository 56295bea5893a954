"""Build times of ksc's GMM objective + vjp through ksbind (``ks: [gmm.ks]`` +
``ksc:``, which runs ksc with --remove-unused; python target), side by side in
one run: each repeat runs every case once, in the same order, each in a fresh
process; the figures are medians.

    python benchmarks/ksc_gmm_build.py [--repeats N] [--baseline OLD_CHECKOUT]

The cases (what issue 12 asks of the edit-build-call loop):

- ``g++ alone``: g++ compiling the module's user C++ (ksc's output for it, as
  the build used it) with ksbind's flags: the reference.
- ``cold, warm shared parts``: a module never built before (its own name and
  binding names, so no object of it is cached) in a cache where two other
  modules (relu3) were built: the shared precompiled header exists.
- ``after editing the .ks``: the same module after changing one literal of
  its gmm.ks (ksc runs again; its C++ is recompiled; the bindings' object is reused).
- ``after editing the bindings``: the same module after renaming its binding
  (the generated unit is recompiled; the user's C++ object is reused).
- ``first build ever``: an empty cache (no objects, no precompiled header),
  this ksbind against the baseline: ``--baseline DIR`` is an older checkout
  of ksbind (e.g. ``git archive a939dbc | tar -x -C DIR``: the commit before
  the object cache); without it, this ksbind with ``KSBIND_OBJECT_CACHE=0
  KSBIND_PCH=0`` (no object cache, no precompiled header).

Needs ../shared/ksc (``available()`` says why not). benchmarks/run.py shows
these as rows of its table.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
KSC_DIR = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared")) / "ksc"
KSC, RUNTIME, GMM = KSC_DIR / "bin" / "ksc", KSC_DIR / "runtime", KSC_DIR / "programs" / "gmm.ks"
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

WARMUP = """\
name: {name}
target: python
ks: [{repo}/examples/relu3/relu3.ks]
cpp: [{repo}/examples/relu3/relu3.cpp]
bindings:
  - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
output: {out}
"""


def available() -> str | None:
    """Why these rows cannot run here, or None."""
    for p in (KSC, RUNTIME / "knossos.h", GMM):
        if not p.exists():
            return f"{p} is missing (../shared/ksc absent)"
    return None


@dataclass
class Times:
    gxx: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)
    edit_ks: list[float] = field(default_factory=list)
    edit_bindings: list[float] = field(default_factory=list)
    first_new: list[float] = field(default_factory=list)
    first_old: list[float] = field(default_factory=list)
    baseline: str = ""

    def median(self, name: str) -> float:
        return statistics.median(getattr(self, name))


def build(config: Path, cache: Path, cwd: Path, env: dict[str, str] | None = None,
          ksbind_path: Path | None = None) -> float:
    """ksbind.build in a fresh process: seconds from before `import ksbind` to the imported module."""
    code = ("import time; t0 = time.perf_counter(); import ksbind; "
            f"ksbind.build({str(config)!r}, quiet=True); print(time.perf_counter() - t0)")
    full = {**os.environ, "KSBIND_CACHE_DIR": str(cache), **(env or {})}
    full["PYTHONPATH"] = str(ksbind_path or REPO)
    proc = subprocess.run([sys.executable, "-c", code], env=full, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"build of {config} failed:\n{proc.stderr[-3000:]}")
    wait_for_background(cache)  # the next case must not share the CPUs with it
    return float(proc.stdout.strip().splitlines()[-1])


def wait_for_background(cache: Path, timeout: float = 600) -> None:
    """Wait until no process builds a precompiled header in this cache (a first
    build starts one in the background: ksbind/pch.py)."""
    sys.path.insert(0, str(REPO))
    from ksbind import buildcache

    locks = cache / "pch" / ".locks"
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - idle_since < 1.0:
        busy = False
        for lock in locks.glob("*.lock") if locks.is_dir() else []:
            with buildcache.try_lock(lock) as held:
                busy = busy or not held
        if busy:
            idle_since = time.monotonic()
        time.sleep(0.05)


def gxx_alone(cache: Path, name: str) -> float:
    """g++ on the module's user C++ (ksc's output, from the cache) with ksbind's flags."""
    sys.path.insert(0, str(REPO))
    from ksbind.toolchain import BASE_FLAGS

    (cpp,) = [p for d in cache.glob(f"ksc-{name}-*") for p in d.glob(f"{name}.cpp")]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run(["g++", *BASE_FLAGS, f"-I{RUNTIME}", f"-I{cpp.parent}", "-c", str(cpp), "-o",
                        str(Path(tmp) / "user.o")], check=True)
        return time.perf_counter() - start


def measure(work: Path, repeats: int, baseline: Path | None = None,
            log: Callable[[str], None] = lambda s: None) -> Times:
    work.mkdir(parents=True, exist_ok=True)
    times = Times(baseline=f"ksbind at {baseline}" if baseline else
                  "this ksbind with KSBIND_OBJECT_CACHE=0 KSBIND_PCH=0")
    warm = work / "warm-cache"
    log("gmm: warming the shared parts (two other modules)")
    for name in ("warm_relu3", "warm_relu3b"):  # the second one builds the precompiled header
        (work / f"{name}.yaml").write_text(WARMUP.format(name=name, repo=REPO, out=work / "out" / name))
        build(work / f"{name}.yaml", warm, work)
    old_env = {} if baseline else {"KSBIND_OBJECT_CACHE": "0", "KSBIND_PCH": "0"}
    for i in range(repeats):
        log(f"gmm: repeat {i + 1} of {repeats}")
        ks = work / f"gmm_{i}.ks"
        shutil.copy(GMM, ks)
        name = f"gmm_cold{i}"

        def config(binding: str, module: str = name) -> Path:
            path = work / f"{module}.yaml"
            path.write_text(CONFIG.format(name=module, ks=ks, ksc=KSC, runtime=RUNTIME, binding=binding,
                                          out=work / "out" / module))
            return path

        times.cold.append(build(config(f"objective{i}"), warm, work))
        times.gxx.append(gxx_alone(warm, name))
        text = ks.read_text()
        assert LITERAL in text
        ks.write_text(text.replace(LITERAL, f"0.91893{i + 1}"))
        times.edit_ks.append(build(config(f"objective{i}"), warm, work))
        times.edit_bindings.append(build(config(f"objective{i}b"), warm, work))
        first = config("objective", f"gmm_first{i}")
        for label, env, path in (("new", {}, None), ("old", old_env, baseline)):
            cache = work / f"empty-{label}-{i}"
            t = build(first, cache, work, env, path)
            (times.first_new if label == "new" else times.first_old).append(t)
            shutil.rmtree(cache, ignore_errors=True)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="an older ksbind checkout for the first-build-ever comparison")
    args = ap.parse_args()
    why = available()
    if why:
        print(f"skipped: {why}")
        return
    with tempfile.TemporaryDirectory(prefix="ksbind-gmm-") as tmp:
        t = measure(Path(tmp), args.repeats, args.baseline, lambda s: print(f"... {s}", file=sys.stderr))
    cold = t.median("cold")
    print(textwrap.dedent(f"""\
        gmm.ks objective+vjp, python target; medians of {args.repeats}, {os.cpu_count()} cores
        g++ alone on the module's user C++:          {t.median('gxx'):.2f} s
        cold build, warm shared parts:               {cold:.2f} s  ({cold / t.median('gxx'):.2f}x g++ alone)
        rebuild after editing the .ks:               {t.median('edit_ks'):.2f} s  ({t.median('edit_ks') / cold:.2f}x cold)
        rebuild after editing the bindings:          {t.median('edit_bindings'):.2f} s  ({t.median('edit_bindings') / cold:.2f}x cold)
        first build ever (empty cache):              {t.median('first_new'):.2f} s
        the same, {t.baseline}: {t.median('first_old'):.2f} s  ({t.median('first_new') / t.median('first_old'):.2f}x)"""))


if __name__ == "__main__":
    main()
