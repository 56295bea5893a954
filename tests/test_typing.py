"""ksbind's own code is fully typed: mypy finds no error in the package."""
from __future__ import annotations

import subprocess
import sys

from .conftest import REPO


def test_mypy_accepts_the_package() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary",
                           str(REPO / "ksbind")], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
