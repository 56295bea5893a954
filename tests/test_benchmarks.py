"""The benchmark runs end to end (tiny sizes) under scripts/test.sh --all (it builds
a dozen modules, about 5.5 minutes: more than CI's budget allows); in every run, each
benchmark module imports. Speed is never asserted here: targets live in benchmarks/
and docs/performance.md (shared, noisy machines)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import REPO

EVERYTHING = os.environ.get("KSBIND_CORPUS") == "all"

#: benchmarks/ks_patterns.py's rows need ksc (../shared/ksc); without it run.py says so.
KSC_PRESENT = (REPO.parent / "shared" / "ksc" / "bin" / "ksc").is_file()

ROWS = ("import ksbind", "render", "call overhead, ks target", "call overhead, python target",
        "call overhead, python target, list", *(["limited API, python target"] * 2),
        "threads, python target", *(["strings, python target"] * 4),
        "call overhead, torch target", "size independence",
        "elementwise throughput",
        *(f"vs inductor: {row}, {n} thr" for n in (2, 1)
          for row in ("relu3 forward", "relu3 forward+backward", "broadcast muladd_relu", "vmap rownorm")),
        *(("ks patterns: gmm_fast vs eager", "ks patterns: gmm_fast, 10x the points",
           "ks patterns: mlp build/index form vs map form") if KSC_PRESENT else ()),
        "jax call, 10-element vrelu3", "jax elementwise relu3 forward", "jax relu3 forward+backward",
        "cached build", "build cost", "batch build", "memory, python target", "memory, torch target", "debug build")


def test_every_benchmark_module_imports() -> None:
    names = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py"))
    code = f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n" + "".join(
        f"import {n}\n" for n in names)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "run" in names and "batch_build" in names


@pytest.mark.skipif(not EVERYTHING, reason="a dozen module builds, about 5.5 min: scripts/test.sh --all")
def test_benchmark_runner_prints_every_row(tmp_path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nintro\n\n<!-- benchmarks:begin -->\nSTALE-TABLE\n<!-- benchmarks:end -->\n\nafter\n")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick", "--write-doc", str(doc)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| row")]
    assert [line.split(" | ")[0].removeprefix("| ") for line in table] == list(ROWS)
    for line in table:
        ratio = float(line.split(" | ")[5])
        # no RSS growth is 0, and so is an import cost below the noise of starting a process
        assert ratio >= 0 if line.startswith(("| strings", "| import ksbind")) else ratio > 0, line
    assert "GMM binding-overhead rows skipped: --quick" in proc.stdout  # said, not silently left out
    assert KSC_PRESENT or "ks pattern rows skipped: " in proc.stdout
    assert "jax GMM rows skipped: --quick" in proc.stdout
    text = doc.read_text()
    assert "STALE-TABLE" not in text and "intro" in text and "after" in text and "| render |" in text
