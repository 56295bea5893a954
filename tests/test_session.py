"""The build session (ksbind/session.py): one record of what a build is doing, in the context."""
from __future__ import annotations

import ast
import contextvars
import logging
import re
import threading
from pathlib import Path

import pytest

from ksbind import inputs, log, session

PACKAGE = Path(session.__file__).parent


def test_outside_a_build_every_field_is_its_default() -> None:
    s = session.current()
    assert (s.quiet, s.pch_first, s.installed, s.schedule, s.recorder) == (False, False, None, session.Schedule(), None)


def test_changes_hold_for_their_block_and_nest() -> None:
    installed: list[Path] = []
    with session.changed(quiet=True):
        with session.changed(installed=installed) as inner:
            assert inner is session.current() and inner.quiet and inner.installed is installed
        assert session.current().quiet and session.current().installed is None
    assert not session.current().quiet
    with pytest.raises(TypeError):
        with session.changed(verbose=True):  # not a field: an error, not a silently ignored setting
            pass


def test_a_thread_started_in_a_copy_of_the_context_sees_the_session() -> None:
    seen: list[bool] = []
    with session.changed(pch_first=True):
        context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(lambda: seen.append(session.current().pch_first),))
    worker.start()
    worker.join()
    plain = threading.Thread(target=lambda: seen.append(session.current().pch_first))  # a fresh context
    plain.start()
    plain.join()
    assert seen == [True, False]


def test_a_quiet_session_drops_progress_but_not_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ksbind")
    logger = log.get_logger("compile")
    with session.changed(quiet=True):
        logger.info("progress")
        logger.warning("a warning")
    logger.info("loud progress")
    assert [r.getMessage() for r in caplog.records] == ["a warning", "loud progress"]


def test_recording_is_the_sessions_recorder(tmp_path: Path) -> None:
    source = tmp_path / "a.ks"
    source.write_text("x")
    with inputs.recording() as recorder:
        assert session.current().recorder is recorder
        inputs.read_bytes(source)
    assert session.current().recorder is None and str(source) in recorder.files


def test_no_other_module_keeps_build_state_in_a_context_variable() -> None:
    """Per-build state is a field of the session; a new ContextVar elsewhere would be a second,
    separate way for it to travel (and to be forgotten in a thread)."""
    found = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
             if re.search(r"\bContextVar\(", p.read_text(encoding="utf-8"))]
    assert found == ["session.py"]


def _filled_at_run_time(node: ast.stmt) -> bool:
    """A module-level empty dict, list or set (a cache or registry), or a cached function."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        v = node.value
        return (isinstance(v, (ast.Dict, ast.List, ast.Set)) and not getattr(v, "keys", getattr(v, "elts", None))) or (
            isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("dict", "list", "set")
            and not v.args)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names = {d.func.id if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) else
                 d.id if isinstance(d, ast.Name) else "" for d in node.decorator_list}
        return bool(names & {"lru_cache", "cache"})
    return False


def test_every_process_wide_cache_says_why_it_is_per_process() -> None:
    """What outlives a build (a module-level cache or registry, a cached function) says that it is
    per process and why, in the comment above it or on its line; per-build state is the session's."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.parse("\n".join(lines)).body:
            if not _filled_at_run_time(node):
                continue
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            said = [lines[node.lineno - 1]]
            i = first - 2
            while i >= 0 and lines[i].lstrip().startswith("#"):
                said.append(lines[i])
                i -= 1
            if "per process" not in " ".join(said).lower():
                missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert missing == []
