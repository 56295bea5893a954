"""A scratch folder for a benchmark's caches, removed only once no background header
build (ksbind/backend/pch.py) still writes in it: deleting it under one fails with
"Directory not empty"."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ksbind.backend.pch import wait_for_background


@contextlib.contextmanager
def scratch_dir(prefix: str = "ksbind-bench-") -> Iterator[str]:
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        wait_for_background(Path(d))
        shutil.rmtree(d, ignore_errors=True)
