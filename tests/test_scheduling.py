"""How a build shares the CPUs: the compilers run in process groups of their own in ksbind's
session (Linux's autogroup scheduling shares the CPUs between sessions before niceness
counts), a unit that yields runs at YIELDING's niceness, torch's import starts while ksc runs,
and the import thread's niceness reaches no thread that outlives it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import ksbind
from ksbind import session
from ksbind.backend import loader
from ksbind.backend.runner import YIELDING, Runner, Unit
from ksbind.ksc.driver import run_ksc
from tests.test_ksc import KSC, RUNTIME, needs_ksc

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread niceness: Linux only")

#: Prints a process's niceness, process group and session into the file named by argv[1].
REPORT = ("import os, sys; open(sys.argv[1], 'w').write("
          "f'{os.getpriority(os.PRIO_PROCESS, 0)} {os.getpgid(0)} {os.getsid(0)}')")


def own_niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


@pytest.mark.parametrize("nice", [0, YIELDING])
def test_a_compiler_runs_in_a_group_of_its_own_in_this_session_at_the_niceness_asked(tmp_path: Path,
                                                                                     nice: int) -> None:
    report = tmp_path / "report.txt"
    Runner().run([sys.executable, "-c", REPORT, str(report)], Unit(tmp_path / "u.cpp"), "compiling", tmp_path,
                 nice=nice)
    niceness, group, session = map(int, report.read_text().split())
    assert niceness == min(19, own_niceness() + nice)
    assert group != os.getpgid(0)  # stopped as a group, and Ctrl-C at a terminal reaches ksbind only
    assert session == os.getsid(0)  # so that niceness counts against ksbind's other processes


@linux_only
def test_the_import_thread_yields_and_the_threads_imports_start_first_do_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The module imported meanwhile is imported at YIELDING's niceness; a module named in
    BORN_WITH_THREADS is imported before that, so the thread it starts (as numpy's OpenBLAS
    does) keeps the process's niceness."""
    tag = f"sched{os.getpid()}"
    (tmp_path / f"{tag}_threads.py").write_text(textwrap.dedent("""\
        import os, threading
        seen = []
        def _work():
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        worker = threading.Thread(target=_work)
        worker.start()
        worker.join()
        """))
    (tmp_path / f"{tag}_framework.py").write_text(textwrap.dedent("""\
        import os, threading
        importer_niceness = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(loader, "BORN_WITH_THREADS", (f"{tag}_threads",))
    loader.import_meanwhile(f"{tag}_framework", nice=YIELDING)
    deadline = time.monotonic() + 30
    while f"{tag}_framework" not in sys.modules or not hasattr(sys.modules[f"{tag}_framework"], "importer_niceness"):
        assert time.monotonic() < deadline, "the import thread never imported the module"
        time.sleep(0.01)
    assert sys.modules[f"{tag}_framework"].importer_niceness == min(19, own_niceness() + YIELDING)
    assert sys.modules[f"{tag}_threads"].seen == [own_niceness()]
    assert threading.current_thread() is threading.main_thread()
    assert own_niceness() == os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # this thread's unchanged


@linux_only
def test_torchs_import_on_a_yielding_thread_leaves_no_thread_at_its_niceness() -> None:
    """In a new process: torch imported by import_meanwhile at YIELDING, then every thread of the
    process (numpy's OpenBLAS server included) has the process's own niceness."""
    pytest.importorskip("torch")
    code = textwrap.dedent(f"""\
        import glob, json, os, threading, time
        from ksbind.backend.loader import import_meanwhile
        importer = import_meanwhile("torch", nice={YIELDING})
        importer.join()
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/self/task/{{importer.native_id}}"):  # the OS thread ends just after join()
            assert time.monotonic() < deadline
            time.sleep(0.001)
        import torch
        nices = [int(open(p).read().rsplit(")", 1)[1].split()[16]) for p in glob.glob("/proc/self/task/*/stat")]
        print(json.dumps({{"threads": len(nices), "nices": sorted(set(nices)),
                          "own": os.getpriority(os.PRIO_PROCESS, 0)}}))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(ksbind.__file__).parent.parent)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    assert seen["threads"] >= 2  # numpy's OpenBLAS server at least: threads torch's import started
    assert seen["nices"] == [seen["own"]]


def test_the_schedules_while_ksc_is_started_once_ksc_has_started_and_its_output_is_kept(tmp_path: Path) -> None:
    calls: list[bool] = []
    marker = tmp_path / "started"
    slow = f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(0.3); print('out')"

    def meanwhile() -> None:
        deadline = time.monotonic() + 30
        while not marker.exists():  # the process is running (it wrote its marker), not finished
            assert time.monotonic() < deadline
            time.sleep(0.005)
        calls.append(True)

    with session.changed(schedule=session.Schedule(while_ksc=meanwhile)):
        done = run_ksc([sys.executable, "-c", slow], 60, tmp_path, None)
    assert calls == [True] and done.returncode == 0 and done.stdout == "out\n"
    assert run_ksc([sys.executable, "-c", "print('x')"], 60, tmp_path, None).stdout == "x\n"  # unset: not called
    assert calls == [True]


def test_a_ksc_timeout_kills_ksc_even_while_the_callback_runs(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, pathlib, time; pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); time.sleep(60)"
    with session.changed(schedule=session.Schedule(while_ksc=lambda: None)), \
            pytest.raises(ksbind.KsbindError, match="did not finish within 1 s"):
        run_ksc([sys.executable, "-c", code], 1, tmp_path, None)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@needs_ksc
def test_a_torch_builds_import_of_torch_starts_while_ksc_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch target's build asks for torch's import from inside ksc's run (the core ksc
    leaves idle), at YIELDING's niceness, with torch's CPU library loaded first; the python
    target's asks for nothing."""
    pytest.importorskip("torch")
    import inspect

    from ksbind.pipeline import build_spec
    from ksbind.targets.torch import build as torch_build

    asked: list[tuple[str, int, list[str], bool]] = []

    def record(name: str, nice: int = 0, preload: tuple[Path, ...] = ()) -> None:
        asked.append((name, nice, [p.name for p in preload], any(f.function == "run_ksc" for f in inspect.stack())))

    class Resolved(Exception):
        pass

    def stop(*args: object, **kwargs: object) -> None:
        raise Resolved()

    monkeypatch.setattr(torch_build, "import_meanwhile", record)
    monkeypatch.setattr("ksbind.pipeline._build_resolved", stop)
    (tmp_path / "sq.ks").write_text("(def sq Float (x : Float) (mul x x))\n")
    for target in ("torch", "python"):
        cfg = tmp_path / f"{target}.yaml"
        cfg.write_text(f"name: sched_{target}\ntarget: {target}\nks: [sq.ks]\n"
                       f"ksc: {{path: {KSC}, runtime: {RUNTIME}}}\noutput: out_{target}\nbindings:\n  - {{name: sq}}\n")
        with pytest.raises(Resolved):
            build_spec(ksbind.load_config(cfg)[0], cache_dir=tmp_path / "cache", quiet=True)
    assert asked == [("torch", YIELDING, ["libtorch_cpu.so"], True)]


@linux_only
def test_the_import_thread_loads_the_preloaded_libraries_before_the_import(tmp_path: Path) -> None:
    """``preload``: each library is in the process before the module's import starts; one that
    cannot be loaded is left out and the import still runs."""
    library = tmp_path / "libsched_preload.so"
    (tmp_path / "p.cpp").write_text('extern "C" int sched_preload_answer() { return 42; }\n')
    subprocess.run(["g++", "-shared", "-fPIC", str(tmp_path / "p.cpp"), "-o", str(library)], check=True)
    tag = f"schedpre{os.getpid()}"
    (tmp_path / f"{tag}.py").write_text(
        f"import pathlib\nloaded_first = {str(library)!r} in pathlib.Path('/proc/self/maps').read_text()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importer = loader.import_meanwhile(tag, preload=(tmp_path / "missing.so", library))
        assert importer is not None  # found by the call, not by name: it may have ended already
        importer.join(60)
        assert sys.modules[tag].loaded_first is True
    finally:
        sys.path.remove(str(tmp_path))
