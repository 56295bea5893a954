"""Running the compiler: one translation unit's record (Unit) and the Runner
that starts compiler processes, stops them all on the first failure and turns
that failure into a BuildError pointing at the user's file. Used by the
compile step and by the precompiled header's build.

Every compiler and linker process of this Python process takes one of
KSBIND_JOBS slots (``SLOTS``, like make's jobserver) while it runs, whichever
module's build started it: several modules built at once (``ksbind build`` of
many configs, pipeline.build_configs) share the machine's cores instead of
each starting one compiler per core. A slot is taken only around the process
itself, never while a thread waits for a cache lock, so a thread holding a
lock always gets a slot eventually and no wait can be circular."""
from __future__ import annotations

import ctypes
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksbind.backend.toolchain import first_error
from ksbind.errors import BuildError, Location
from ksbind.log import get_logger

log = get_logger("compile")


def jobs() -> int:
    """KSBIND_JOBS: how many compilers run at once (0 or unset: one per core)."""
    text = os.environ.get("KSBIND_JOBS", "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit():
        raise BuildError(f"KSBIND_JOBS must be a whole number of parallel compiles, found {text!r}")
    return int(text) or os.cpu_count() or 1


class Slots:
    """A counting semaphore whose size is read when a slot is asked for
    (``jobs()``, so a changed KSBIND_JOBS counts from the next process on)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.running = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        limit = jobs()
        with self._cond:
            while self.running >= limit:
                self._cond.wait()
            self.running += 1
        try:
            yield
        finally:
            with self._cond:
                self.running -= 1
                self._cond.notify()


#: The process-wide compiler slots (see the module's docstring).
SLOTS = Slots()
_runners: weakref.WeakSet[Runner] = weakref.WeakSet()
_runners_lock = threading.Lock()


#: Set while a batch is being stopped: no new compiler starts, in any build.
_stopping = threading.Event()


def stop_every_runner() -> None:
    """Stop every compiler this process runs, in every build, and start no new
    one until resume_runners() (Ctrl-C during a batch)."""
    _stopping.set()
    with _runners_lock:
        runners = list(_runners)
    for r in runners:
        r.stop_all()


def resume_runners() -> None:
    _stopping.clear()


@dataclass(frozen=True)
class Unit:
    """One translation unit: its source, flags of its own, whether it starts
    with the shared precompiled header (generated units only: the header is
    forced in with -include, which user C++ must not get), and the files it
    #includes that a compiler error may point into, as (compiled, reported)
    pairs: an error there names the reported file (the generated file in the
    config's output folder, not its copy under the cache's units/)."""

    source: Path
    flags: tuple[str, ...] = ()
    pch: bool = False
    parts: tuple[tuple[Path, Path], ...] = ()
    #: The headers of its precompiled header when not the toolchain's (``Toolchain.pch_includes``).
    pch_includes: tuple[str, ...] = ()
    #: Off the build's critical path when compiled with its built precompiled header: then it
    #: yields the cores (YIELDING) to the user's code, which takes longer. (Generated glue: with
    #: the header it compiles in less time than the user's code; without it, the framework's
    #: headers make it the build's longest unit, which must not yield.)
    yields: bool = False


#: The niceness of a unit that yields (``Unit.yields``) and of the import of torch that runs
#: beside the compiles: with more processes than cores, Linux shares the cores evenly, so the
#: longest compile (the user's code) would get two thirds of a core while the glue and the
#: import run; at nice 5 (a third of a normal process's weight) it keeps a core to itself and
#: the others share the rest. They have the slack: they end before it anyway.
YIELDING = 5



class Runner:
    """Runs compiler processes; on the first failure stops the others (their
    whole process groups, so no cc1plus is left) and remembers the error."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix  # starts its log lines: the module's name
        self.failed = threading.Event()
        self.running: set[subprocess.Popen[str]] = set()
        self.lock = threading.Lock()
        with _runners_lock:
            _runners.add(self)

    def stop_all(self) -> None:
        self.failed.set()
        with self.lock:
            for proc in self.running:
                kill_group(proc)

    def run(self, cmd: list[str], unit: Unit, what: str, log_dir: Path, quiet_failure: bool = False,
            env: dict[str, str] | None = None, nice: int = 0) -> float:
        """Run one compiler or linker process (in one of the process-wide slots, at niceness
        ``nice`` above this process's); returns the seconds it ran (not counting the wait for a slot)."""
        with SLOTS.slot():
            if self.failed.is_set() or _stopping.is_set():  # stopped while this one waited for a slot
                raise Stopped()
            log.debug("%s$ %s", self.prefix, shlex.join(cmd))
            started = time.monotonic()
            try:
                proc = subprocess.Popen(dying_with_this_process(cmd), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, errors="replace",
                                        stdin=subprocess.DEVNULL, env=env,
                                        preexec_fn=child_setup(nice))
            except OSError as e:
                raise BuildError(f"cannot run C++ compiler {cmd[0]!r}: {e.strerror} (set CXX, or install g++)",
                                 Location(str(unit.source))) from None
            with self.lock:
                self.running.add(proc)
                if self.failed.is_set():  # stop_all ran while this one was starting
                    kill_group(proc)
            try:
                output, _ = proc.communicate()
            except BaseException:
                kill_group(proc)
                proc.wait()
                raise
            finally:
                with self.lock:
                    self.running.discard(proc)
        if proc.returncode == 0:
            return time.monotonic() - started
        if quiet_failure or self.failed.is_set():
            raise Stopped()  # stopped because another file failed (that one is reported), or optional
        raise failure(cmd, output, proc.returncode, unit, what, log_dir)


class Stopped(Exception):
    pass


# A killed build must leave no compiler running. Each compiler runs in a process group of
# its own (so stopping one stops its whole group, and Ctrl-C reaches ksbind first), hence no
# terminal hangup reaches it when this process dies. (A group, not a session: Linux's
# autogroup scheduling shares the CPUs between sessions before niceness counts, so a compiler
# in a session of its own could not yield to another: see YIELDING.) So on Linux each command is started
# under a small sh that the kernel sends SIGTERM when this process dies (the parent-death
# signal, set between fork and exec), and that then kills its whole group: the compiler
# driver and what it started (cc1plus, as, collect2, ccache's children). The signal comes
# when the *thread* that started it ends: Runner.run's thread waits for the process, so it
# outlives it unless the whole process dies.
_PR_SET_PDEATHSIG = 1
_prctl: Any = None
if sys.platform.startswith("linux"):
    try:
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None
#: sh: end the group on SIGTERM; run the command, with its status as the shell's.
_SUPERVISOR = 'trap "kill -KILL 0" TERM; "$@" & wait $!'
_SH = shutil.which("sh") or "/bin/sh"
#: Per process: whether a program is on PATH, looked up once.
_found: dict[str, bool] = {}


def dying_with_this_process(cmd: list[str]) -> list[str]:
    """``cmd`` under the supervising sh (Linux, when the program exists: else as it is,
    so that a missing compiler is still an OSError from Popen)."""
    if _prctl is None or not cmd:
        return cmd
    exe = cmd[0]
    if exe not in _found:
        _found[exe] = shutil.which(exe) is not None
    return [_SH, "-c", _SUPERVISOR, "sh", *cmd] if _found[exe] else cmd


def child_setup(nice: int = 0) -> Callable[[], None]:
    """The ``preexec_fn`` putting the child in a process group of its own and setting the
    parent-death signal (Linux) and the niceness ``nice``. Made before the fork: the child only
    calls setpgid, os.nice, prctl and getppid (no import, no allocation to speak of)."""
    parent = os.getpid()
    prctl = _prctl

    def set_it() -> None:
        os.setpgid(0, 0)
        if nice:
            os.nice(nice)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
            if os.getppid() != parent:  # this process died before prctl ran
                os._exit(128 + signal.SIGTERM)

    return set_it


LOCATED = re.compile(r"^(?P<file>[^:\s][^:]*):\d+(?::\d+)?: (?:fatal )?error", re.MULTILINE)


def failure(cmd: list[str], output: str, status: int, unit: Unit, what: str, log_dir: Path) -> BuildError:
    """The BuildError of a failed compile: the compiler's first error, reported
    against the unit's part it points into (a merged generated file) or the unit."""
    where = unit.source
    for compiled, shown in unit.parts:
        if compiled == unit.source:
            where = shown
    m = LOCATED.search(output)
    if m is not None:
        named = Path(m.group("file"))
        for compiled, shown in unit.parts:
            if named == compiled or named.resolve() == compiled.resolve():
                where = shown
                output = output.replace(str(compiled), str(shown))
    log: Path | None = log_dir / f"{where.name}.build.log" if os.access(log_dir, os.W_OK) else None
    if log is not None:
        try:
            log.write_text(f"$ {shlex.join(cmd)}\n{output}", encoding="utf-8")
        except OSError:
            log = None
    first = first_error(output) or f"{cmd[0]} exited with status {status}"
    more = f" (full output: {log})" if log is not None else ""
    if "No space left on device" in output or "Disk quota exceeded" in output:
        more += "; free space on that disk, or set KSBIND_CACHE_DIR to a folder on another one"
    return BuildError(f"{what} {where} failed: {first}{more}", Location(str(where)))


def kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
