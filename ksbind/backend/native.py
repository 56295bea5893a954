"""The native build (ks and python targets): compile generated modules with g++
and import them, cached by content hash.

``ksbind.build(config_or_spec)`` (ksbind/pipeline.py) renders a module, writes
its generated files to its output folder, and hands it to the backend
(ksbind/backend/build.py), which builds it here (``NATIVE``, the ks and python
targets' build kind: ksbind/backend/kind.py).
The module's cache key covers every input (generated files, the config's cpp
sources and the headers beside them, the runtime's headers and sources,
ksbind's own headers, compiler and flags, ksbind/pybind11/Python versions and
ABI), so an unchanged rebuild imports the cached module without running the
compiler, in any process. A changed module is built by the one pipeline of
ksbind/backend/compile.py (the torch target's too, from
ksbind/targets/torch/build.py): each translation unit's object comes from the
object cache when nothing it depends on changed.

Progress is logged (ksbind/log.py): ``quiet=True`` silences one call's.

Environment: ``CXX`` (compiler, default g++), ``KSBIND_CXXFLAGS`` (extra
flags, part of the key), ``KSBIND_CACHE_DIR`` (cache folder), ``KSBIND_JOBS``
(parallel compiles, default: CPU count), ``KSBIND_OBJECT_CACHE=0`` and
``KSBIND_PCH=0`` (see ksbind/backend/compile.py).
"""
from __future__ import annotations

import os
import shlex
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ksbind import log
from ksbind.backend.compile import (
    build_entry,
    init_unit,
    module_name_flags,
    object_cache,
    shared_copies,
)
from ksbind.backend.kind import PreparedBuild, Steps
from ksbind.backend.loader import import_from_path
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import (
    BASE_FLAGS,
    DEBUG_FLAGS,
    FAST_MATH_FLAGS,
    Toolchain,
    compiler,
    hash_include_path,
    hash_target_headers,
    ks_include_dirs,
    limited_api_flags,
    module_suffix,
    pybind11_two_phase,
)
from ksbind.cache.entries import CacheEntry
from ksbind.cache.keys import HEADER_SUFFIXES, Hasher
from ksbind.codegen.output import plan_files, write_generated, write_planned
from ksbind.codegen.render import RenderedModule
from ksbind.fileio import write_atomic
from ksbind.session import Schedule
from ksbind.spec import ModuleSpec
from ksbind.targets.registry import get_target

_cache_log = log.get_logger("cache")

#: Generated files that are translation units (the rest are headers or stubs).
CPP_SUFFIXES = (".cpp", ".cc", ".cxx")


@dataclass(frozen=True)
class CompilePlan:
    """Everything a compile needs, and nothing else: also what the key hashes."""

    name: str
    sources: tuple[Path, ...]        # translation units, in order
    include_dirs: tuple[Path, ...]   # searched in order: runtime first, then ksbind's
    flags: tuple[str, ...]
    cxx: tuple[str, ...]             # compiler command (may carry arguments)
    log_dir: Path                    # where a failed compile's full output goes
    ks_flags: tuple[str, ...] = ()   # for the user's C++ (`cpp:`) only: `fast_math: true`
    user_sources: tuple[Path, ...] = ()  # the config's `cpp:` files
    target: str = "ks"               # the target: its build kind says which module glue the generated units hold


def compile_plan(spec: ModuleSpec, generated: Sequence[Path]) -> CompilePlan:
    import pybind11

    runtime_sources = () if spec.runtime.bundled else tuple(spec.runtime.sources)
    # The user's sources first: small, and where errors usually are, so a
    # mistake is reported before the slow pybind11 files finish.
    units = tuple(spec.cpp) + runtime_sources + tuple(p for p in generated if p.suffix in CPP_SUFFIXES)
    include_dirs = tuple(dict.fromkeys(
        [*ks_include_dirs(spec), Path(pybind11.get_include()), Path(sysconfig.get_paths()["include"])]))
    flags = BASE_FLAGS + (f"-DTORCH_EXTENSION_NAME={spec.name}",) + limited_api_flags(
        get_target(spec.target).limited_api) + tuple(
        shlex.split(os.environ.get("KSBIND_CXXFLAGS", ""))) + (DEBUG_FLAGS if spec.debug else ())
    return CompilePlan(spec.name, units, include_dirs, flags, compiler(), Path(spec.output),
                       FAST_MATH_FLAGS if spec.fast_math else (), tuple(spec.cpp), spec.target)


