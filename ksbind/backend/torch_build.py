"""Build torch-target modules through ksbind's one build pipeline
(ksbind/backend/compile.py), with torch's compiler flags, include paths and
libraries (from torch.utils.cpp_extension's helpers) as the target's
toolchain, under ksbind's cache.

The cache key covers every input (generated files, the config's cpp sources
and headers beside them, runtime and ksbind headers, flags, compiler, torch
and Python versions); when it matches, the cached extension and wrapper are
imported directly: torch.utils.cpp_extension is not even imported.

Translation units (compiled in parallel, each from the object cache when
nothing it depends on changed):
- ``ks_unit.cpp`` (written beside the generated files): the config's cpp
  sources and the generated entry points in one unit, so ks functions inline
  into the elementwise and vmap loops. It needs only ATen's core headers.
- ``module.cpp``: the pybind11 module, the one unit with torch's Python
  headers (the slow part); it gets the shared precompiled header of torch's
  and ksbind's pybind11 headers (ksbind/backend/pch.py).
- the runtime's own sources, if any.

The cache entry holds ``NAME_ext`` (the extension), ``NAME.py`` (the wrapper
users import: what ``ksbind.build`` returns) and its stub ``NAME.pyi``; that
folder on sys.path makes ``import NAME`` work without ksbind's build.
"""
from __future__ import annotations

import os
import shlex
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ksbind.backend.compile import (
    init_unit,
    install_entry,
    module_name_flags,
    object_cache,
    shared_copies,
    shared_text,
)
from ksbind.backend.kind import PreparedBuild, Steps
from ksbind.backend.loader import import_from_path, import_wrapper
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import (
    DEBUG_FLAGS,
    FAST_MATH_FLAGS,
    KS_FLAGS,
    Toolchain,
    compiler,
    hash_include_path,
    ks_include_dirs,
    pybind11_two_phase,
)
from ksbind.cache.entries import CacheEntry
from ksbind.cache.keys import Hasher, without_stamp
from ksbind.codegen.output import write_generated
from ksbind.codegen.render import RenderedModule
from ksbind.codegen.targets import get_target
from ksbind.codegen.targets.torch import ext_name
from ksbind.fileio import write_atomic
from ksbind.log import get_logger
from ksbind.spec import ModuleSpec

#: -O3 with -fno-trapping-math lets g++ turn a scalar function's branches into
#: vector selects and vectorise the elementwise loops (results are the same IEEE
#: values; only floating-point trap semantics are given up); -fno-math-errno
#: (as PyTorch builds) lets it call libmvec's vector exp/log/sin/cos/pow in
#: those loops (ksbind/cpu_capability.h; ks code never reads errno); -fopenmp
#: makes ATen's at::parallel_for (OpenMP in torch's CPU builds) run in parallel.
#: No -march: per-CPU code is chosen at run time (ksbind/cpu_capability.h);
#: -ffp-contract=off keeps a*b+c two roundings in the AVX2/AVX-512 copies too
#: (no FMA contraction), so every capability computes the same floats.
CFLAGS = ("-O3", "-fno-trapping-math", "-fno-math-errno", "-ffp-contract=off", "-fopenmp", "-g0",
          "-fvisibility=hidden", "-Wno-unused-variable", *KS_FLAGS)
LDFLAGS = ("-fopenmp",)
UNIT = "ks_unit.cpp"
#: What torch.utils.cpp_extension adds for a Python extension (as it builds one).
TORCH_CFLAGS = ("-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC", "-std=c++20")
#: The shared precompiled header of module.cpp: every header it includes (torch's pybind11
#: and autograd headers through ksbind/torch_pybind.h, and ksbind's). Measured on the GMM
#: module: its compile took 14 s, against 25 s with only the first three (the
#: rest, torch/csrc/autograd/python_variable.h above all, was parsed each time); about 480 MB.
PCH_INCLUDES = ("torch/csrc/utils/pybind.h", "c10/core/GradMode.h", "ksbind/cpu_capability.h", "ksbind/pybind.h",
                "ksbind/torch.h", "ksbind/torch_pybind.h")
#: module.cpp (split layout) holds only the pybind11 glue, no loop: -O2, as the other targets'
#: glue; the ks code and the kernels inlining it (ks_unit.cpp) keep CFLAGS' -O3.
GLUE_FLAGS = ("-O2",)
#: The shared precompiled header of ks_unit.cpp: what its entry points include.
KS_UNIT_PCH_INCLUDES = ("ksbind/torch.h",)

_loaded: dict[str, ModuleType] = {}
_cache_log = get_logger("cache")
_lock = threading.Lock()


def flags() -> tuple[tuple[str, ...], tuple[str, ...]]:
    extra = tuple(shlex.split(os.environ.get("KSBIND_CXXFLAGS", "")))
    return CFLAGS + extra, LDFLAGS


