"""What the framework targets' build kinds share (torch_build.py's ``TORCH`` and
jax_build.py's ``JAX``): the cache key of a library of ks code plus generated glue
beside a Python wrapper, the unit holding the user's C++ with the generated loops,
and building an entry once per key (under its locks: ``building``) and importing its wrapper
once per process (``imported``).

Each kind keeps what is its own: its framework's headers and version, its flags,
which units it compiles and what runs beside the compiles.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

from ksbind.backend.compile import shared_text
from ksbind.backend.loader import import_wrapper
from ksbind.backend.toolchain import compiler, hash_include_path, hash_target_headers, ks_include_dirs
from ksbind.cache.entries import CacheEntry
from ksbind.cache.keys import Hasher, without_stamp
from ksbind.codegen.render import RenderedModule
from ksbind.fileio import write_atomic
from ksbind.log import get_logger
from ksbind.spec import ModuleSpec

_cache_log = get_logger("cache")

# Per process, by nature: orders building an entry and importing its wrapper between this
# process's threads (other processes: the entry's lock). The wrapper imported is remembered by
# the loader (ksbind/backend/loader.py's import_wrapper), the one place loaded modules are kept.
_lock = threading.Lock()


def cache_key(spec: ModuleSpec, rendered: RenderedModule, target: str, framework: tuple[str, str],
              cflags: Sequence[str], extra: Sequence[tuple[str, str]] = ()) -> str:
    """The entry's key: the target, its framework's version (``(label, version)``), the module's
    name, the compiler and flags, ``extra`` parts, the generated files (without their stamp),
    the config's and runtime's sources with the headers beside them, and what the include path
    reaches."""
    h = Hasher.with_environment()
    h.add_text("target", target)
    h.add_text(*framework)
    h.add_text("name", spec.name)
    h.add_text("cxx", "\0".join(compiler()))
    h.add_text("cflags", "\0".join(cflags))
    h.add_text("fast_math", str(spec.fast_math))
    for label, value in extra:
        h.add_text(label, value)
    for name in sorted(rendered.files):
        h.add_bytes(f"generated:{name}", without_stamp(rendered.files[name].encode("utf-8", "surrogateescape")))
    sources = [*spec.cpp, *([] if spec.runtime.bundled else spec.runtime.sources)]
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}:{src.name}")
    for d in dict.fromkeys(s.parent for s in sources):
        h.add_dir_headers(d)
    hash_include_path(h, ks_include_dirs(spec))
    hash_target_headers(h, spec.target)
    return h.hexdigest()


def ks_unit(spec: ModuleSpec, name: str, text: str, shared_root: Path | None) -> Path:
    """The unit of the user's C++ and the generated loops, ``text``: content-addressed under the
    object cache's root when there is one (ksbind/backend/compile.py, shared_text), else
    ``name`` beside the generated files (rewritten only when it changed)."""
    if shared_root is not None:
        return shared_text(shared_root, name, text)
    unit = spec.output / name
    if not unit.is_file() or unit.read_text(encoding="utf-8") != text:
        write_atomic(unit, text)
    return unit


@contextlib.contextmanager
def building(spec: ModuleSpec, entry: CacheEntry) -> Iterator[bool]:
    """Hold this process's build lock, and the entry's lock while it is not whole (another
    process may build it meanwhile), for a build kind that compiles the entry itself: yields
    whether it must (False: the entry is whole). The kind then imports its wrapper with
    ``imported``, inside the block. A damaged entry is rebuilt even when this process has its
    module: the next process finds it whole, and the module in use here is the same build."""
    with _lock:
        if entry.is_built():
            _cache_log.debug("%s: cached build %s", spec.name, entry.module_path)
            yield False
            return
        with entry.lock():
            yield not entry.is_built()  # another process may have built it while we waited


def imported(spec: ModuleSpec, entry: CacheEntry) -> ModuleType:
    """The entry's wrapper, imported once per process (inside ``building``'s block; the loader
    remembers it, by its file, with every other wrapper)."""
    return import_wrapper(spec.name, entry.dir / f"{spec.name}.py")


__all__ = ["cache_key", "ks_unit", "building", "imported"]