def cache_key(plan: CompilePlan, target: str) -> str:
    h = Hasher.with_environment()
    h.add_text("target", target)
    h.add_text("name", plan.name)
    h.add_text("cxx", "\0".join(plan.cxx))
    h.add_text("flags", "\0".join(plan.flags))
    h.add_text("ks_flags", "\0".join(plan.ks_flags))
    for i, src in enumerate(plan.sources):
        h.add_file(src, f"source{i}:{src.name}", strip_stamp=True)
    # Headers the sources may include: beside each source, and on the include
    # path (less pybind11's and Python's, the last two, which the versions cover).
    for d in dict.fromkeys(s.parent for s in plan.sources):
        h.add_dir_headers(d, strip_stamp=True)
    hash_include_path(h, plan.include_dirs[:-2])
    hash_target_headers(h, target)
    return h.hexdigest()


def module_entry(root: Path, name: str, key: str, target: str) -> CacheEntry:
    """A ks/python-target module's cache entry (its file named for the target's C API:
    NAME.abi3.so on the limited API); a no-op build checks the same one."""
    return CacheEntry(root, name, key, suffix=module_suffix(get_target(target).limited_api), target=target)


def build_plan(plan: CompilePlan, rendered: RenderedModule, root: Path) -> ModuleType:
    """The pipeline for one ks/python-target module: key -> lock -> compile
    objects -> link -> install (verified on every later hit) -> load."""
    entry = module_entry(root, plan.name, cache_key(plan, rendered.target), rendered.target)
    if not entry.is_built():
        tc = plan_toolchain(plan)
        objects = object_cache(root)
        units = plan_units(plan, tc, root if objects is not None else None)
        build_entry(entry, units, tc, objects=objects, log_dir=plan.log_dir, label=plan.name)
    else:
        _cache_log.debug("%s: cached build %s", plan.name, entry.module_path)
    _install_stub(entry, plan.name, rendered)
    return import_from_path(plan.name, entry.module_path)


def _c_api(plan: CompilePlan) -> bool:
    """The module is on Python's C API (its target's build kind is python-capi: the python
    target, or another target built as it is), not pybind11."""
    return get_target(plan.target).build == "python-capi"


def _name_define(flags: Sequence[str]) -> bool:
    return any(f.startswith("-DTORCH_EXTENSION_NAME=") for f in flags)


def plan_toolchain(plan: CompilePlan) -> Toolchain:
    """The ks/python targets' toolchain: the plan's flags but the module's name
    (given only to the units that use it, so the others' objects are shared
    across modules and versions), and the headers of the generated units
    precompiled: pybind11's and ksbind's (ks target), or Python's C API and
    ksbind's (python target, whose module is created in two phases, so its name
    comes from the import: ksbind/python_module.h)."""
    common = tuple(f for f in plan.flags if not _name_define((f,)))
    if _c_api(plan):
        return Toolchain("python-capi", plan.cxx, common, plan.include_dirs, ldflags=common,
                         pch_includes=("ksbind/python_module.h",), two_phase_init=True)
    import pybind11

    return Toolchain("pybind11", plan.cxx, common, plan.include_dirs, ldflags=common,
                     pch_includes=("ksbind/pybind.h",),
                     two_phase_init=pybind11_two_phase(Path(pybind11.get_include())))


#: Written beside the generated files: the generated translation units as one.
BINDINGS_UNIT = "ksbind_bindings.cpp"


