"""Batch builds: ``ksbind build`` of several configs builds the modules
concurrently with one process-wide limit on compiler processes (KSBIND_JOBS),
says ``[k/N]`` as each one finishes, and reports a failing module with its
config's file and line while the others are still built (exit status 3;
``build_configs`` raises BatchBuildError listing each failure)."""
from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from benchmarks import batch_build  # the benchmark's module generator: module k computes x * k + 1
from ksbind.batch import build_many
from ksbind.errors import BatchBuildError, BuildError, Location
from ksbind.pipeline import build_configs
from ksbind.spec import ModuleSpec

REPO = Path(__file__).resolve().parents[1]

#: A compiler launcher recording when each compiler process starts and ends.
RECORDER = """#!/bin/sh
echo "start $(date +%s.%N) $$ $*" >> "{log}"
"$@"
status=$?
echo "end $(date +%s.%N) $$ $*" >> "{log}"
exit $status
"""

BAD_CPP = '#include "knossos.h"\nnamespace ks {\nks::Float f_9$af(ks::allocator *, ks::Float x) { return x +* 1; }\n}\n'


def most_at_once(log: Path) -> tuple[int, int]:
    """The most compiler processes the log shows running at once, and how many ran.
    The bad module's other compiles are killed when its C++ fails (no end line):
    they ended when that compile ended, before ksbind saw the failure."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    failed_end: float | None = None
    for line in log.read_text().splitlines():
        kind, t, pid, *args = line.split()
        (starts if kind == "start" else ends)[pid] = float(t)
        if kind == "end" and any(a.endswith("m9.cpp") for a in args):
            failed_end = float(t)
    events = []
    for pid, began in starts.items():
        end = ends.get(pid, failed_end)
        assert end is not None, f"compiler {pid} never ended"
        events += [(began, 1), (end, 0)]  # at the same time an end sorts before a start
    running = peak = 0
    for _, start in sorted(events):
        running += 1 if start else -1
        peak = max(peak, running)
    return peak, len(starts)


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str], Path]:
    """Three good modules and a bad one (a C++ error), built by one ``ksbind build``
    with KSBIND_JOBS=2 through the recording launcher."""
    tmp = tmp_path_factory.mktemp("batch")
    src = tmp / "src"
    configs = batch_build.write_modules(src, 3)
    (src / "m9.cpp").write_text(BAD_CPP)
    (src / "m9.ks").write_text(batch_build.KS.format(k=9))
    (src / "bad.yaml").write_text("# a module whose C++ does not compile\n" + batch_build.CONFIG.format(k=9)
                                  .replace("m9.cpp", "m9.cpp"))
    log = tmp / "compilers.log"
    recorder = tmp / "recorder.sh"
    recorder.write_text(RECORDER.format(log=log))
    recorder.chmod(0o755)
    cache = tmp / "cache"
    env = {**os.environ, "KSBIND_CACHE_DIR": str(cache), "KSBIND_PCH": "0", "KSBIND_JOBS": "2",
           "KSBIND_CCACHE": str(recorder), "KSBIND_VERBOSE": "1"}
    names = [configs[0].name, "bad.yaml", configs[1].name, configs[2].name]
    proc = subprocess.run([sys.executable, "-m", "ksbind", "build", *names], cwd=src, env=env,
                          capture_output=True, text=True, timeout=600)
    return src, cache, proc, log


def test_a_failing_module_is_reported_with_its_config_and_the_others_are_built(batch) -> None:
    src, cache, proc, _ = batch
    assert proc.returncode == 3, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ksbind: error: ")]
    assert len(errors) == 1, proc.stderr
    # The config's file and the module's line in it (line 2: a comment comes first), then the compiler's error.
    assert errors[0].startswith("ksbind: error: bad.yaml:2:1: module batch_9: ")
    assert "m9.cpp" in errors[0] and "error" in errors[0].split("module batch_9: ", 1)[1]
    assert "ksbind: 1 of 4 modules failed to build" in proc.stderr
    built = {line.split(":")[0]: line.split(" built ", 1)[1] for line in proc.stdout.splitlines()}
    assert sorted(built) == ["batch_1", "batch_2", "batch_3"]
    for k in (1, 2, 3):  # each one importable from where it says, computing its own function
        spec = importlib.util.spec_from_file_location(f"batch_{k}", built[f"batch_{k}"])
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert getattr(mod, f"f_{k}")(2.0) == pytest.approx(2.0 * k + 1)


def test_one_progress_line_per_module_finished(batch) -> None:
    _, _, proc, _ = batch
    lines = [line for line in proc.stderr.splitlines() if line.startswith("ksbind: [") and "/4] " in line]
    assert [line.split("]")[0] for line in lines] == [f"ksbind: [{k}/4" for k in (1, 2, 3, 4)], proc.stderr
    assert sum(" done in " in line for line in lines) == 3
    assert [line for line in lines if "batch_9 failed (bad.yaml:2:1)" in line]


def test_no_more_compilers_run_at_once_than_ksbind_jobs(batch) -> None:
    """Four modules of four units each, each module's own pool two threads wide:
    without the process-wide slots up to eight compilers would run at once."""
    _, _, _, log = batch
    peak, started = most_at_once(log)
    assert started >= 13  # every unit of the three good modules and at least the bad one's C++
    assert peak == 2, f"{peak} compilers ran at once with KSBIND_JOBS=2"


def test_build_configs_raises_every_failure_after_building_the_others(batch, caplog) -> None:
    src, cache, _, _ = batch
    configs = [src / "m1.yaml", src / "bad.yaml", src / "m2.yaml"]
    with pytest.raises(BatchBuildError) as info:
        build_configs(configs, cache_dir=cache, quiet=True)
    e = info.value
    assert isinstance(e, BuildError) and e.total == 3
    assert [(f.module, f.config) for f in e.failures] == [("batch_9", f"{src / 'bad.yaml'}:2:1")]
    assert "m9.cpp" in str(e.failures[0].error)
    assert [name for name, _ in e.built] == ["batch_1", "batch_2"]
    assert e.built[1][1].f_2(1.0) == pytest.approx(3.0)
    assert f"1 of 3 modules failed to build (2 built): {src / 'bad.yaml'}:2:1: module batch_9: " in str(e)
    # quiet=True reaches the build threads: no progress line, not even [k/N]
    assert not [r for r in caplog.records if r.name.startswith("ksbind") and r.levelno < logging.WARNING]


def test_build_configs_all_good_returns_names_and_modules_in_order(batch, caplog) -> None:
    src, cache, _, _ = batch
    caplog.set_level(logging.INFO, logger="ksbind")
    out = build_configs([src / "m3.yaml", src / "m1.yaml"], cache_dir=cache)
    assert [name for name, _ in out] == ["batch_3", "batch_1"]
    assert out[0][1].f_3(1.0) == pytest.approx(4.0) and out[1][1].f_1(1.0) == pytest.approx(2.0)
    assert sorted(r.getMessage().split("]")[0] for r in caplog.records if r.getMessage().startswith("[")) \
        == ["[1/2", "[2/2"]


# ------------------------------------------------------------ scheduling (no compiler: build_one is the test's)

def _specs(*names: str) -> list[ModuleSpec]:
    return [ModuleSpec(name=n, config_path=Path(f"/cfg/{i}_{n}.yaml"), location=Location(f"/cfg/{i}_{n}.yaml", 1, 1))
            for i, n in enumerate(names)]


def test_modules_of_one_name_are_built_one_after_another_in_order(monkeypatch) -> None:
    monkeypatch.setenv("KSBIND_JOBS", "2")
    times: dict[str, tuple[float, float]] = {}

    def build_one(spec: ModuleSpec) -> ModuleType:
        start = time.monotonic()
        time.sleep(0.2)
        times[spec.config_path.name] = (start, time.monotonic())
        return ModuleType(spec.config_path.name)

    out = build_many(_specs("a", "b", "a"), build_one)
    assert [m.__name__ for m in out] == ["0_a.yaml", "1_b.yaml", "2_a.yaml"]
    assert times["0_a.yaml"][1] <= times["2_a.yaml"][0]  # the same name: in order, never at once
    assert times["1_b.yaml"][0] < times["0_a.yaml"][1]   # another name: alongside


def test_a_bug_in_one_module_is_raised_as_itself_once_the_others_are_done(monkeypatch) -> None:
    monkeypatch.setenv("KSBIND_JOBS", "2")
    done: list[str] = []

    def build_one(spec: ModuleSpec) -> ModuleType:
        if spec.name == "bug":
            raise ValueError("a bug")
        time.sleep(0.1)
        done.append(spec.name)
        return ModuleType(spec.name)

    with pytest.raises(ValueError, match="a bug"):
        build_many(_specs("x", "bug", "y", "z"), build_one)
    assert sorted(done) == ["x", "y", "z"]


def test_a_batch_builds_its_shared_precompiled_header_first_and_every_module_uses_it(
        tmp_path: Path) -> None:
    """A single build starts the shared precompiled header in the background after it
    (tests/test_pch_reuse.py); a batch builds it first and waits for it, so that every
    module's pybind11 units compile with it from the first module on."""
    configs = batch_build.write_modules(tmp_path / "src", 2)
    log = tmp_path / "compilers.log"
    recorder = tmp_path / "recorder.sh"
    recorder.write_text(RECORDER.format(log=log))
    recorder.chmod(0o755)
    env = {**os.environ, "KSBIND_CACHE_DIR": str(tmp_path / "cache"), "KSBIND_PCH": "1", "KSBIND_JOBS": "2",
           "KSBIND_CCACHE": str(recorder), "KSBIND_VERBOSE": "1"}
    proc = subprocess.run([sys.executable, "-m", "ksbind", "build", *(c.name for c in configs)],
                          cwd=tmp_path / "src", env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "building the shared precompiled header first" in proc.stderr
    commands = [line.split()[3:] for line in log.read_text().splitlines() if line.startswith("start ")]
    header = [i for i, c in enumerate(commands) if "c++-header" in c]
    assert len(header) == 1, commands  # built once, for both modules
    generated = [i for i, c in enumerate(commands) if any(a.endswith(("entry_points.cpp", "module.cpp"))
                                                          for a in c)]
    assert len(generated) == 4
    for i in generated:
        assert i > header[0] and "-include" in commands[i], commands[i]
    # The modules compute (module k is x * k + 1), found in the cache by a new process:
    for k, config in enumerate(configs, start=1):
        out = subprocess.run([sys.executable, "-c", f"import ksbind; m = ksbind.build({str(config)!r}, quiet=True); "
                              f"print(m.f_{k}(2.0))"], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert float(out.stdout) == 2.0 * k + 1
