"""Shared helpers for the end-to-end tests: one build cache per test session,
and each distinct module compiled once per session (later requests import the
cached build).

``KSBIND_TEST_CACHE_DIR`` keeps the cache between sessions (faster local
reruns); by default every session starts cold, so CI really compiles.
"""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
PYTHON = sys.executable


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


@functools.lru_cache(maxsize=None)
def built(config: str, name: str | None = None) -> ModuleType:
    """Build (once per session) a module of a config under configs/."""
    import dataclasses

    from ksbind import load_config
    from ksbind.build import build_spec

    specs = load_config(CONFIGS / config)
    spec = next(s for s in specs if name is None or s.name == name)
    # Generated files go to a session folder, not the repository's build/.
    spec = dataclasses.replace(spec, output=session_output_dir() / spec.name)
    return build_spec(spec, cache_dir=session_cache_dir(), quiet=True)


def examples(target: str) -> ModuleType:
    return built("examples.yaml", f"examples_{target}")


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 600,
               cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run Python code in a fresh process (the test interpreter), capturing output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([PYTHON, "-c", code], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def ks_examples() -> ModuleType:
    return examples("ks")


@pytest.fixture(scope="session")
def py_examples() -> ModuleType:
    return examples("python")


@pytest.fixture(scope="session")
def relu3_ks() -> ModuleType:
    return built("relu3.yaml")
