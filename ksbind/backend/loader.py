"""Loading built extension modules into this process: ``import_from_path``
imports one from its file (once per path), and versioned names give fresh code
after every edit, in the same process.

CPython loads an extension module once per name: importing a second file
built under the same name hands back the module already loaded, so a rebuilt
module would silently keep running its old code (PyTorch's cpp_extension had
this bug; pybind11 users keep meeting it). ksbind therefore remembers which
build (cache key) each module name was loaded from in this process. A build of
the same name whose key differs is built and loaded under a *versioned* name,
``NAME_v<first 10 hex digits of its key>`` (its torch_library namespace
likewise), and ``sys.modules[NAME]`` then points at it, so ``import NAME``
gets the newest code too. Earlier module objects keep working: each version
is its own shared library, with its own arena. An unchanged build returns the
module already loaded.

The versioned name comes from the key, so every process builds the same
version of the same code under the same name, and the build cache serves it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when needed: a no-op build (ksbind/build_api.py) loads modules with this alone
    from ksbind.spec import ModuleSpec

#: Per process, by nature: an extension module file imported here (an .so cannot be unloaded).
_imported: dict[str, ModuleType] = {}


def _error(message: str, path: Path) -> Exception:
    from ksbind.errors import BuildError, Location  # only on failure: a no-op build imports nothing else

    return BuildError(message, Location(str(path)))
_import_lock = threading.Lock()


def import_from_path(name: str, path: Path) -> ModuleType:
    """Import the extension module ``name`` from ``path`` (once per path per process).

    The module is also put in ``sys.modules[name]`` so pickling and
    ``import name`` find it.
    """
    key = os.path.realpath(path)
    with _import_lock:
        if key in _imported:
            return _imported[key]
        if not os.path.isfile(key):
            raise _error(f"cannot import {name!r}: {path} is gone (its cache entry was removed while it "
                         "was being loaded?): build again", path)
        spec = importlib.util.spec_from_file_location(name, key)
        if spec is None or spec.loader is None:
            raise _error(f"cannot import {name!r}: not a loadable module", path)
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError as e:
            raise _error(f"cannot import {name!r}: {e}", path) from None
        _imported[key] = module
        sys.modules[name] = module
        return module


#: Per process, by nature: a generated wrapper imported here, by its file.
_wrappers: dict[str, ModuleType] = {}
_wrapper_lock = threading.RLock()  # a wrapper's own imports may build or load (not under _import_lock)


def import_wrapper(name: str, path: Path) -> ModuleType:
    """Import a generated Python wrapper (the torch and jax targets' ``NAME.py``) from ``path`` as
    ``name`` (once per path per process: a wrapper registers ops); it is in ``sys.modules`` while
    it runs (its own imports may need it) and taken out again if it fails."""
    key = os.path.realpath(path)
    with _wrapper_lock:
        if key not in _wrappers:
            _wrappers[key] = _run_wrapper(name, path)
        return _wrappers[key]


def _run_wrapper(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _error(f"cannot import {name!r}: not a loadable module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


#: Per process, by nature: module name -> key of the build loaded under that name here.
_loaded: dict[str, str] = {}
_lock = threading.Lock()


def version_suffix(key: str) -> str:
    return f"_v{key[:10]}"


def needs_version(name: str, key: str) -> bool:
    """Whether this process already loaded another build under ``name``."""
    with _lock:
        loaded = _loaded.get(name)
    return loaded is not None and loaded != key


def note_loaded(name: str, key: str) -> None:
    with _lock:
        _loaded.setdefault(name, key)


def versioned_spec(spec: ModuleSpec, key: str) -> ModuleSpec:
    """The same module under a name of its own (and a torch_library namespace of its own)."""
    import dataclasses

    suffix = version_suffix(key)
    return dataclasses.replace(
        spec, name=spec.name + suffix, versioned_from=spec.versioned_from or spec.name,
        torch_library=spec.torch_library + suffix if spec.torch_library is not None else None,
        output=spec.output / "versions" / (spec.name + suffix))


#: Modules whose import starts threads (numpy: OpenBLAS's thread server), imported before an
#: import thread yields (import_meanwhile's ``nice``): a thread inherits its creator's
#: niceness for good, and these threads then compute for the user. torch starts none on
#: import (tests/test_scheduling.py checks it).
BORN_WITH_THREADS = ("numpy",)
#: Per process: the modules whose import a thread was started for (an import happens once).
_started: set[str] = set()
_started_lock = threading.Lock()


def import_meanwhile(name: str, nice: int = 0, preload: Sequence[Path] = ()) -> threading.Thread | None:
    """Start importing module ``name`` (torch, jax) on a thread while ksc or the compilers run: the
    generated wrapper imports it next (Python's import lock makes that import wait for this one,
    or raise its error), and the import (about a second in a new process) then costs only the CPU
    the compilers leave. ``nice``: that thread's niceness (Linux: a thread's own; elsewhere
    none), so that it takes only the CPU the compilers leave. ``preload``: shared libraries
    the import loads, loaded first with ctypes, which lets go of the GIL while the dynamic
    linker works (Python's import of an extension module keeps it: for torch._C, 0.2 s in which
    ksbind's own thread could not run); a library that fails to load is left to the import.
    Returns the thread, or None when the module is imported or being imported already."""
    with _started_lock:
        if name in sys.modules or name in _started:
            return None
        _started.add(name)

    def run() -> None:
        try:
            if nice and sys.platform.startswith("linux"):
                for first in BORN_WITH_THREADS:  # their threads must not inherit the niceness
                    if importlib.util.find_spec(first) is not None:
                        importlib.import_module(first)
                _renice_this_thread(nice)
            for library in preload:
                _load_library(library)
            importlib.import_module(name)
        except Exception:  # the wrapper's own import raises it, attributed to the user's call
            pass

    importer = threading.Thread(target=run, name=f"ksbind-import-{name}", daemon=True)
    importer.start()
    return importer


def _load_library(path: Path) -> None:
    import ctypes

    try:
        ctypes.CDLL(str(path))  # RTLD_LOCAL: what the import's own loading of it does
    except OSError:
        pass


def _renice_this_thread(nice: int) -> None:
    """Raise the calling thread's niceness by ``nice`` (Linux's setpriority names a thread by
    its id). The threads it starts inherit it (see BORN_WITH_THREADS)."""
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
    except OSError:
        pass  # not allowed here: the import runs at the build's own priority


__all__ = ["import_from_path", "import_meanwhile", "import_wrapper", "needs_version", "note_loaded", "versioned_spec",
           "version_suffix"]
