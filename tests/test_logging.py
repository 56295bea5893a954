"""Progress through ``logging`` (ksbind/log.py): one INFO line per compiled unit
with its position and time, DEBUG command lines, quiet calls, the default
stderr handler only when the application configured none, and the
verbosity switches (KSBIND_VERBOSE, the CLI's -v/-q)."""
from __future__ import annotations

import inspect
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ksbind
from ksbind import log, session
from ksbind.backend.compile import compile_objects
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.cache.objects import ObjectCache

from .conftest import REPO
from .e2e_support import run_python

EXAMPLES = REPO / "examples"


def units(tmp_path: Path) -> list[Unit]:
    (tmp_path / "a.cpp").write_text('extern "C" int a_value() { return 1; }\n')
    (tmp_path / "b.cpp").write_text('extern "C" int b_value() { return 2; }\n')
    return [Unit(tmp_path / "a.cpp"), Unit(tmp_path / "b.cpp")]


def tiny_toolchain() -> Toolchain:
    return Toolchain("test", ("g++",), ("-O0", "-fPIC", "-std=c++17"), ())


def messages(caplog: pytest.LogCaptureFixture, level: int | None = None) -> list[tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records if level is None or r.levelno == level]


def test_one_info_line_per_compiled_unit_and_the_command_lines_at_debug(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSBIND_CCACHE", "0")
    caplog.set_level(logging.DEBUG, logger="ksbind")
    work = tmp_path / "work"
    work.mkdir()
    cache = ObjectCache(tmp_path / "cache")
    compile_objects(units(tmp_path), tiny_toolchain(), objects=cache, work=work, log_dir=tmp_path, label="m")
    info = [m for name, level, m in messages(caplog, logging.INFO)]
    assert info[0] == "m: compiling 2 of 2 units with g++", info
    lines = sorted(info[1:])
    assert len(lines) == 2 and all(re.fullmatch(r"m: \[[12]/2\] [ab]\.cpp \d+\.\d s", line) for line in lines), info
    assert {line.split("] ")[1].split()[0] for line in lines} == {"a.cpp", "b.cpp"}
    assert {line.split("]")[0] for line in lines} == {"m: [1/2", "m: [2/2"}
    debug = [m for name, level, m in messages(caplog, logging.DEBUG)]
    commands = [m for m in debug if m.startswith("m: $ g++ ")]
    assert len(commands) == 2 and all(" -c " in c for c in commands), debug
    assert {name for name, _, _ in messages(caplog)} == {"ksbind.compile"}

    caplog.clear()  # the same units again: every object from the cache, nothing at INFO
    compile_objects(units(tmp_path), tiny_toolchain(), objects=cache, work=work, log_dir=tmp_path, label="m")
    assert messages(caplog, logging.INFO) == []
    assert sorted(m for _, _, m in messages(caplog, logging.DEBUG)) == [
        "m: a.cpp: object from the cache", "m: b.cpp: object from the cache"]


def test_a_quiet_call_logs_no_progress(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """build(quiet=True) sets the build session's quiet, which the compile threads inherit."""
    monkeypatch.setenv("KSBIND_CCACHE", "0")
    caplog.set_level(logging.DEBUG, logger="ksbind")
    with session.changed(quiet=True):
        compile_objects(units(tmp_path), tiny_toolchain(), objects=None, work=tmp_path, log_dir=tmp_path, label="m")
        log.get_logger("cache").warning("a warning is still shown")
    assert messages(caplog) == [("ksbind.cache", logging.WARNING, "a warning is still shown")]


def test_build_and_load_ks_have_one_default() -> None:
    build = inspect.signature(ksbind.build).parameters["quiet"].default
    assert build is False and inspect.signature(ksbind.load_ks).parameters["quiet"].default is build


#: What run_python leaves out of a fresh interpreter's environment: logging is
#: configured by nobody but the code.
NO_VERBOSE = ("KSBIND_VERBOSE",)


def test_the_default_handler_writes_short_lines_to_the_current_stderr_and_steps_aside() -> None:
    r = run_python("""
        import io, logging, sys
        from ksbind import log
        log.setup()
        compile_log = log.get_logger("compile")
        compile_log.info("m: [1/2] a.cpp 0.1 s")
        compile_log.debug("m: $ g++ (not shown at the default verbosity)")
        saved, sys.stderr = sys.stderr, io.StringIO()   # as a notebook or pytest swaps it
        compile_log.warning("m: to the new stderr")
        caught, sys.stderr = sys.stderr.getvalue(), saved
        print(repr(caught))
        logging.basicConfig(format="APP %(name)s %(message)s")   # the application's own handler
        compile_log.warning("m: once, through the application's handler")
        log.setup()   # the next build: ksbind's handler and level are gone, the application's level rules
        assert logging.getLogger("ksbind").handlers == [] and logging.getLogger("ksbind").level == 0
        compile_log.info("m: not shown: the application's root logger is at WARNING")
        """, unset=NO_VERBOSE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == repr("ksbind: warning: m: to the new stderr\n")
    assert r.stderr.splitlines() == ["ksbind: m: [1/2] a.cpp 0.1 s",
                                     "APP ksbind.compile m: once, through the application's handler"]


def test_an_application_that_configured_logging_gets_records_and_no_second_handler() -> None:
    r = run_python("""
        import logging
        logging.basicConfig(level=logging.INFO, format="APP %(levelname)s %(name)s: %(message)s")
        from ksbind import log
        log.setup()
        assert logging.getLogger("ksbind").handlers == [], logging.getLogger("ksbind").handlers
        log.get_logger("compile").info("m: built in 1.0 s")
        log.get_logger("compile").debug("m: $ g++ (hidden: the application chose INFO)")
        """, unset=NO_VERBOSE)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["APP INFO ksbind.compile: m: built in 1.0 s"]


@pytest.mark.parametrize("env,verbosity,level", [
    ("", None, logging.INFO), ("0", None, logging.WARNING), ("2", None, logging.DEBUG), ("7", None, logging.DEBUG),
    ("2", 0, logging.WARNING), ("0", 2, logging.DEBUG), ("x", None, logging.INFO)])
def test_verbosity_from_the_environment_and_the_command_line(env: str, verbosity: int | None, level: int) -> None:
    r = run_python(f"""
        import logging
        from ksbind import log
        with log.verbosity({verbosity!r}):
            log.setup()  # what each build does: the command line's choice stands
            print(logging.getLogger("ksbind").getEffectiveLevel())
        """, env={"KSBIND_VERBOSE": env} if env else None,
        unset=NO_VERBOSE)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == level


def test_ksbind_build_progress_and_its_switches(tmp_path: Path) -> None:
    """One real (python-target, small) build: its progress lines at the default
    verbosity; then the cached build: a DEBUG line with -v, nothing with -q
    (which wins over KSBIND_VERBOSE)."""
    cfg = tmp_path / "logged.yaml"
    cfg.write_text(textwrap.dedent(f"""\
        name: logged_relu3
        target: python
        ks: [{EXAMPLES / 'relu3' / 'relu3.ks'}]
        cpp: [{EXAMPLES / 'relu3' / 'relu3.cpp'}]
        bindings: [{{name: relu3, function: "[relu3 Float]"}}]
        output: {tmp_path / 'out'}
        """))
    env = {k: v for k, v in os.environ.items() if k != "KSBIND_VERBOSE"}
    env.update(KSBIND_CACHE_DIR=str(tmp_path / "cache"), KSBIND_CCACHE="0")

    def ksbind_build(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ksbind", "build", *args, str(cfg)], capture_output=True,
                              text=True, cwd=tmp_path, timeout=300, env={**env, **extra})

    cold = ksbind_build()
    assert cold.returncode == 0, cold.stderr
    lines = cold.stderr.splitlines()
    assert re.fullmatch(r"ksbind: logged_relu3: compiling (\d) of \1 units with g\+\+", lines[0]), lines
    n = int(lines[0].split()[3])
    positions = [re.fullmatch(r"ksbind: logged_relu3: \[(\d)/(\d)\] \S+\.cpp \d+\.\d s", line) for line in lines[1:-1]]
    assert all(positions) and [int(m.group(1)) for m in positions if m] == list(range(1, n + 1)), lines
    assert re.fullmatch(r"ksbind: logged_relu3: built in \d+\.\d s", lines[-1]), lines
    assert all(len(line) < 80 for line in lines)  # a terminal's or a notebook's width
    assert cold.stdout.startswith("logged_relu3: built ")

    loud = ksbind_build("-v")
    assert loud.returncode == 0 and loud.stderr.startswith("ksbind: logged_relu3: cached build "), loud.stderr
    quiet = ksbind_build("-q", KSBIND_VERBOSE="2")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.startswith("logged_relu3: built ")
    hit = ksbind_build()
    assert hit.returncode == 0 and hit.stderr == ""  # a cache hit says nothing at the default verbosity
