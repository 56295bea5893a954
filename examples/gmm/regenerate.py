"""Refresh examples/gmm's committed ksc output from gmm.ks (needs ksc).

Runs ksc through ksbind (config gmm_ksc.yaml, in a private cache) and copies
what ksc wrote, gmm_ksc.kso, gmm_ksc.cpp and ksbind-edefs.h, here as gmm.kso,
gmm.cpp and ksbind-edefs.h: the files gmm.yaml builds on a machine without ksc.

    python examples/gmm/regenerate.py            # rewrite the files that changed
    python examples/gmm/regenerate.py --check    # exit 1 if any is out of date

ksc is found as ksbind finds it ($KSC, else ksc on PATH), else in
../shared/ksc/bin/ksc beside the repository (this project's layout).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHARED_KSC = REPO.parent / "shared" / "ksc" / "bin" / "ksc"

#: ksc's output (named after the module of gmm_ksc.yaml) -> the committed file.
FILES = {"gmm_ksc.kso": "gmm.kso", "gmm_ksc.cpp": "gmm.cpp", "ksbind-edefs.h": "ksbind-edefs.h"}


def ksc_env() -> dict[str, str]:
    env = dict(os.environ)
    if "KSC" not in env and shutil.which("ksc") is None and SHARED_KSC.is_file():
        env["KSC"] = str(SHARED_KSC)
    return env


def run_ksc(work: Path) -> Path:
    """Run ksc (via `ksbind generate`) into a fresh cache; the folder of its output."""
    cache = work / "cache"
    subprocess.run([sys.executable, "-m", "ksbind", "generate", str(HERE / "gmm_ksc.yaml"), "-o", str(work / "out")],
                   check=True, cwd=REPO, env={**ksc_env(), "KSBIND_CACHE_DIR": str(cache)})
    entries = sorted(cache.glob("ksc-gmm_ksc-*"))
    if len(entries) != 1:
        raise SystemExit(f"expected one ksc output folder in {cache}, found {entries}")
    return entries[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is out of date")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ksbind-gmm-") as tmp:
        produced = run_ksc(Path(tmp))
        stale = []
        for source, target in FILES.items():
            new = (produced / source).read_bytes()
            path = HERE / target
            if path.is_file() and path.read_bytes() == new:
                continue
            stale.append(target)
            if not args.check:
                path.write_bytes(new)
    verb = "out of date" if args.check else "rewritten"
    print(f"{verb}: {', '.join(stale)}" if stale else "ksc's output is current")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
