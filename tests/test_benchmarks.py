"""The benchmarks package (benchmarks/): every module imports (in every run), and
the row registry says what a run prints. The end-to-end run (tiny sizes) is under
scripts/test.sh --all (it builds a dozen modules, about 5.5 minutes: more than CI's
budget allows). Speed is never asserted here: targets live in benchmarks/ and
docs/performance.md (shared, noisy machines)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import REPO

EVERYTHING = os.environ.get("KSBIND_CORPUS") == "all"


def test_every_benchmark_module_imports() -> None:
    names = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem != "__init__")
    assert "run" in names and "timing" in names and "batch_build" in names
    code = "".join(f"import benchmarks.{n}\n" for n in names)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_registry_lists_the_rows_a_run_prints(capsys) -> None:
    """`--list` prints run.row_names: --quick's rows are the full run's, fewer (never others),
    and --only selects by group title or row name."""
    from benchmarks.run import main, row_names

    full, quick = row_names(quick=False), row_names(quick=True)
    assert "render" in quick and "import ksbind" in quick
    assert len(quick) < len(full) and [n for n in full if n in quick] == quick
    assert row_names(quick=True, only=["render", "IMPORT ksbind"]) == ["import ksbind", "render"]
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--list", "--quick"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.splitlines() == quick, proc.stderr[-3000:]
    with pytest.raises(SystemExit) as exit_:
        main(["--only", "no such row"])
    assert exit_.value.code == 2 and "no group or row matches" in capsys.readouterr().err


def test_a_run_checks_each_group_against_its_declared_rows(tmp_path, capsys) -> None:
    """A group that cannot run is said, not left out; one that yields rows other than
    it declares stops the run (so the names the test reads cannot drift)."""
    from benchmarks.run import QUICK, Group, Run, measure
    from benchmarks.timing import Row

    def rows(*names: str) -> list[Row]:
        return [Row(n, "ours", "theirs", 2.0, 1.0, "s", "<= 2.0") for n in names]

    groups = [Group("two", lambda run: rows("a", "b"), ("a", "b")),
              Group("later", lambda run: rows("never"), ("never",), skipped=lambda quick: "--quick (why)")]
    assert [r.name for r in measure(Run(QUICK, tmp_path), groups)] == ["a", "b"]
    assert "later rows skipped: --quick (why)" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match=r"yielded rows \['b'\], its declaration says \['a'\]"):
        measure(Run(QUICK, tmp_path), [Group("drifted", lambda run: rows("b"), ("a",))])


def test_a_row_is_judged_on_its_unrounded_ratio() -> None:
    """1.054 against "<= 1.05" shows as 1.054 and is not met (it was, rounded to 1.05)."""
    from benchmarks.timing import Row, table

    row = Row("r", "ours", "theirs", 1.054, 1.0, "s", "<= 1.05")
    assert not row.met and "| 1.054 | <= 1.05 | NO |" in table([row])
    assert Row("r", "ours", "theirs", 1.05, 1.0, "s", "<= 1.05").met
    assert Row("r", "ours", "theirs", 0.896, 1.0, "s", ">= 0.9").met is False
    assert Row("r", "ours", "theirs", 5.0, 5.0, "bytes", "= 1.0").met


@pytest.mark.skipif(not EVERYTHING, reason="a dozen module builds, about 5.5 min: scripts/test.sh --all")
def test_benchmark_runner_prints_every_row(tmp_path) -> None:
    from benchmarks import ks_patterns
    from benchmarks.run import row_names

    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nintro\n\n<!-- benchmarks:begin -->\nSTALE-TABLE\n<!-- benchmarks:end -->\n\nafter\n")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--quick", "--write-doc", str(doc)],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| row")]
    assert [line.split(" | ")[0].removeprefix("| ") for line in table] == row_names(quick=True)
    for line in table:
        ratio = float(line.split(" | ")[5])
        # no RSS growth is 0, and so is an import cost below the noise of starting a process
        assert ratio >= 0 if line.startswith(("| strings", "| import ksbind")) else ratio > 0, line
    assert "GMM binding-overhead rows skipped: --quick" in proc.stdout  # said, not silently left out
    assert ks_patterns.available() is None or "ks pattern rows skipped: " in proc.stdout
    assert "jax GMM rows skipped: --quick" in proc.stdout
    text = doc.read_text()
    assert "STALE-TABLE" not in text and "intro" in text and "after" in text and "| render |" in text
