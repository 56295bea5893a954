"""Build jax-target modules through ksbind's one build pipeline
(ksbind/backend/compile.py): a plain shared library of XLA FFI handlers,
compiled against the FFI headers jaxlib ships (``jax.ffi.include_dir()``,
header-only: nothing of jaxlib or Python is linked), beside the generated
pure-Python wrapper ``NAME.py`` that loads it with ctypes.

Translation units (compiled in parallel, each from the object cache when
nothing it depends on changed), as the torch target splits its own:
- ``jax_unit.cpp`` (written beside the generated files): the config's C++
  sources and the generated ``jax_entry_points.cpp`` in one unit, so the ks
  functions inline into the elementwise loops; it includes nothing of XLA's
  FFI, at the flags ``g++`` alone would compile the user's C++ with.
- ``jax_handlers.cpp``: the FFI handlers, probes and allocator functions
  (XLA's ``ffi.h`` and ``ksbind/jax.h``'s layout templates: the slow part of
  the handlers), calling the entry points through ``jax_entry_points.h``; no
  loop of ks code, so at -O2 (``GLUE_FLAGS``, as the torch target's glue).
- the runtime's own sources, if any.

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
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ksbind.backend import framework_build
from ksbind.backend.compile import install_entry, object_cache, shared_copies, wrapper_files
from ksbind.backend.kind import PreparedBuild, Steps
from ksbind.backend.loader import import_meanwhile
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import KS_FLAGS, Toolchain, compiler, ks_include_dirs
from ksbind.cache.entries import CacheEntry
from ksbind.codegen.output import write_generated
from ksbind.codegen.render import RenderedModule
from ksbind.errors import BuildError
from ksbind.session import Schedule
from ksbind.spec import ModuleSpec
from ksbind.targets.jax.target import lib_name

#: As the torch target's kernels (ksbind/targets/torch/build.py): -O3 with
#: -fno-trapping-math and -fno-math-errno lets g++ vectorise the elementwise
#: loops with the scalar ks function inlined. C++20: ksbind/jax.h's templated
#: lambdas (the FFI headers need C++17). No Python include folder at all.
CFLAGS = ("-O3", "-std=c++20", "-fPIC", "-fvisibility=hidden", "-fno-trapping-math", "-fno-math-errno", "-g0",
          "-DKSBIND_NO_PYTHON=1", "-Wno-unused-variable", *KS_FLAGS)
#: jax_handlers.cpp holds no loop of ks code (the entry points, in the user's unit, do): -O2,
#: as the other targets' glue (after CFLAGS, so it wins over their -O3).
GLUE_FLAGS = ("-O2",)
UNIT = "jax_unit.cpp"
HANDLERS = "jax_handlers.cpp"
ENTRY_POINTS = "jax_entry_points.cpp"
LIB_EXT = ".so"


def ffi_include_dir() -> Path:
    """The FFI headers jaxlib ships: ``jax.ffi.include_dir()``, found as it finds
    them (jaxlib's package folder, ``include/``) without importing jax, which
    costs a build more than a second (the module's wrapper imports it meanwhile:
    ``import_meanwhile``)."""
    import jaxlib

    folder: str | None = os.path.dirname(os.path.abspath(jaxlib.__file__)) if jaxlib.__file__ else None
    if folder is None:  # a namespace package, as jax.ffi.include_dir() allows
        folder = next(iter(getattr(jaxlib, "__path__", [])), None)
    if not folder:
        raise BuildError("cannot find jaxlib's folder (its FFI headers are in its include/)")
    return Path(folder) / "include"


def jaxlib_version() -> str:
    import jaxlib

    return str(getattr(jaxlib, "__version__", "unknown"))


def flags() -> tuple[str, ...]:
    return CFLAGS + tuple(shlex.split(os.environ.get("KSBIND_CXXFLAGS", "")))


@dataclass(frozen=True)
class JaxPlan:
    """What a jax module's key is computed from, and its build compiles with."""

    cflags: tuple[str, ...]


def jax_plan(spec: ModuleSpec) -> JaxPlan:
    return JaxPlan(flags())


def toolchain(spec: ModuleSpec, plan: JaxPlan | None = None) -> Toolchain:
    """ksbind's and the runtime's folders, then jaxlib's FFI headers (-isystem)."""
    cflags = (plan if plan is not None else jax_plan(spec)).cflags
    return Toolchain("jax", compiler(), cflags, ks_include_dirs(spec), (ffi_include_dir(),),
                     key_parts=(("jaxlib", jaxlib_version()),))


def unit_text(spec: ModuleSpec, entry_points: Path) -> str:
    """The user's translation unit: the config's C++ and the entry points, included."""
    lines = ["// Written by ksbind's jax build: ks sources and the entry points in one unit,",
             "// so ks functions inline into the entry points' loops (the FFI handlers are another unit)."]
    lines += [f'#include "{p.resolve()}"' for p in spec.cpp]
    lines.append(f'#include "{entry_points.resolve()}"')
    return "\n".join(lines) + "\n"


def cache_key(spec: ModuleSpec, rendered: RenderedModule, plan: JaxPlan) -> str:
    return framework_build.cache_key(spec, rendered, "jax", ("jaxlib", jaxlib_version()), plan.cflags)


def jax_units(spec: ModuleSpec, generated: list[Path], shared_root: Path | None) -> list[Unit]:
    """The library's units (see the module's docstring): the user's C++ with the
    entry points, the handlers, and the runtime's sources. With ``shared_root``
    (the object cache's root), the generated files are compiled from
    content-addressed copies (ksbind/backend/compile.py, shared_copies), so the
    same handlers reuse their object in every module and folder."""
    from ksbind.backend.toolchain import FAST_MATH_FLAGS

    sources = [p for p in generated if p.suffix in (".cpp", ".h")]
    copies = shared_copies(shared_root, sources) if shared_root is not None else {p: p for p in sources}
    by_name = {p.name: p for p in sources}
    entry_points, handlers = by_name[ENTRY_POINTS], by_name[HANDLERS]
    unit = framework_build.ks_unit(spec, UNIT, unit_text(spec, copies[entry_points]), shared_root)
    # The user's ks code and the loops inlining it: the one unit `fast_math` applies to.
    ks_flags = FAST_MATH_FLAGS if spec.fast_math else ()
    parts = tuple((copies[g], g) for g in sources)
    runtime_sources = [] if spec.runtime.bundled else list(spec.runtime.sources)
    return [Unit(unit, ks_flags, parts=parts), Unit(copies[handlers], GLUE_FLAGS, parts=parts),
            *(Unit(Path(s)) for s in runtime_sources)]


def build_planned(spec: ModuleSpec, rendered: RenderedModule, plan: JaxPlan, key: str, root: Path) -> ModuleType:
    """Generate, compile (or reuse the cache under ``root``) and import a jax-target module
    (jax imported beside the compiles: the kind's schedule)."""
    entry = _entry(root, spec.name, key)
    generated = write_generated(spec.output, rendered)
    with framework_build.building(spec, entry) as must_compile:
        if must_compile:
            _compile(spec, rendered, plan, entry, generated)
        return framework_build.imported(spec, entry)


def _entry(root: Path, name: str, key: str) -> CacheEntry:
    return CacheEntry(root, lib_name(name), key, suffix=LIB_EXT, target="jax")


def _compile(spec: ModuleSpec, rendered: RenderedModule, plan: JaxPlan, entry: CacheEntry,
             generated: list[Path]) -> None:
    tc = toolchain(spec, plan)
    objects = object_cache(entry.root)
    units = jax_units(spec, generated, entry.root if objects is not None else None)

    install_entry(entry, units, tc, objects=objects, log_dir=spec.output, label=spec.name,
                  companions=wrapper_files(spec.name, rendered.files))


class JaxKind:
    """The jax target's build kind (ksbind/backend/kind.py). The generated files
    are written by the build itself (the key hashes their rendered text)."""

    def prepare(self, spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[JaxPlan]:
        plan = jax_plan(spec)
        return PreparedBuild(spec, rendered, cache_key(spec, rendered, plan), plan, self)

    def build(self, prepared: PreparedBuild[JaxPlan], root: Path) -> ModuleType:
        return build_planned(prepared.spec, prepared.rendered, prepared.plan, prepared.key, root)

    def loads(self, prepared: PreparedBuild[JaxPlan], root: Path) -> tuple[CacheEntry, Steps]:
        name = prepared.spec.name
        entry = _entry(root, name, prepared.key)
        return entry, [["wrapper", name, str(entry.dir / f"{name}.py")]]

    def standalone_units(self, spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        return jax_units(spec, generated, None), toolchain(spec)

    def schedule(self) -> Schedule:
        """jax's import once the compilers have started (not while ksc runs: the cached wrapper
        imports jax lazily, and a build with nothing to compile has no use for it yet)."""
        return Schedule(while_compiling=lambda: import_meanwhile("jax"))


JAX = JaxKind()

__all__ = ["JaxKind", "JAX", "JaxPlan", "jax_plan", "build_planned", "cache_key",
           "jax_units", "toolchain", "unit_text", "CFLAGS",
           "GLUE_FLAGS", "ffi_include_dir", "jaxlib_version"]