def include_dirs_for(spec: ModuleSpec) -> tuple[Path, ...]:
    """The runtime's folder(s), then ksbind's: never the module's own folder (the
    generated files include each other by "relative" path), so the toolchain and
    its shared precompiled header are the same for every module."""
    return ks_include_dirs(spec)


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

    h = Hasher.with_environment()
    h.add_text("target", "torch")
    h.add_text("torch", torch.__version__)
    h.add_text("name", spec.name)
    h.add_text("cxx", "\0".join(compiler()))
    h.add_text("cflags", "\0".join(cflags))
    h.add_text("ldflags", "\0".join(ldflags))
    h.add_text("fast_math", str(spec.fast_math))
    h.add_text("debug", str(spec.debug))
    for name in sorted(rendered.files):
        text = rendered.files[name].encode("utf-8", "surrogateescape")
        h.add_bytes(f"generated:{name}", without_stamp(text))
    sources = [*spec.cpp, *([] if spec.runtime.bundled else spec.runtime.sources)]
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}:{src.name}")
    for d in dict.fromkeys(s.parent for s in sources):
        h.add_dir_headers(d)
    hash_include_path(h, include_dirs)
    return h.hexdigest()


def module_key(spec: ModuleSpec, rendered: RenderedModule) -> str:
    """The cache key the torch build uses for this module."""
    return TORCH.prepare(spec, rendered).key


def toolchain(include_dirs: tuple[Path, ...], cflags: tuple[str, ...], ldflags: tuple[str, ...]) -> Toolchain:
    """The torch target's toolchain: torch's include folders (as -isystem, after
    ksbind's and the runtime's), its C++ ABI, and its libraries."""
    import torch
    from torch.utils import cpp_extension  # only on a cache miss: it is slow to import

    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))}"
    system = (*map(Path, cpp_extension.include_paths()), Path(sysconfig.get_paths()["include"]))
    libs = (*(f"-L{d}" for d in cpp_extension.library_paths()), "-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python")
    return Toolchain("torch", compiler(), (*TORCH_CFLAGS, abi, *cflags), include_dirs, system,
                     ldflags=ldflags, libs=libs, pch_includes=PCH_INCLUDES, key_parts=(("torch", torch.__version__),),
                     two_phase_init=any(pybind11_two_phase(d) for d in system))


@dataclass(frozen=True)
class TorchPlan:
    """What a torch module's key is computed from, and its build compiles with."""

    include_dirs: tuple[Path, ...]
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]


def torch_plan(spec: ModuleSpec) -> TorchPlan:
    cflags, ldflags = flags()
    return TorchPlan(include_dirs_for(spec), cflags, ldflags)


def build_planned(spec: ModuleSpec, rendered: RenderedModule, plan: TorchPlan, key: str, root: Path) -> ModuleType:
    """Generate, compile (or reuse the cache under ``root``) and import a torch-target
    module (progress: ksbind/log.py; a quiet build sets log.QUIET)."""
    generated = write_generated(spec.output, rendered)
    ext = ext_name(spec.name)
    entry = CacheEntry(root, ext, key, target="torch")
    wrapper_path = entry.dir / f"{spec.name}.py"
    with _lock:
        # Checked even when this process has the module loaded: a damaged entry is
        # rebuilt (one warning) so that the next process finds it whole; the loaded
        # module is the same build (same key) and stays in use here.
        if not entry.is_built():
            with entry.lock():
                if not entry.is_built():  # another process may have built it while we waited
                    _compile(spec, rendered, entry, generated, plan.include_dirs, plan.cflags, plan.ldflags)
        else:
            _cache_log.debug("%s: cached build %s", spec.name, entry.module_path)
        if str(entry.module_path) not in _loaded:
            import torch  # noqa: F401  (the extension links to torch's libraries: loaded first)

            _loaded[str(entry.module_path)] = import_from_path(ext, entry.module_path)
        sys.modules[ext] = _loaded[str(entry.module_path)]
        wrapper_key = str(wrapper_path)
        if wrapper_key not in _loaded:
            _loaded[wrapper_key] = import_wrapper(spec.name, wrapper_path)
        return _loaded[wrapper_key]


