"""Cold build of ksc's GMM objective + vjp through ksbind (``ks: [gmm.ks]`` + ``ksc:``,
python target) against g++ compiling ksc's ``--all-defs`` output of gmm.ks alone,
side by side in one run (alternating, medians).

    python benchmarks/ksc_gmm_build.py [--repeats N]

Needs ../shared/ksc. (gmm.ks edefs ``dot``: ksc's prelude.h defines it.)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KSC_DIR = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared")) / "ksc"
KSC, RUNTIME, GMM = KSC_DIR / "bin" / "ksc", KSC_DIR / "runtime", KSC_DIR / "programs" / "gmm.ks"
FLAGS = ["-O2", "-std=c++17", "-fPIC", "-DKS_ALLOCATOR="]

CONFIG = textwrap.dedent(f"""\
    name: gmm_bench
    target: python
    ks: [{GMM}]
    ksc: {{path: {KSC}, runtime: {RUNTIME}}}
    bindings:
      - {{name: objective, function: gmm_knossos_gmm_objective, vjp: objective_vjp}}
    """)


def ksbind_cold(work: Path, i: int) -> float:
    """A fresh process and an empty cache: ksc, generate, compile, import."""
    env = dict(os.environ, KSBIND_CACHE_DIR=str(work / f"cache{i}"))
    code = f"import ksbind; ksbind.build({str(work / 'gmm.yaml')!r}, quiet=True)"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=work)
    return time.perf_counter() - start


def gxx_alone(work: Path) -> float:
    """ksc --all-defs on gmm.ks, compiled by g++ (one object, no Python at all)."""
    subprocess.run([str(KSC), "--generate-cpp", "--ks-source-file", str(RUNTIME / "prelude.ks"),
                    "--ks-source-file", str(GMM), "--ks-output-file", str(work / "all.kso"),
                    "--cpp-include", "prelude.h", "--cpp-output-file", str(work / "all.cpp"), "--all-defs"],
                   check=True, capture_output=True)
    start = time.perf_counter()
    subprocess.run(["g++", *FLAGS, f"-I{RUNTIME}", "-c", str(work / "all.cpp"), "-o", str(work / "all.o")],
                   check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "gmm.yaml").write_text(CONFIG)
        ours, alone = [], []
        for i in range(args.repeats):
            ours.append(ksbind_cold(work, i))
            alone.append(gxx_alone(work))
        a, b = statistics.median(ours), statistics.median(alone)
        print(f"gmm.ks objective+vjp, python target, cold (ksc + generate + compile + import): {a:.2f} s")
        print(f"g++ alone on ksc --all-defs output of gmm.ks ({' '.join(FLAGS)}):               {b:.2f} s")
        print(f"ratio: {a / b:.2f}  (medians of {args.repeats}, alternating; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
