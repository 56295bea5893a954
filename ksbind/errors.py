"""Every error ksbind raises on bad input is a KsbindError carrying a Location.

The CLI prints ``str(error)`` as one line and exits 2; library callers can
inspect ``.location`` (file, line, column) and ``.message``.
"""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from types import FrameType
from typing import Any

#: Files shown under another name in messages: load_ks saves the user's text under the build
#: cache, by content, and its errors and warnings say ``<load_ks text>:LINE:COL``, not that path.
#: Per process: a saved text's path names the same text for as long as the process runs.
_DISPLAY_NAMES: dict[str, str] = {}


def show_file_as(path: str, name: str) -> None:
    """Show ``path`` as ``name`` in every Location's text from now on (``.file`` keeps the path)."""
    _DISPLAY_NAMES[path] = name


@dataclass(frozen=True)
class Location:
    """Where in a user's file something came from (1-based line and column)."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [_DISPLAY_NAMES.get(self.file, self.file)]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


class KsbindError(Exception):
    """Base of every error ksbind raises on bad input."""

    kind = "error"

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class InputFileError(KsbindError):
    """A user file that is missing, unreadable, not a regular file, or not UTF-8."""

    kind = "file error"


class KsSyntaxError(KsbindError):
    """Malformed s-expression text (unbalanced brackets, unterminated string...)."""

    kind = "syntax error"


class KsTypeError(KsbindError):
    """A ks type that is unknown, malformed or unusable where it appears."""

    kind = "type error"


class DeclarationError(KsbindError):
    """A def/edef/gdef form that does not describe a usable function."""

    kind = "declaration error"


class ConfigError(KsbindError):
    """A YAML config that does not match the schema."""

    kind = "config error"


class BindingError(KsbindError):
    """A binding that names a missing, ambiguous or unbindable function."""

    kind = "binding error"


class TemplateError(KsbindError):
    """A template that is missing, malformed, or refers to undefined values."""

    kind = "template error"


class OutputError(KsbindError):
    """Generated output that cannot be written where it was asked to go."""

    kind = "output error"


class BuildError(KsbindError):
    """Compiling or importing a generated module failed."""

    kind = "build error"


@dataclass(frozen=True)
class ModuleFailure:
    """One module of a batch that failed: its name, its config's file and line, the error."""

    module: str
    config: str
    error: KsbindError


class BatchBuildError(BuildError):
    """Some modules of a batch (``ksbind build`` of several, ``build_configs``)
    failed; the others were built. ``failures``: each failed module, in the
    configs' order; ``built``: ``[(name, module)]`` of those that were built."""

    kind = "build error"

    def __init__(self, failures: list[ModuleFailure], total: int, built: list[tuple[str, Any]]) -> None:
        self.failures = list(failures)
        self.total = total
        self.built = list(built)
        each = "; ".join(f"{f.config}: module {f.module}: {f.error}" for f in self.failures)
        super().__init__(f"{len(self.failures)} of {total} modules failed to build ({len(self.built)} built): {each}")


class KscError(BuildError):
    """The Knossos compiler ksc is missing or rejected the module's ks sources."""

    kind = "ksc error"


class KscVjpError(KscError):
    """ksc cannot derive a vjp a binding asks for (SUF-AD's limits: recursion, fold, lambdas...)."""

    kind = "vjp error"


class KscJvpError(KscError):
    """ksc cannot derive a jvp (``[fwd F]``) a binding asks for (a lambda: a map over one)."""

    kind = "jvp error"


class KsbindWarning(UserWarning):
    """Something ksbind chose for the user and says out loud (e.g. a default binding skipped)."""


#: ksbind's own folder: frames whose file is under it are ksbind's, not the user's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` called by the caller of this
    function that attributes the warning to the user's line: the frame that
    called into ksbind (the caller of the outermost ksbind frame on the stack;
    frames of other libraries between ksbind's, e.g. Jinja2 running a filter,
    are passed over). Falls back to the caller of ksbind's innermost frame."""
    frames: list[str] = []  # file names, from the frame that calls warnings.warn outwards
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        frames.append(frame.f_code.co_filename)
        frame = frame.f_back
    outermost = max((i for i, f in enumerate(frames) if _is_ksbind(f)), default=0)
    return outermost + 2  # stacklevel 1 is the frame calling warnings.warn (index 0)


def _is_ksbind(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def warn(message: str, category: type[Warning] | None = None) -> None:
    """Warn (KsbindWarning by default), attributed to the user's call into ksbind.
    The message itself says where in the user's config or ks source the cause is."""
    warnings.warn(message, category or KsbindWarning, stacklevel=user_stacklevel())


def closest(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean X?)' suffix for the choice closest to word, or ''."""
    import difflib

    match = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
