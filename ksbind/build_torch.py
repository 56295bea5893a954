"""Build torch-target modules with torch.utils.cpp_extension, under ksbind's cache.

The cache key covers every input (generated files, the config's cpp sources
and headers beside them, runtime and ksbind headers, flags, compiler, torch
and Python versions); when it matches, the cached extension and wrapper are
imported directly: torch.utils.cpp_extension is not even imported.

Translation units (compiled in parallel by ninja):
- ``ks_unit.cpp`` (written here): the config's cpp sources and the generated
  entry points in one unit, so ks functions inline into the elementwise and
  vmap loops. It needs only ATen's core headers.
- ``module.cpp``: the pybind11 module, the one unit with torch's Python
  headers (the slow part).
- the runtime's own sources, if any.

The cache entry holds ``NAME_ext`` (the extension), ``NAME.py`` (the wrapper
users import: what ``ksbind.build`` returns) and its stub ``NAME.pyi``; that
folder on sys.path makes ``import NAME`` work without ksbind's build.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

from . import buildcache
from .output import write_atomic, write_generated
from .toolchain import KS_FLAGS, first_error, hash_include_path, ks_include_dirs
from .config import ModuleSpec
from .errors import BuildError, Location
from .render import RenderedModule
from .targets.torch import ext_name

#: -O3 with -fno-trapping-math lets g++ turn a scalar function's branches into
#: vector selects and vectorise the elementwise loops (results are the same IEEE
#: values; only floating-point trap semantics are given up); -fopenmp makes
#: ATen's at::parallel_for (OpenMP in torch's CPU builds) run in parallel.
CFLAGS = ("-O3", "-fno-trapping-math", "-fopenmp", "-g0", "-fvisibility=hidden", "-Wno-unused-variable", *KS_FLAGS)
LDFLAGS = ("-fopenmp",)
UNIT = "ks_unit.cpp"

_COMPILER_ERROR = re.compile(r"^\S+:\d+(?::\d+)?: (?:fatal )?error: .*$", re.MULTILINE)
_loaded: dict[str, ModuleType] = {}
_lock = threading.Lock()


def _flags() -> tuple[tuple[str, ...], tuple[str, ...]]:
    extra = tuple(shlex.split(os.environ.get("KSBIND_CXXFLAGS", "")))
    return CFLAGS + extra, LDFLAGS


def _include_dirs(spec: ModuleSpec, out_dir: Path) -> tuple[Path, ...]:
    """The generated files' folder, the runtime's folder(s), then ksbind's."""
    return tuple(dict.fromkeys([out_dir.resolve(), *ks_include_dirs(spec)]))


def unit_text(spec: ModuleSpec, entry_unit: Path) -> str:
    """The ks translation unit: the config's C++ and the entry points, included."""
    lines = ["// Written by ksbind's torch build: ks sources and entry points in one unit,",
             "// so ks functions inline into the entry points' loops."]
    lines += [f'#include "{p.resolve()}"' for p in spec.cpp]
    lines.append(f'#include "{entry_unit.resolve()}"')
    return "\n".join(lines) + "\n"


def cache_key(spec: ModuleSpec, rendered: RenderedModule, include_dirs: tuple[Path, ...],
              cflags: tuple[str, ...], ldflags: tuple[str, ...]) -> str:
    import torch

    h = buildcache.Hasher.with_environment()
    h.add_text("target", "torch")
    h.add_text("torch", torch.__version__)
    h.add_text("name", spec.name)
    h.add_text("cxx", os.environ.get("CXX", "c++"))
    h.add_text("cflags", "\0".join(cflags))
    h.add_text("ldflags", "\0".join(ldflags))
    for name in sorted(rendered.files):
        text = rendered.files[name].encode("utf-8", "surrogateescape")
        h.add_bytes(f"generated:{name}", buildcache.without_stamp(text))
    sources = [*spec.cpp, *([] if spec.runtime.bundled else spec.runtime.sources)]
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}:{src.name}")
    for d in dict.fromkeys(s.parent for s in sources):
        h.add_dir_headers(d)
    hash_include_path(h, include_dirs[1:])
    return h.hexdigest()


def module_key(spec: ModuleSpec, rendered: RenderedModule) -> str:
    """The cache key build_torch_module will use for this module."""
    cflags, ldflags = _flags()
    return cache_key(spec, rendered, _include_dirs(spec, spec.output), cflags, ldflags)


