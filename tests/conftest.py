from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared"))


@pytest.fixture
def repo() -> Path:
    return REPO


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start compiling the modules the selected tests use (tests/e2e_support.py),
    in the background, so compiling overlaps with the tests that need none."""
    if session.config.option.collectonly:
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if needed:
        from tests import e2e_support

        e2e_support.prebuild(needed)


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests import e2e_support

    e2e_support.stop_prebuilds()


# The session fixtures of the end-to-end tests (modules built once per session
# and runtime), for every test module. Imported last: e2e_support imports SHARED.
from tests.e2e_support import (  # noqa: E402,F401
    ks_examples,
    py_calls,
    py_examples,
    relu3_ks,
    relu3_torch,
    rownorm_fast,
    runtime,
    torch_lib,
    torch_ops,
)
