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
import textwrap
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ksbind.spec import ModuleSpec, RuntimeSpec

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
PYTHON = sys.executable

#: KSBIND_TEST_RUNTIMES=bundled narrows them (CI's runs on the other Python versions).
RUNTIMES = tuple(r for r in os.environ.get("KSBIND_TEST_RUNTIMES", "bundled,ksc").split(",") if r) or ("bundled",)

#: The modules behind each session fixture: (config under configs/, module name).
FIXTURE_MODULES: dict[str, tuple[str, str | None]] = {
    "ks_examples": ("examples.yaml", "examples_ks"),
    "py_examples": ("examples.yaml", "examples_python"),
    "py_calls": ("calls.yaml", None),
    "relu3_ks": ("relu3.yaml", None),
    "torch_ops": ("torch_ops.yaml", "torch_ops"),
    "torch_lib": ("torch_ops.yaml", "torch_ops_lib"),
    "relu3_torch": ("relu3_torch.yaml", None),
    "rownorm_fast": ("torch_rownorm_fast.yaml", None),
}
#: Fixtures built on the bundled runtime only (what they test does not depend on the runtime).
BUNDLED_ONLY = frozenset({"rownorm_fast"})


def ksc_runtime() -> Path:
    """ksc's real runtime, used as a config's `runtime: {include_dirs, sources}` would."""
    from tests.conftest import (
        SHARED,  # here, not at import: conftest imports this module's fixtures
    )

    return SHARED / "ksc" / "runtime"


def ksc_runtime_missing() -> str | None:
    """Why the ksc variants cannot run here, or None."""
    folder = ksc_runtime()
    if (folder / "knossos.h").is_file() and (folder / "knossos.cpp").is_file():
        return None
    return f"ksc's runtime is not in {folder} (../shared/ksc absent)"


def available_runtimes() -> tuple[str, ...]:
    return RUNTIMES if ksc_runtime_missing() is None else tuple(r for r in RUNTIMES if r == "bundled")


def require_runtime(runtime: str) -> None:
    reason = ksc_runtime_missing() if runtime == "ksc" else None
    if reason:
        pytest.skip(reason)


#: lru_cache is not thread-safe: two prebuild threads could each make a session folder.
_session_dirs_lock = threading.Lock()


def _once(f: Callable[[], Path]) -> Callable[[], Path]:
    """Call f once per session, whichever thread asks first."""
    cached = functools.lru_cache(maxsize=None)(f)

    @functools.wraps(f)
    def wrapper() -> Path:
        with _session_dirs_lock:
            return cached()
    return wrapper


@_once
def session_cache_dir() -> Path:
    env = os.environ.get("KSBIND_TEST_CACHE_DIR")
    if env:
        Path(env).mkdir(parents=True, exist_ok=True)
        return Path(env)
    d = Path(tempfile.mkdtemp(prefix="ksbind-test-cache-"))
    atexit.register(shutil.rmtree, d, True)
    return d


@_once
def session_output_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="ksbind-test-out-"))
    atexit.register(shutil.rmtree, d, True)
    return d


def variant_name(name: str, runtime: str) -> str:
    """A module's name on a runtime. The variants need names of their own: CPython
    loads one extension module per name and process (importing a second file of
    the same name returns the first module), and a torch.library namespace can
    be defined once per process."""
    return name if runtime == "bundled" else f"{name}_{runtime}"


def with_runtime(spec: ModuleSpec, runtime: str) -> ModuleSpec:
    """A ModuleSpec on the given runtime, writing its generated files to a session folder."""
    name = variant_name(spec.name, runtime)
    spec = dataclasses.replace(spec, name=name, output=session_output_dir() / runtime / name)
    if runtime == "bundled":
        return dataclasses.replace(spec, runtime=RuntimeSpec())
    # Hand-written ks C++ includes only knossos.h; ksc's knossos.cpp (which
    # ksc's own output #includes) defines the runtime's globals.
    folder = ksc_runtime()
    spec = dataclasses.replace(spec, runtime=RuntimeSpec(False, (folder,), (folder / "knossos.cpp",)))
    if spec.torch_library:
        spec = dataclasses.replace(spec, torch_library=variant_name(spec.torch_library, runtime))
    return spec


def _build(config: str, name: str | None, runtime: str) -> ModuleType:
    from ksbind import load_config
    from ksbind.pipeline import build_spec

    specs = load_config(CONFIGS / config)
    spec = next(s for s in specs if name is None or s.name == name)
    return build_spec(with_runtime(spec, runtime), cache_dir=session_cache_dir(), quiet=True)


_builds: dict[tuple[str, str | None, str], Future[ModuleType]] = {}
_builds_lock = threading.Lock()
_pools: dict[str, ThreadPoolExecutor] = {}


def _pool(config: str) -> ThreadPoolExecutor:
    """Torch builds run one at a time anyway (the torch build holds a lock): a pool of
    their own, so they never hold up the ks/python builds the first tests need.
    Two of those at once: each runs KSBIND_JOBS compilers, and two overlap one
    module's serial parts (linking, importing) with another's compiles."""
    kind = "torch" if config.startswith(("torch", "relu3_torch")) else "ks"
    if kind not in _pools:
        _pools[kind] = ThreadPoolExecutor(max_workers=1 if kind == "torch" else 2,
                                          thread_name_prefix=f"ksbind-prebuild-{kind}")
    return _pools[kind]