def plan_units(plan: CompilePlan, tc: Toolchain, shared_root: Path | None) -> list[Unit]:
    """The plan's sources as units: the user's and the runtime's as they are; the
    generated ones (entry_points.cpp, module.cpp) as one unit, which includes
    them (ks target), or each on its own (python target).

    Why one on the ks target: every unit that includes pybind11 compiles its
    support code again (3-4 s at -O2 with pybind11 3, precompiled header or
    not); one generated unit compiles it once per module. They change together
    (both follow the bindings), so the object cache loses nothing by it. The
    python target's module uses Python's C API alone: its two files compile in
    well under a second each, in parallel.

    With ``shared_root`` (the object cache's root), the generated files are
    compiled from their content-addressed copies there and under the
    placeholder module name (ksbind/backend/compile.py), plus a one-line init unit:
    the same bindings then reuse one object in every module and version."""
    name = (f"-DTORCH_EXTENSION_NAME={plan.name}",)
    generated = [s for s in plan.sources if s.parent == plan.log_dir and s.suffix in CPP_SUFFIXES]
    units = [Unit(s, (name if _mentions_name(s) else ()) + (plan.ks_flags if s in plan.user_sources else ()))
             for s in plan.sources if s not in generated]
    if not generated:
        return units
    if shared_root is not None:
        headers = [p for p in sorted(plan.log_dir.iterdir()) if p.is_file() and p.suffix in HEADER_SUFFIXES]
        copies = shared_copies(shared_root, [*generated, *headers])
    else:
        copies = {g: g for g in generated}
    flags, needs_init = module_name_flags(tc, plan.name, shared_root is not None)
    parts = tuple((copies[g], g) for g in generated)
    if len(generated) == 1:
        units.append(Unit(copies[generated[0]], flags, pch=True, parts=parts))
    elif _c_api(plan):  # no pybind11 to compile twice: the files compile in parallel
        units.extend(Unit(copies[g], flags, pch=True, parts=parts) for g in generated)
    else:
        merged = copies[generated[0]].parent / BINDINGS_UNIT
        text = ("// Written by ksbind's build: the generated translation units compiled as one\n"
                "// (see ksbind/backend/native.py, plan_units).\n"
                + "".join(f'#include "{g.name}"\n' for g in generated))
        if not merged.is_file() or merged.read_text(encoding="utf-8") != text:
            write_atomic(merged, text)
        units.append(Unit(merged, flags, pch=True, parts=parts))
    if needs_init and shared_root is not None:
        units.append(init_unit(shared_root, plan.name))
    return units


def _mentions_name(src: Path) -> bool:
    try:
        return b"TORCH_EXTENSION_NAME" in src.read_bytes()
    except OSError:
        return False


def _install_stub(entry: CacheEntry, name: str, rendered: RenderedModule) -> None:
    """Put NAME.pyi next to the built module so editors and mypy find it.

    Written on every build (if changed), not only on a cache miss: the stub is
    not part of the compile key, so a template change may alter it alone.
    """
    text = rendered.files.get(f"{name}.pyi")
    if text is not None:
        write_planned(plan_files(entry.dir, {f"{name}.pyi": text}))


class NativeKind:
    """The ks and python targets' build kind (ksbind/backend/kind.py): its plan is
    the compile plan, made after the generated files are written (its key hashes
    them in ``spec.output``)."""

    def prepare(self, spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[CompilePlan]:
        plan = compile_plan(spec, write_generated(spec.output, rendered))
        return PreparedBuild(spec, rendered, cache_key(plan, rendered.target), plan, self)

    def build(self, prepared: PreparedBuild[CompilePlan], root: Path) -> ModuleType:
        return build_plan(prepared.plan, prepared.rendered, root)

    def loads(self, prepared: PreparedBuild[CompilePlan], root: Path) -> tuple[CacheEntry, Steps]:
        entry = module_entry(root, prepared.spec.name, prepared.key, prepared.rendered.target)
        return entry, [["extension", prepared.spec.name, str(entry.module_path)]]

    def standalone_units(self, spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        plan = compile_plan(spec, generated)
        tc = plan_toolchain(plan)
        return plan_units(plan, tc, None), tc

    def schedule(self) -> Schedule:
        """Nothing: a pybind11 or Python C API module imports no framework."""
        return Schedule()


NATIVE = NativeKind()

__all__ = ["compile_plan", "cache_key", "CompilePlan", "build_plan", "plan_units", "plan_toolchain", "NativeKind",
           "NATIVE"]