def _compile(spec: ModuleSpec, rendered: RenderedModule, entry: CacheEntry, generated: list[Path],
             include_dirs: tuple[Path, ...], cflags: tuple[str, ...], ldflags: tuple[str, ...]) -> None:
    """Build the entry through the pipeline (ksbind/backend/compile.py), wrapper included;
    the caller holds the entry's lock."""
    tc = toolchain(include_dirs, cflags, ldflags)
    objects = object_cache(entry.root)
    units = torch_units(spec, generated, tc, entry.name, entry.root if objects is not None else None)

    def wrapper_first(staging: Path) -> None:
        # The wrapper goes in first; install() adds the extension, then the manifest
        # that marks the entry complete.
        entry.dir.mkdir(parents=True, exist_ok=True)
        for fname in (f"{spec.name}.py", f"{spec.name}.pyi"):
            if fname in rendered.files:
                write_atomic(entry.dir / fname, rendered.files[fname])

    install_entry(entry, units, tc, objects=objects, log_dir=spec.output, label=spec.name,
                  before_install=wrapper_first)


def torch_units(spec: ModuleSpec, generated: list[Path], tc: Toolchain, ext: str,
                shared_root: Path | None) -> list[Unit]:
    """The torch target's translation units (see the module's docstring). With
    ``shared_root`` (the object cache's root), the generated files are compiled
    from content-addressed copies under the placeholder name plus an init unit
    (ksbind/backend/compile.py); without, from the output folder under the
    extension's own name ``ext``."""
    sources = [p for p in generated if p.suffix in (".cpp", ".h")]
    # Compiled from content-addressed copies (ksbind/backend/compile.py, shared_copies): the
    # same generated code reuses its objects in every module, folder and version.
    copies = shared_copies(shared_root, sources) if shared_root is not None else {p: p for p in sources}
    by_name = {p.name: p for p in generated}
    entry_unit = by_name.get("entry_points.cpp", by_name["module.cpp"])
    runtime_sources = [] if spec.runtime.bundled else list(spec.runtime.sources)
    # At a stable path (not in a staging folder), so its object is cached.
    text = unit_text(spec, copies[entry_unit])
    if shared_root is not None:
        unit = shared_text(shared_root, UNIT, text)
    else:
        unit = spec.output / UNIT
        if not unit.is_file() or unit.read_text(encoding="utf-8") != text:
            write_atomic(unit, text)
    name, needs_init = module_name_flags(tc, ext, shared_root is not None)
    parts = tuple((copies[g], g) for g in sources if g.suffix == ".cpp")
    # The user's ks code and the kernels inlining it: the one unit `fast_math` applies to.
    ks_flags = FAST_MATH_FLAGS if spec.fast_math else ()
    debug = DEBUG_FLAGS if spec.debug else ()  # last: its -O0 wins over the units' own
    # Both generated units start with a shared precompiled header: module.cpp with torch's
    # pybind11 headers and ksbind's; ks_unit.cpp with only what its entry points include
    # (ksbind/torch.h: ATen's core, the runtime): a larger one is slower to load than to skip.
    units = [Unit(unit, (name if entry_unit.name == "module.cpp" else ()) + ks_flags + debug, pch=True,
                  parts=parts, pch_includes=KS_UNIT_PCH_INCLUDES)]
    if entry_unit.name != "module.cpp":
        units.append(Unit(copies[by_name["module.cpp"]], name + GLUE_FLAGS + debug, pch=True, parts=parts))
    units += [Unit(Path(s), debug) for s in runtime_sources]
    if needs_init and shared_root is not None:
        units.append(init_unit(shared_root, ext))
    return units


class TorchKind:
    """The torch target's build kind (ksbind/backend/kind.py). The generated files
    are written by the build itself (the key hashes their rendered text)."""

    def prepare(self, spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[TorchPlan]:
        plan = torch_plan(spec)
        key = cache_key(spec, rendered, plan.include_dirs, plan.cflags, plan.ldflags)
        return PreparedBuild(spec, rendered, key, plan, self)

    def build(self, prepared: PreparedBuild[TorchPlan], root: Path) -> ModuleType:
        return build_planned(prepared.spec, prepared.rendered, prepared.plan, prepared.key, root)

    def loads(self, prepared: PreparedBuild[TorchPlan], root: Path) -> tuple[CacheEntry, Steps]:
        name = prepared.spec.name
        ext = ext_name(name)
        entry = CacheEntry(root, ext, prepared.key, target="torch")
        return entry, [["import", "torch"], ["extension", ext, str(entry.module_path)],
                       ["wrapper", name, str(entry.dir / f"{name}.py")]]

    def standalone_units(self, spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        plan = torch_plan(spec)
        tc = toolchain(plan.include_dirs, plan.cflags, plan.ldflags)
        return torch_units(spec, generated, tc, get_target(spec.target).compiled_name(spec.name), None), tc


TORCH = TorchKind()

__all__ = ["TorchKind", "TORCH", "TorchPlan", "torch_plan", "build_planned", "module_key",
           "cache_key", "unit_text", "torch_units", "toolchain", "CFLAGS",
           "LDFLAGS", "include_dirs_for", "flags"]
