"""Build jax-target modules through ksbind's one build pipeline
(ksbind/backend/compile.py): a plain shared library of XLA FFI handlers,
compiled against the FFI headers jaxlib ships (``jax.ffi.include_dir()``,
header-only: nothing of jaxlib or Python is linked), beside the generated
pure-Python wrapper ``NAME.py`` that loads it with ctypes.

One translation unit, ``jax_unit.cpp`` (written beside the generated files):
the config's C++ sources, then the generated handlers, so the ks functions
inline into the handlers' loops; plus the runtime's own sources, if any.

The cache entry holds ``NAME_jaxffi.so``, ``NAME.py`` and its stub
``NAME.pyi``; its key covers the generated files, the config's sources and
the headers beside them, the runtime's and ksbind's headers, the compiler and
flags, and jaxlib's version (its FFI headers). Since the library has no
Python in it, the same file runs under any CPython and any jaxlib whose FFI
API is at least the one it was built against (docs/jax.md).
"""
from __future__ import annotations

import os
import shlex
import threading
from pathlib import Path
from types import ModuleType

from ksbind.backend.compile import install_entry, object_cache, shared_copies, shared_text
from ksbind.backend.loader import import_wrapper
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import KS_FLAGS, Toolchain, compiler, hash_include_path, ks_include_dirs
from ksbind.cache.entries import CacheEntry
from ksbind.cache.keys import Hasher, without_stamp
from ksbind.cache.layout import cache_root
from ksbind.codegen.output import write_atomic, write_generated
from ksbind.codegen.render import RenderedModule
from ksbind.codegen.targets.jax import lib_name
from ksbind.log import get_logger
from ksbind.spec import ModuleSpec

#: As the torch target's kernels (ksbind/backend/torch_build.py): -O3 with
#: -fno-trapping-math and -fno-math-errno lets g++ vectorise the elementwise
#: loops with the scalar ks function inlined. C++20: ksbind/jax.h's templated
#: lambdas (the FFI headers need C++17). No Python include folder at all.
CFLAGS = ("-O3", "-std=c++20", "-fPIC", "-fvisibility=hidden", "-fno-trapping-math", "-fno-math-errno", "-g0",
          "-DKSBIND_NO_PYTHON=1", "-Wno-unused-variable", *KS_FLAGS)
UNIT = "jax_unit.cpp"
LIB_EXT = ".so"

_loaded: dict[str, ModuleType] = {}
_cache_log = get_logger("cache")
_lock = threading.Lock()


def ffi_include_dir() -> Path:
    import jax.ffi

    return Path(jax.ffi.include_dir())


def jaxlib_version() -> str:
    import jaxlib

    return str(getattr(jaxlib, "__version__", "unknown"))


def flags() -> tuple[str, ...]:
    return CFLAGS + tuple(shlex.split(os.environ.get("KSBIND_CXXFLAGS", "")))


def toolchain(spec: ModuleSpec) -> Toolchain:
    """ksbind's and the runtime's folders, then jaxlib's FFI headers (-isystem)."""
    return Toolchain("jax", compiler(), flags(), ks_include_dirs(spec), (ffi_include_dir(),),
                     key_parts=(("jaxlib", jaxlib_version()),))


def unit_text(spec: ModuleSpec, handlers: Path) -> str:
    lines = ["// Written by ksbind's jax build: ks sources and FFI handlers in one unit,",
             "// so ks functions inline into the handlers' loops."]
    lines += [f'#include "{p.resolve()}"' for p in spec.cpp]
    lines.append(f'#include "{handlers.resolve()}"')
    return "\n".join(lines) + "\n"


def cache_key(spec: ModuleSpec, rendered: RenderedModule) -> str:
    h = Hasher.with_environment()
    h.add_text("target", "jax")
    h.add_text("jaxlib", jaxlib_version())
    h.add_text("name", spec.name)
    h.add_text("cxx", "\0".join(compiler()))
    h.add_text("cflags", "\0".join(flags()))
    h.add_text("fast_math", str(spec.fast_math))
    for name in sorted(rendered.files):
        h.add_bytes(f"generated:{name}", without_stamp(rendered.files[name].encode("utf-8", "surrogateescape")))
    sources = [*spec.cpp, *([] if spec.runtime.bundled else spec.runtime.sources)]
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}:{src.name}")
    for d in dict.fromkeys(s.parent for s in sources):
        h.add_dir_headers(d)
    hash_include_path(h, ks_include_dirs(spec))
    return h.hexdigest()


def module_key(spec: ModuleSpec, rendered: RenderedModule) -> str:
    return cache_key(spec, rendered)


def jax_units(spec: ModuleSpec, generated: list[Path], shared_root: Path | None) -> list[Unit]:
    """The library's units: the one unit of ks code and handlers, and the runtime's sources."""
    from ksbind.backend.toolchain import FAST_MATH_FLAGS

    handlers = next(p for p in generated if p.suffix == ".cpp")
    copies = shared_copies(shared_root, [handlers]) if shared_root is not None else {handlers: handlers}
    text = unit_text(spec, copies[handlers])
    if shared_root is not None:
        unit = shared_text(shared_root, UNIT, text)
    else:
        unit = spec.output / UNIT
        if not unit.is_file() or unit.read_text(encoding="utf-8") != text:
            write_atomic(unit, text)
    ks_flags = FAST_MATH_FLAGS if spec.fast_math else ()
    runtime_sources = [] if spec.runtime.bundled else list(spec.runtime.sources)
    return [Unit(unit, ks_flags, parts=((copies[handlers], handlers),)), *(Unit(Path(s)) for s in runtime_sources)]


def build_jax_module(spec: ModuleSpec, rendered: RenderedModule, *, cache_dir: Path | None = None) -> ModuleType:
    """Generate, compile (or reuse the cache) and import a jax-target module."""
    generated = write_generated(spec.output, rendered)
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    entry = CacheEntry(root, lib_name(spec.name), cache_key(spec, rendered), suffix=LIB_EXT, target="jax")
    wrapper_path = entry.dir / f"{spec.name}.py"
    with _lock:
        key = str(wrapper_path)
        if key in _loaded:
            return _loaded[key]
        if not entry.is_built():
            with entry.lock():
                if not entry.is_built():  # another process may have built it while we waited
                    _compile(spec, rendered, entry, generated)
        else:
            _cache_log.debug("%s: cached build %s", spec.name, entry.module_path)
        _loaded[key] = import_wrapper(spec.name, wrapper_path)
        return _loaded[key]


def _compile(spec: ModuleSpec, rendered: RenderedModule, entry: CacheEntry, generated: list[Path]) -> None:
    tc = toolchain(spec)
    objects = object_cache(entry.root)
    units = jax_units(spec, generated, entry.root if objects is not None else None)

    def wrapper_first(staging: Path) -> None:
        entry.dir.mkdir(parents=True, exist_ok=True)
        for fname in (f"{spec.name}.py", f"{spec.name}.pyi"):
            if fname in rendered.files:
                write_atomic(entry.dir / fname, rendered.files[fname])

    install_entry(entry, units, tc, objects=objects, log_dir=spec.output, label=spec.name,
                  before_install=wrapper_first)


__all__ = ["build_jax_module", "module_key", "cache_key", "jax_units", "toolchain", "unit_text", "CFLAGS",
           "ffi_include_dir", "jaxlib_version"]
