"""The test lanes (tests/lanes.py): the rule that puts a test that compiles in the
slow lane, and the guard under which the unit lane runs, so that a test the rule
misses fails there instead of compiling."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import lanes

#: tests/lane_samples.py's functions and whether the rule must call each one compiling
#: (named, not referenced: a test that referred to them would be in the slow lane itself).
SAMPLES = {
    "builds_through_the_face": True,
    "builds_through_a_helper": True,
    "builds_a_session_module": True,
    "builds_in_a_subprocess": True,
    "builds_through_the_cli": True,
    "runs_the_compiler": True,
    "runs_ksc": True,
    "runs_mypy": True,
    "imports_a_builder_itself": True,
    "renders_only": False,
    "runs_the_cli_without_building": False,
}


@pytest.mark.parametrize("name, compiles", SAMPLES.items())
def test_the_rule_sees_each_way_of_compiling(name: str, compiles: bool) -> None:
    samples = importlib.import_module("tests.lane_samples")
    reason = lanes.lane_of([getattr(samples, name)])
    assert (reason is not None) == compiles, reason


def test_every_selected_test_is_in_exactly_one_lane(request: pytest.FixtureRequest) -> None:
    for item in request.session.items:
        marks = {m.name for m in item.iter_markers()} & set(lanes.LANES)
        assert len(marks) == 1, (item.nodeid, marks)


def test_under_the_guard_a_build_fails_naming_the_compiler_and_ksc_cannot_run(tmp_path: Path) -> None:
    env = lanes.guard_env(tmp_path / "guard")
    log = Path(env["KSBIND_TEST_LANE_LOG"])
    (tmp_path / "m.ks").write_text("(def twice Float (x : Float) (mul x 2.0))\n")
    (tmp_path / "m.yaml").write_text("name: lane_m\ntarget: python\nks: [m.ks]\nbindings: [{name: twice}]\n")
    env.update(KSBIND_CACHE_DIR=str(tmp_path / "cache"), KSBIND_PCH="0")
    proc = subprocess.run([sys.executable, "-c", "import sys, ksbind; ksbind.build(sys.argv[1])",
                           str(tmp_path / "m.yaml")], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert lanes.GUARD_MESSAGE.format(program="g++") in proc.stderr, proc.stderr[-3000:]
    assert any(line.startswith("g++ ") and " -c " in line for line in log.read_text().splitlines()), log.read_text()
    assert not list((tmp_path / "cache").rglob(f"lane_m*{'.so'}"))  # nothing built
    # ksc, as found through PATH, $KSC or the shared folder, fails the same way.
    for ksc in ("ksc", env["KSC"], str(Path(env["KSBIND_SHARED"]) / "ksc" / "bin" / "ksc")):
        run = subprocess.run([ksc, "--version"], env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 97 and "ksbind's unit test lane: ksc" in run.stderr, (ksc, run)
    assert os.environ.get("KSBIND_TEST_LANE_LOG") != str(log)  # this process's own lane is not changed
