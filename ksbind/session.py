"""The build session: what one build (or one batch of builds) is doing, in one record.

A build's facts that are not its inputs' values ride with it from the public call
(``ksbind.build``, ``build_spec``, a batch, an editable install's rebuild) down to the
code that reads them, several layers below: whether its progress is quiet, whether its
shared precompiled headers are built first, where its installed modules are collected,
what it overlaps with ksc's run and its compiles, and the recorder of the inputs it reads.

They travel in the context (``contextvars``), not as arguments, on purpose: a build fans
out into threads (compiles, a batch's modules), each of which runs in a copy of its
caller's context, and Python's ``logging`` filters, which decide whether a progress line
shows, take no arguments. Every such fact is a field of this one frozen record; nothing
else in ksbind keeps per-build state in a ContextVar. A caller changes fields for a block
with ``with changed(quiet=True):`` (restored after it, in this context only), or sets them
in a copied context with ``context.run(enter, ...)`` (batch.py).

The work a build overlaps with its own waits (torch's import while ksc runs and while the
compilers run) is declared, as a ``Schedule``, by the build kind (``BuildKind.schedule``):
the pipeline puts it in the session, and ksc's driver and the compile step each start
their part at one fixed point. Nothing below the pipeline calls up into it otherwise.

Process-wide caches stay where they are truly per process (a loaded library, a file
hashed by its stat identity), each saying so where it is defined.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol


class InputRecorder(Protocol):
    """What notes a build's inputs (ksbind/inputs.py's ``Recorder``)."""

    refused: str | None
    module: dict[str, Any] | None

    def note_file(self, path: Any, data: bytes | None = None) -> None: ...

    def note_dir(self, path: Any, names: Iterable[str] | None = None) -> None: ...

    def note_output(self, path: Any, data: bytes) -> None: ...


class Schedule(NamedTuple):
    """What a build overlaps with its own waits, declared by its build kind.

    while_ksc: started once ksc has started (ksc's wait leaves a core free), or None.
    while_compiling: started once a module's compiles are submitted and at least one unit
    compiles (the compilers leave some CPU), or None. Each must return at once (start a
    thread) and may be started more than once (it does its work once).
    """

    while_ksc: Callable[[], object] | None = None
    while_compiling: Callable[[], object] | None = None


class BuildSession(NamedTuple):
    """One build's facts beside its inputs (a NamedTuple, not a dataclass: a no-op build imports
    this module, and keeps to what starts fast).

    quiet: its progress lines are dropped (warnings and errors stay): ``quiet=True`` of
    build, build_spec, load_ks, compile. pch_first: its units' shared precompiled headers
    are built before the units (a batch: every later module uses them;
    ksbind/backend/compile.py). installed: each module file it installs is appended here
    (an editable install's rebuild: ksbind/editable.py), or None. schedule: the work it
    overlaps with ksc's run and its compiles (Schedule: the torch import). recorder: notes
    what it reads and writes for its no-op record (ksbind/inputs.py), or None outside
    ``ksbind.build``'s recording.
    """

    quiet: bool = False
    pch_first: bool = False
    installed: list[Path] | None = None
    schedule: Schedule = Schedule()
    recorder: InputRecorder | None = None


#: Outside any build: every field its default.
_NONE = BuildSession()
_CURRENT: contextvars.ContextVar[BuildSession | None] = contextvars.ContextVar("ksbind_session", default=None)


def current() -> BuildSession:
    """The session of the build running in this context (the defaults outside any)."""
    return _CURRENT.get() or _NONE


def enter(**changes: Any) -> contextvars.Token[BuildSession | None]:
    """This context's session with ``changes``, until ``leave(token)`` (``changed`` for a block)."""
    unknown = set(changes) - set(BuildSession._fields)
    if unknown:
        raise TypeError(f"the build session has no field {', '.join(sorted(unknown))}")
    return _CURRENT.set(current()._replace(**changes))


def leave(token: contextvars.Token[BuildSession | None]) -> None:
    """The session as it was before ``enter`` gave ``token``."""
    _CURRENT.reset(token)


@contextlib.contextmanager
def changed(**changes: Any) -> Iterator[BuildSession]:
    """The session with ``changes`` for the block (threads started in it inherit it)."""
    token = enter(**changes)
    try:
        yield current()
    finally:
        leave(token)


__all__ = ["BuildSession", "Schedule", "InputRecorder", "current", "enter", "leave", "changed"]
