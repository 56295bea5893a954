"""Shared helpers for the end-to-end tests: one build cache per test session,
and each distinct module compiled once per session (later requests import the
cached build).

Every end-to-end module is built twice: against ksbind's bundled runtime and
against ksc's real runtime (``../shared/ksc/runtime``; the ksc variants skip
when it is absent). The session fixtures below take the runtime from the
session fixture ``runtime`` (parametrized over RUNTIMES), so a test using them
runs once per runtime. ``prebuild`` (called by tests/conftest.py with the
collected tests) starts, in background threads, the builds the session will
need, so compiling overlaps with the tests that need no module.

``KSBIND_TEST_CACHE_DIR`` keeps the cache between sessions (faster local
reruns); by default every session starts cold, so CI really compiles.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator

import pytest

from ksbind.config import ModuleSpec, RuntimeSpec
from tests.conftest import SHARED

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
PYTHON = sys.executable

#: ksc's real runtime, used as a config's `runtime: {include_dirs, sources}` would.
KSC_RUNTIME = SHARED / "ksc" / "runtime"
RUNTIMES = ("bundled", "ksc")

#: The modules behind each session fixture: (config under configs/, module name).
FIXTURE_MODULES: dict[str, tuple[str, str | None]] = {
    "ks_examples": ("examples.yaml", "examples_ks"),
    "py_examples": ("examples.yaml", "examples_python"),
    "relu3_ks": ("relu3.yaml", None),
    "torch_ops": ("torch_ops.yaml", "torch_ops"),
    "torch_lib": ("torch_ops.yaml", "torch_ops_lib"),
    "relu3_torch": ("relu3_torch.yaml", None),
}


def ksc_runtime_missing() -> str | None:
    """Why the ksc variants cannot run here, or None."""
    if (KSC_RUNTIME / "knossos.h").is_file() and (KSC_RUNTIME / "knossos.cpp").is_file():
        return None
    return f"ksc's runtime is not in {KSC_RUNTIME} (../shared/ksc absent)"


def available_runtimes() -> tuple[str, ...]:
    return RUNTIMES if ksc_runtime_missing() is None else ("bundled",)


def require_runtime(runtime: str) -> None:
    reason = ksc_runtime_missing() if runtime == "ksc" else None
    if reason:
        pytest.skip(reason)


def library_namespace(base: str, runtime: str) -> str:
    """The torch.library namespace of a variant: one namespace cannot be defined twice in a process."""
    return base if runtime == "bundled" else f"{base}_{runtime}"


@functools.lru_cache(maxsize=None)
def session_cache_dir() -> Path:
    env = os.environ.get("KSBIND_TEST_CACHE_DIR")
    if env:
        Path(env).mkdir(parents=True, exist_ok=True)
        return Path(env)
    d = Path(tempfile.mkdtemp(prefix="ksbind-test-cache-"))
    atexit.register(shutil.rmtree, d, True)
    return d


@functools.lru_cache(maxsize=None)
def session_output_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="ksbind-test-out-"))
    atexit.register(shutil.rmtree, d, True)
    return d


def with_runtime(spec: ModuleSpec, runtime: str) -> ModuleSpec:
    """A ModuleSpec on the given runtime, writing its generated files to a session folder."""
    spec = dataclasses.replace(spec, output=session_output_dir() / runtime / spec.name)
    if runtime == "bundled":
        return dataclasses.replace(spec, runtime=RuntimeSpec())
    # Hand-written ks C++ includes only knossos.h; ksc's knossos.cpp (which
    # ksc's own output #includes) defines the runtime's globals.
    spec = dataclasses.replace(spec, runtime=RuntimeSpec(False, (KSC_RUNTIME,), (KSC_RUNTIME / "knossos.cpp",)))
    if spec.torch_library:
        spec = dataclasses.replace(spec, torch_library=library_namespace(spec.torch_library, runtime))
    return spec


def _build(config: str, name: str | None, runtime: str) -> ModuleType:
    from ksbind import load_config
    from ksbind.build import build_spec

    specs = load_config(CONFIGS / config)
    spec = next(s for s in specs if name is None or s.name == name)
    return build_spec(with_runtime(spec, runtime), cache_dir=session_cache_dir(), quiet=True)


_builds: dict[tuple[str, str | None, str], Future[ModuleType]] = {}
_builds_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _submit(config: str, name: str | None, runtime: str) -> Future[ModuleType]:
    global _pool
    key = (config, name, runtime)
    with _builds_lock:
        if key not in _builds:
            if _pool is None:
                # A few at once: each build runs KSBIND_JOBS compilers itself; several
                # overlap one module's serial parts (linking, importing) with another's.
                _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ksbind-prebuild")
            _builds[key] = _pool.submit(_build, config, name, runtime)
        return _builds[key]


def built(config: str, name: str | None = None, runtime: str = "bundled") -> ModuleType:
    """Build (once per session) a module of a config under configs/ on a runtime."""
    require_runtime(runtime)
    return _submit(config, name, runtime).result()


def prebuild(fixture_names: Iterable[str]) -> None:
    """Start building, in the background, the modules behind these fixtures, on
    every runtime available (bundled first: the first tests need those)."""
    wanted = [FIXTURE_MODULES[f] for f in dict.fromkeys(fixture_names) if f in FIXTURE_MODULES]
    for runtime in available_runtimes():
        for config, name in wanted:
            _submit(config, name, runtime)


def stop_prebuilds() -> None:
    """Drop builds not yet started (at session end: nothing will use them)."""
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def small_arena(module: ModuleType, size: int) -> Iterator[None]:
    """The module's arena set to `size` bytes for a while (then back to its size).
    Each change makes a new arena; the old ones are kept (set_arena_bytes never frees)."""
    before = module.arena_bytes()
    module.set_arena_bytes(size)
    try:
        yield
    finally:
        module.set_arena_bytes(before)


def assert_names_arena_and_remedies(error: BaseException, size: int) -> None:
    """A full arena's MemoryError says how big the arena is and how to raise it."""
    text = str(error)
    assert isinstance(error, MemoryError), repr(error)
    for words in (f"{size} bytes", "arena_bytes", "KSBIND_ARENA_BYTES", "set_arena_bytes"):
        assert words in text, (words, text)


def examples(target: str, runtime: str = "bundled") -> ModuleType:
    return built("examples.yaml", f"examples_{target}", runtime)


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 600,
               cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run Python code in a fresh process (the test interpreter), capturing output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([PYTHON, "-c", code], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session", params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """The runtime the module fixtures are built against (each test runs on both)."""
    require_runtime(request.param)
    return str(request.param)


def _fixture_module(fixture: str, runtime: str) -> ModuleType:
    config, name = FIXTURE_MODULES[fixture]
    return built(config, name, runtime)


@pytest.fixture(scope="session")
def ks_examples(runtime: str) -> ModuleType:
    return _fixture_module("ks_examples", runtime)


@pytest.fixture(scope="session")
def py_examples(runtime: str) -> ModuleType:
    return _fixture_module("py_examples", runtime)


@pytest.fixture(scope="session")
def relu3_ks(runtime: str) -> ModuleType:
    return _fixture_module("relu3_ks", runtime)


@pytest.fixture(scope="session")
def torch_ops(runtime: str) -> ModuleType:
    return _fixture_module("torch_ops", runtime)


@pytest.fixture(scope="session")
def torch_lib(runtime: str) -> ModuleType:
    return _fixture_module("torch_lib", runtime)


@pytest.fixture(scope="session")
def relu3_torch(runtime: str) -> ModuleType:
    return _fixture_module("relu3_torch", runtime)