def build_torch_module(spec: ModuleSpec, rendered: RenderedModule, *, cache_dir: Path | None = None,
                       quiet: bool = False) -> ModuleType:
    """Generate, compile (or reuse the cache) and import a torch-target module."""
    generated = write_generated(spec.output, rendered)
    out_dir = spec.output
    include_dirs = _include_dirs(spec, out_dir)
    cflags, ldflags = _flags()
    root = Path(cache_dir) if cache_dir is not None else buildcache.cache_root()
    ext = ext_name(spec.name)
    entry = buildcache.CacheEntry(root, ext, cache_key(spec, rendered, include_dirs, cflags, ldflags),
                                 target="torch")
    wrapper_path = entry.dir / f"{spec.name}.py"
    with _lock:
        if str(entry.module_path) not in _loaded:
            if not entry.is_built():
                with entry.lock():
                    if not entry.is_built():
                        _compile(spec, rendered, entry, generated, include_dirs, cflags, ldflags, quiet)
            if str(entry.module_path) not in _loaded:
                _loaded[str(entry.module_path)] = buildcache.import_from_path(ext, entry.module_path)
        sys.modules[ext] = _loaded[str(entry.module_path)]
        key = str(wrapper_path)
        if key not in _loaded:
            _loaded[key] = _import_wrapper(spec.name, wrapper_path)
        return _loaded[key]


def _import_wrapper(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot import {name!r}: not a loadable module", Location(str(path)))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _compile(spec: ModuleSpec, rendered: RenderedModule, entry: buildcache.CacheEntry, generated: list[Path],
             include_dirs: tuple[Path, ...], cflags: tuple[str, ...], ldflags: tuple[str, ...],
             quiet: bool) -> None:
    from torch.utils import cpp_extension  # only on a cache miss: it is slow to import

    _ninja_on_path()

    start = time.monotonic()
    ext = entry.name
    by_name = {p.name: p for p in generated}
    entry_unit = by_name.get("entry_points.cpp", by_name["module.cpp"])
    runtime_sources = [] if spec.runtime.bundled else list(spec.runtime.sources)
    with entry.staging() as tmp:
        unit = tmp / UNIT
        unit.write_text(unit_text(spec, entry_unit), encoding="utf-8")
        sources = [unit] + ([by_name["module.cpp"]] if entry_unit.name != "module.cpp" else []) + runtime_sources
        if not quiet:
            print(f"ksbind: {spec.name}: compiling {len(sources)} files with torch.utils.cpp_extension",
                  file=sys.stderr, flush=True)
        # cpp_extension renames a module rebuilt with other sources in the same
        # process (NAME_v1); ksbind's cache already tells builds apart.
        versioner = getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None)
        if versioner is not None and hasattr(versioner, "entries"):
            versioner.entries.pop(ext, None)
        try:
            module = cpp_extension.load(
                name=ext, sources=[str(s) for s in sources], extra_cflags=list(cflags),
                extra_ldflags=list(ldflags), extra_include_paths=[str(d) for d in include_dirs],
                build_directory=str(tmp), verbose=False, with_cuda=False, is_python_module=True)
        except Exception as e:  # cpp_extension raises RuntimeError with the compiler's output
            raise _build_error(spec, entry_unit, str(e)) from None
        built = tmp / f"{ext}.so"
        if not built.is_file():
            raise BuildError(f"torch.utils.cpp_extension built no {built.name}", Location(str(tmp)))
        # The wrapper goes in first; install() adds the extension, then the manifest
        # that marks the entry complete.
        entry.dir.mkdir(parents=True, exist_ok=True)
        for name in (f"{spec.name}.py", f"{spec.name}.pyi"):
            if name in rendered.files:
                write_atomic(entry.dir / name, rendered.files[name])
        entry.install(built)
    # This process already loaded the extension (from the staging folder): reuse it.
    _loaded[str(entry.module_path)] = module
    if not quiet:
        print(f"ksbind: {spec.name}: done in {time.monotonic() - start:.1f} s ({entry.module_path})",
              file=sys.stderr, flush=True)


def _ninja_on_path() -> None:
    """cpp_extension runs `ninja` from PATH; pip's ninja lives beside this
    interpreter, which is not on PATH when a virtualenv is used unactivated."""
    if shutil.which("ninja") is None:
        bindir = os.path.dirname(sys.executable)
        if os.path.isfile(os.path.join(bindir, "ninja")):
            os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def _build_error(spec: ModuleSpec, where: Path, output: str) -> BuildError:
    log = spec.output / "torch_build.log"
    try:
        log.write_text(output, encoding="utf-8")
        more = f" (full output: {log})"
    except OSError:
        more = ""
    # The compiler's own first error, not cpp_extension's "Error building extension".
    match = _COMPILER_ERROR.search(output)
    first = match.group(0).strip() if match else (first_error(output) or "unknown error")
    return BuildError(f"building {spec.name} with torch.utils.cpp_extension failed: {first}{more}",
                      Location(str(where)))


__all__ = ["build_torch_module", "module_key", "cache_key", "unit_text", "CFLAGS", "LDFLAGS"]