def _submit(config: str, name: str | None, runtime: str) -> Future[ModuleType]:
    key = (config, name, runtime)
    with _builds_lock:
        if key not in _builds:
            _builds[key] = _pool(config).submit(_build, config, name, runtime)
        return _builds[key]


def built(config: str, name: str | None = None, runtime: str = "bundled") -> ModuleType:
    """Build (once per session) a module of a config under configs/ on a runtime."""
    require_runtime(runtime)
    return _submit(config, name, runtime).result()


def prebuild(fixture_names: Iterable[str]) -> None:
    """Start building, in the background, the modules behind these fixtures, on
    every runtime available (bundled first: the first tests need those)."""
    names = set(fixture_names)
    wanted = [(fixture, module) for fixture, module in FIXTURE_MODULES.items() if fixture in names]
    for runtime in available_runtimes():
        for fixture, (config, name) in wanted:
            if runtime == "bundled" or fixture not in BUNDLED_ONLY:
                _submit(config, name, runtime)


def stop_prebuilds() -> None:
    """Drop builds not yet started (at session end: nothing will use them)."""
    for pool in _pools.values():
        pool.shutdown(wait=False, cancel_futures=True)


#: float32 gradients checked by finite differences: eps and tolerances to match.
F32 = dict(eps=1e-3, atol=2e-2, rtol=2e-2)


def gradcheck32(fn: Callable[..., Any], *inputs: Any) -> bool:
    """torch.autograd.gradcheck at float32 tolerances (ks computes in float32)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "not double precision": float32 is the point
        return bool(torch.autograd.gradcheck(fn, inputs, **F32))  # type: ignore[arg-type]


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


#: What LeakSanitizer prints when it fails itself (its tracer crashed), not when it finds a leak.
LSAN_FATAL = "LeakSanitizer has encountered a fatal error"


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 600,
               cwd: Path = REPO, unset: Iterable[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run Python code (dedented) in a fresh process of the test interpreter, capturing
    output: this process's environment, less `unset`, plus `env`."""
    drop = set(unset)
    full_env = {k: v for k, v in os.environ.items() if k not in drop}
    full_env.update(env or {})
    for _ in range(2):
        proc = subprocess.run([PYTHON, "-c", textwrap.dedent(code)], cwd=cwd, env=full_env, capture_output=True,
                              text=True, timeout=timeout)
        # Under scripts/test_asan.sh, LeakSanitizer's own tracer can crash at exit on a loaded
        # machine ("LeakSanitizer has encountered a fatal error", no leak report): run once more.
        # A leak is reported as "detected memory leaks" and is never retried.
        if LSAN_FATAL not in proc.stderr or "detected memory leaks" in proc.stderr:
            break
    return proc



@pytest.fixture(scope="session", params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """The runtime the module fixtures are built against (each test runs on both)."""
    require_runtime(request.param)
    return str(request.param)


def _fixture_module(fixture: str, runtime: str) -> ModuleType:
    config, name = FIXTURE_MODULES[fixture]
    return built(config, name, runtime)


def _module_fixture(fixture: str, doc: str) -> Any:
    """The session fixture of FIXTURE_MODULES[fixture]: on each runtime (the `runtime`
    fixture), or on the bundled one for BUNDLED_ONLY."""
    if fixture in BUNDLED_ONLY:
        def on_bundled() -> ModuleType:
            return _fixture_module(fixture, "bundled")
        function: Callable[..., ModuleType] = on_bundled
    else:
        def on_runtime(runtime: str) -> ModuleType:
            return _fixture_module(fixture, runtime)
        function = on_runtime
    function.__name__ = function.__qualname__ = fixture
    function.__doc__ = doc
    return pytest.fixture(scope="session", name=fixture)(function)


ks_examples = _module_fixture("ks_examples", "examples/ on the ks target (configs/examples.yaml).")
py_examples = _module_fixture("py_examples", "examples/ on the python target (configs/examples.yaml).")
py_calls = _module_fixture("py_calls", "examples/calls on the python target: what a call survives "
                                       "(tests/test_calls.py).")
relu3_ks = _module_fixture("relu3_ks", "relu3 on the ks target (configs/relu3.yaml).")
torch_ops = _module_fixture("torch_ops", "The torch target's operators (configs/torch_ops.yaml).")
torch_lib = _module_fixture("torch_lib", "The torch target's operators as a torch.library (configs/torch_ops.yaml).")
relu3_torch = _module_fixture("relu3_torch", "relu3 on the torch target (configs/relu3_torch.yaml).")
rownorm_fast = _module_fixture("rownorm_fast", "rownorm (vmap) compiled with fast_math: true, on the bundled runtime.")


# The torch tests' short names (tests/test_torch*.py; test_cpu_capability.py has its own `ops`).


@pytest.fixture
def ops(torch_ops: ModuleType) -> ModuleType:
    """torch_ops, by the name the torch tests call it."""
    return torch_ops


@pytest.fixture
def ns(runtime: str, torch_lib: ModuleType) -> Any:
    """torch.ops.<the library of torch_lib> (each runtime's variant registers its own)."""
    import torch

    return getattr(torch.ops, variant_name("ksbind_ops", runtime))
