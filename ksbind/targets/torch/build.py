"""Build torch-target modules through ksbind's one build pipeline
(ksbind/backend/compile.py): a shared library of stable-ABI torch ops, compiled
against the running torch's stable headers (``torch/csrc/stable``,
``torch/headeronly``, the C shim) with ``-DTORCH_TARGET_VERSION`` for the oldest
torch it runs on (ksbind/targets/torch/target.py), beside the generated
pure-Python wrapper ``NAME.py`` that loads it with ``torch.ops.load_library``.

Translation units, compiled in parallel (each from the object cache when nothing it
depends on changed), as the jax target splits its own:

- ``torch_stable_unit.cpp`` (written beside the generated files): the config's C++
  sources and ``torch_stable_entries.cpp``, so ks functions inline into the
  elementwise and vmap kernels' loops, defined there; for plain ops only the ks
  calls (``NAME_ks``), so a module without loops compiles the user's C++ with
  nothing of torch included;
- ``torch_stable_ops.cpp``: the plain ops' kernels (reading the stable tensors),
  the registration and the support ops, at -O2 (``GLUE_FLAGS``: no loop of ks code);
- the runtime's own sources, if any.

The ops' unit uses the shared precompiled header (ksbind/backend/pch.py) of
``ksbind/torch_stable.h``: the stable headers, the C shim and ksbind's and ks's
own, about a second of parsing per build without it (110 MB on disk per
compiler, flags and torch; built in the background after a module's first
build, as the other targets' headers are). The user's unit gets none: it
includes ``ksbind/vector_math.h`` (a few declarations, so that ks code's float
calls of exp, erf, tanh... vectorise through libmvec) and then the user's C++.
It links libtorch_cpu and libc10 only: no libtorch_python, no pybind11, no Python.
torch is imported on a thread while the units compile (the wrapper imports it:
about a second that the compile hides), started once the compilers are
(the build kind's ``schedule``: ksbind/session.py).

The cache entry holds ``NAME_torchops.so``, ``NAME.py`` and its stub; the key
covers the generated files, the config's sources and the headers beside them,
ksbind's and the runtime's headers, the compiler and flags, and the torch whose
headers it compiled against.
"""
from __future__ import annotations

import importlib.util
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ksbind.backend import framework_build
from ksbind.backend.compile import install_entry, object_cache, shared_copies, wrapper_files
from ksbind.backend.kind import PreparedBuild, Steps
from ksbind.backend.loader import import_meanwhile
from ksbind.backend.runner import YIELDING, Unit
from ksbind.backend.toolchain import (
    DEBUG_FLAGS,
    FAST_MATH_FLAGS,
    KS_FLAGS,
    Toolchain,
    compiler,
    ks_include_dirs,
)
from ksbind.cache.entries import CacheEntry
from ksbind.codegen.output import write_generated
from ksbind.codegen.render import RenderedModule
from ksbind.session import Schedule
from ksbind.spec import ModuleSpec
from ksbind.targets.torch import link_stub
from ksbind.targets.torch.target import TORCH_TARGET_VERSION, lib_name

#: As the torch target's kernels (ksbind/targets/torch/build.py): -O3 with -fno-trapping-math
#: and -fno-math-errno vectorise the loops with the ks function inlined; -ffp-contract=off keeps
#: every CPU capability's floats the same. No -fopenmp: the loops run on ATen's own thread pool
#: through the C shim (torch::stable::parallel_for). No Python include folder at all.
CFLAGS = ("-O3", "-std=c++20", "-fPIC", "-fvisibility=hidden", "-fno-trapping-math", "-fno-math-errno",
          "-ffp-contract=off", "-g0", "-DKSBIND_NO_PYTHON=1", f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}",
          "-Wno-unused-variable", "-Wno-attributes", *KS_FLAGS)
#: Link with every symbol resolved: the library needs nothing of Python's, so a symbol left
#: undefined is a ks function no file defines (an edef without C++). The link names it, mangled,
#: for ksbind/backend/missing.py to turn into the ks function, instead of an import failing later.
NO_UNDEFINED = ("-Wl,--no-undefined", "-Wl,--no-demangle")
UNIT = "torch_stable_unit.cpp"
ENTRIES = "torch_stable_entries.cpp"
OPS = "torch_stable_ops.cpp"
#: The ops' unit holds no loop of ks code: -O2, as the other targets' glue (after CFLAGS: it wins).
GLUE_FLAGS = ("-O2",)
#: What the ops' unit includes first: its precompiled header's one include.
PCH_HEADER = "ksbind/torch_stable.h"
#: Compiled once beside that header and linked into every module: the support ops and the
#: instantiations every kernel shares, which the ops' unit then leaves out (it includes the header).
PCH_COMPANION = ("ksbind/torch_stable_support.cpp", "ksbind/torch_stable_support.h")
LIB_EXT = ".so"
#: Included first by the unit of ks code (unit_text), before the ks sources.
VECTOR_MATH_HEADER = "ksbind/vector_math.h"
#: Then the vectorised sums of float tensors (left out with KSBIND_VECTOR_MATH=0).
FLOAT_SUMS_HEADER = "ksbind/float_sums.h"
#: ks's 2-D build and Float sumbuild over ksc's runtime, written to vectorise (after the sums).
FLOAT_BUILDS_HEADER = "ksbind/float_builds.h"


