"""Writes generated files: atomically, only when their content changed, and
all of a batch only after every module rendered (nothing half-written on error).
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ksbind.errors import Location, OutputError
from ksbind.fileio import write_atomic
from ksbind.inputs import note_output

if TYPE_CHECKING:
    from ksbind.codegen.render import RenderedModule


@dataclass(frozen=True)
class PlannedFile:
    path: Path
    text: str

    @property
    def is_current(self) -> bool:
        """Whether the file on disk already holds exactly this text."""
        try:
            return self.path.read_bytes() == self.text.encode("utf-8")
        except OSError:
            return False


def plan_files(out_dir: Path, files: dict[str, str]) -> list[PlannedFile]:
    """Where each generated file goes; file names may not leave out_dir."""
    planned = []
    for name in sorted(files):
        if not name or os.path.isabs(name) or ".." in Path(name).parts or "\\" in name:
            raise OutputError(f"generated file name {name!r} would leave the output folder", Location(str(out_dir)))
        planned.append(PlannedFile(out_dir / name, files[name]))
    return planned


def write_planned(planned: Iterable[PlannedFile]) -> list[Path]:
    """Write every file whose content changed; returns the ones written."""
    written = []
    for p in planned:
        note_output(p.path, p.text)  # what a no-op build checks is still there (ksbind/inputs.py)
        if p.is_current:
            continue
        if p.path.parent.exists() and not p.path.parent.is_dir():
            raise OutputError("output folder is a file", Location(str(p.path.parent)))
        try:
            write_atomic(p.path, p.text)
        except OSError as e:
            raise OutputError(f"cannot write generated file: {e.strerror}", Location(str(p.path))) from None
        written.append(p.path)
    return written


def write_generated(out_dir: Path, rendered: RenderedModule) -> list[Path]:
    """Write a rendered module's files (only those that changed); returns all their paths."""
    planned = plan_files(out_dir, rendered.files)
    write_planned(planned)
    return [p.path for p in planned]
