from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import lanes
from tests.lanes import LANES

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared"))


@pytest.fixture
def repo() -> Path:
    return REPO


# ------------------------------------------------------------------ the lanes (tests/lanes.py)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lane", choices=LANES, default=None,
                     help="run one lane: unit (compiles nothing; every compiler and ksc replaced by a "
                          "script that fails) or slow (compiles or runs ksc). See tests/lanes.py.")


def pytest_configure(config: pytest.Config) -> None:
    global SHARED
    # The session's build cache (tests/e2e_support.py) holds every module the session builds,
    # several torch ones with their precompiled headers: over the default 2 GiB cap, a module
    # built early would be evicted before a later test relies on it being a cache hit. Tests
    # of the cap set their own (tests/test_cache.py).
    os.environ.setdefault("KSBIND_CACHE_MAX_BYTES", "64G")
    # Outside CI the ksc-dependent tests skip, saying why, where ../shared/ksc is absent; in CI
    # that would pass hundreds of them silently, so a missing ksc fails the run at once.
    if os.environ.get("CI") and not (SHARED / "ksc" / "bin" / "ksc").is_file():
        raise pytest.UsageError(f"CI needs ksc at {SHARED / 'ksc' / 'bin' / 'ksc'} "
                                "(set KSBIND_SHARED to the folder holding ksc/)")
    if config.getoption("lane") == "unit":
        folder = Path(tempfile.mkdtemp(prefix="ksbind-unit-lane-"))
        atexit.register(shutil.rmtree, folder, True)
        SHARED = lanes.install_guard(folder)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each test its lane's marker, then keep only the lane asked for (--lane)."""
    for item in items:
        item.add_marker(LANE_MARKS[item_lane(item)])
    lane = config.getoption("lane")
    if lane:
        keep = [item for item in items if item.get_closest_marker(lane)]
        dropped = [item for item in items if not item.get_closest_marker(lane)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


LANE_MARKS = {lane: getattr(pytest.mark, lane) for lane in LANES}


def item_lane(item: pytest.Item) -> str:
    """"slow" when the test (or a fixture or helper it uses) compiles or runs ksc, or is marked slow; else "unit"."""
    if item.get_closest_marker("slow"):
        return "slow"
    return "slow" if compile_reason(item) else "unit"


def compile_reason(item: pytest.Item) -> str | None:
    """What makes this test compile, by tests/lanes.py's rule, or None."""
    functions: list[Callable[..., Any]] = [f for f in [getattr(item, "function", None)] if f is not None]
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info is not None else ()):
            if (getattr(fixturedef.func, "__module__", "") or "").startswith("tests"):
                functions.append(fixturedef.func)
    callspec = getattr(item, "callspec", None)
    return lanes.lane_of(functions, callspec.params.values() if callspec is not None else ())


@pytest.fixture(autouse=True)
def _unit_lane_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the unit lane, a test that ran a compiler or ksc fails (naming what it ran)."""
    if request.config.getoption("lane") != "unit":
        yield
        return
    before = len(lanes.guard_calls())
    yield
    calls = lanes.guard_calls()[before:]
    if calls:
        pytest.fail(f"{request.node.nodeid} compiles or runs ksc, but tests/lanes.py's rule put it in the "
                    f"unit lane: it ran {calls[:3]}. Make the rule see it (tests/lanes.py) or mark it slow.",
                    pytrace=False)


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
    ns,
    ops,
    py_calls,
    py_examples,
    relu3_ks,
    relu3_torch,
    rownorm_fast,
    runtime,
    torch_lib,
    torch_ops,
)