#: torch's CPU library, in its package folder: the link stub's original and the import's preload.
CPU_LIBRARY = Path("lib", "libtorch_cpu.so")


def find_torch() -> Path | None:
    """The running torch's package folder (headers in include/, libraries in lib/), found
    without importing torch: a cached build imports it only through its wrapper. None when
    torch is not installed."""
    spec = importlib.util.find_spec("torch")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def torch_dir() -> Path:
    """find_torch's folder; a BuildError when torch is not installed."""
    found = find_torch()
    if found is None:
        from ksbind.errors import BuildError

        raise BuildError("the torch target needs torch installed (pip install torch)")
    return found


def torch_version() -> str:
    """The torch whose headers the library compiles against (its version.py, read without importing torch)."""
    text = (torch_dir() / "version.py").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return "unknown"


@dataclass(frozen=True)
class StablePlan:
    """What a torch module's key is computed from, and its build compiles with."""

    cflags: tuple[str, ...]
    torch: str


#: With vector math on: a division by a value that does not change inside the loop (ks's
#: ``(div x (sqrt 2.0))``) is a multiplication by its reciprocal, as inductor compiles a
#: division by a constant. A vector divide costs several multiplies: about a seventh of a
#: GELU's forward+backward. Results may differ from the division's in the last bit.
RECIPROCAL_MATH = ("-freciprocal-math",)


def vector_math_flags() -> tuple[str, ...]:
    """``KSBIND_VECTOR_MATH=0``: ``-DKSBIND_VECTOR_MATH=0``, ks code's exp, erf, tanh... as ksc wrote
    them (scalar double calls) rather than through libmvec's vector variants on float
    (ksbind/vector_math.h), and divisions as written; otherwise RECIPROCAL_MATH. A flag of
    the plan: it is in the cache key."""
    value = os.environ.get("KSBIND_VECTOR_MATH", "").strip().lower()
    return ("-DKSBIND_VECTOR_MATH=0",) if value in ("0", "false", "no", "off") else RECIPROCAL_MATH


def stable_plan(spec: ModuleSpec) -> StablePlan:
    return StablePlan(CFLAGS + vector_math_flags() + tuple(shlex.split(os.environ.get("KSBIND_CXXFLAGS", ""))),
                      torch_version())


def toolchain(spec: ModuleSpec, plan: StablePlan) -> Toolchain:
    """ksbind's and the runtime's folders, then torch's include folder (-isystem); torch's
    CPU library and c10, found at run time where torch's own are (rpath)."""
    lib = torch_dir() / "lib"
    return Toolchain("torch", compiler(), plan.cflags, ks_include_dirs(spec), (torch_dir() / "include",),
                     libs=(f"-L{lib}", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}", *NO_UNDEFINED),
                     key_parts=(("torch", plan.torch),), pch_includes=(PCH_HEADER,), pch_companion=PCH_COMPANION)


def unit_text(spec: ModuleSpec, entries: Path) -> str:
    lines = ["// Written by ksbind's torch build: ks sources and the entries in one unit,",
             "// so ks functions inline into the kernels' loops (the ops' registration is another unit).",
             "// First, vector math: ks::Float calls of exp, erf, tanh... call the float functions, which",
             "// libmvec vectorises (ksbind/vector_math.h; KSBIND_VECTOR_MATH=0: ksc's scalar double calls).",
             f"#include <{VECTOR_MATH_HEADER}>",
             "// and ks's sum of a float tensor, its 2-D build and Float sumbuild, vectorised",
             "// (ksbind/float_sums.h, ksbind/float_builds.h).",
             "#if KSBIND_VECTOR_MATH",
             f"#include <{FLOAT_SUMS_HEADER}>",
             f"#include <{FLOAT_BUILDS_HEADER}>",
             "#endif"]
    lines += [f'#include "{p.resolve()}"' for p in spec.cpp]
    lines.append(f'#include "{entries.resolve()}"')
    return "\n".join(lines) + "\n"


