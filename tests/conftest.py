from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared"))


@pytest.fixture
def repo() -> Path:
    return REPO
