"""Files replaced in one step: a reader sees the old file or the new one, never half.

``staged(path)`` yields a temporary name beside ``path`` (same folder, so the
rename cannot cross filesystems) and renames it over ``path`` when the block
succeeds; on failure the temporary file is removed and ``path`` is untouched.
``write_atomic(path, text_or_bytes)`` writes through it. Every writer of a
file other processes may read at any moment (generated files, cache records,
built modules) goes through these two.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def staged(path: Path, mode: int | None = None) -> Iterator[Path]:
    """A temporary name beside ``path``, renamed to it (with ``mode``, if given) when the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # gone already when the rename succeeded


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path``'s content in one step (text as UTF-8, newlines untranslated)."""
    with staged(Path(path)) as tmp:
        if isinstance(data, str):
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(data)
        else:
            tmp.write_bytes(data)


__all__ = ["staged", "write_atomic"]