def cache_key(spec: ModuleSpec, rendered: RenderedModule, plan: StablePlan) -> str:
    return framework_build.cache_key(spec, rendered, "torch", ("torch", plan.torch), plan.cflags,
                                     extra=(("debug", str(spec.debug)),))


def stable_units(spec: ModuleSpec, generated: list[Path], shared_root: Path | None) -> list[Unit]:
    """The library's units: the user's C++ with the ops, and the runtime's sources. With
    ``shared_root`` (the object cache's root), the generated file is compiled from a
    content-addressed copy (ksbind/backend/compile.py, shared_copies)."""
    sources = [p for p in generated if p.suffix in (".cpp", ".h")]
    copies = shared_copies(shared_root, sources) if shared_root is not None else {p: p for p in sources}
    by_name = {p.name: p for p in sources}
    unit = framework_build.ks_unit(spec, UNIT, unit_text(spec, copies[by_name[ENTRIES]]), shared_root)
    debug = DEBUG_FLAGS if spec.debug else ()  # last: its -O0 wins over the units' own
    ks_flags = (FAST_MATH_FLAGS if spec.fast_math else ()) + debug
    parts = tuple((copies[g], g) for g in sources)
    runtime_sources = [] if spec.runtime.bundled else list(spec.runtime.sources)
    return [Unit(unit, ks_flags, parts=parts), Unit(copies[by_name[OPS]], GLUE_FLAGS + debug, pch=True, parts=parts,
                                                  yields=True),
            *(Unit(Path(s), debug) for s in runtime_sources)]


def _entry(root: Path, name: str, key: str) -> CacheEntry:
    return CacheEntry(root, lib_name(name), key, suffix=LIB_EXT, target="torch")


def build_planned(spec: ModuleSpec, rendered: RenderedModule, plan: StablePlan, key: str, root: Path) -> ModuleType:
    """Generate, compile (or reuse the cache under ``root``) and import a torch module."""
    entry = _entry(root, spec.name, key)
    generated = write_generated(spec.output, rendered)
    with framework_build.building(spec, entry) as must_compile:
        if must_compile:
            _compile(spec, rendered, plan, entry, generated)
        return framework_build.imported(spec, entry)


def _compile(spec: ModuleSpec, rendered: RenderedModule, plan: StablePlan, entry: CacheEntry,
             generated: list[Path]) -> None:
    tc = toolchain(spec, plan)
    objects = object_cache(entry.root)
    units = stable_units(spec, generated, entry.root if objects is not None else None)

    # The link stub (ksbind/targets/torch/link_stub.py): made beside the compiles if no build has.
    library = torch_dir() / CPU_LIBRARY
    link_stub.start(entry.root, library, tc.cxx)
    install_entry(entry, units, tc, objects=objects, log_dir=spec.output, label=spec.name,
                  companions=wrapper_files(spec.name, rendered.files),
                  link_first=link_stub.link_first(entry.root, library))


def start_torch_import() -> None:
    """Import torch on a thread that yields the cores (YIELDING), its largest library
    (libtorch_cpu, 0.17 s of the dynamic linker's work) loaded first without the GIL."""
    found = find_torch()
    lib = found / CPU_LIBRARY if found is not None else None
    import_meanwhile("torch", nice=YIELDING, preload=(lib,) if lib is not None and lib.is_file() else ())


class StableKind:
    """The torch target's build kind (ksbind/backend/kind.py)."""

    def prepare(self, spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[StablePlan]:
        plan = stable_plan(spec)
        return PreparedBuild(spec, rendered, cache_key(spec, rendered, plan), plan, self)

    def build(self, prepared: PreparedBuild[StablePlan], root: Path) -> ModuleType:
        return build_planned(prepared.spec, prepared.rendered, prepared.plan, prepared.key, root)

    def loads(self, prepared: PreparedBuild[StablePlan], root: Path) -> tuple[CacheEntry, Steps]:
        name = prepared.spec.name
        entry = _entry(root, name, prepared.key)
        return entry, [["import", "torch"], ["wrapper", name, str(entry.dir / f"{name}.py")]]

    def standalone_units(self, spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        plan = stable_plan(spec)
        return stable_units(spec, generated, None), toolchain(spec, plan)

    def schedule(self) -> Schedule:
        """torch's import (the wrapper imports it first, cached build or not) while ksc runs, a
        core idle, and while the units compile (about a second the compile hides)."""
        return Schedule(while_ksc=start_torch_import, while_compiling=start_torch_import)


TORCH = StableKind()

__all__ = ["StableKind", "TORCH", "StablePlan", "stable_plan", "build_planned", "cache_key", "stable_units",
           "toolchain", "unit_text", "vector_math_flags", "CFLAGS", "GLUE_FLAGS", "torch_dir", "torch_version"]
