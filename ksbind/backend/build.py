"""The backend's one way in: a rendered module to a built one, whatever its target.

Each target's record names its build kind (``Target.build``: "pybind11",
"python-capi", "torch" or "jax"); this module picks the build for it, so callers
(pipeline.py, standalone.py) never learn there is more than one:

- ``prepare_build(spec, rendered)``: the module's cache key, known before
  anything compiles (pipeline.py chooses a versioned name by it);
- ``build_module(prepared, root)``: compile (or reuse the cache), install and import;
- ``standalone_units(spec, generated)``: the translation units and toolchain
  of a build outside the cache (a wheel: standalone.py).

The native build (native.py) compiles pybind11 and Python C API modules; the
torch build (torch_build.py, imported only for torch modules) compiles torch
extensions and installs their Python wrapper; the jax build (jax_build.py,
imported only for jax modules) compiles a library of XLA FFI handlers beside
its pure-Python wrapper.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ksbind.backend.native import (
    CompilePlan,
    build_plan,
    cache_key,
    compile_plan,
    module_entry,
    plan_toolchain,
    plan_units,
)
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.cache.entries import CacheEntry
from ksbind.codegen.output import write_generated
from ksbind.codegen.render import RenderedModule
from ksbind.codegen.targets import get_target
from ksbind.inputs import note_module
from ksbind.spec import ModuleSpec


@dataclass(frozen=True)
class PreparedBuild:
    """A rendered module ready to build: its cache key, and what the build needs.

    plan: the native build's compile plan (its generated files already written);
    None for a torch build, which writes them itself.
    """

    spec: ModuleSpec
    rendered: RenderedModule
    key: str
    plan: CompilePlan | None = None


def _is_torch(spec: ModuleSpec) -> bool:
    return get_target(spec.target).build == "torch"


def _is_jax(spec: ModuleSpec) -> bool:
    return get_target(spec.target).build == "jax"


def prepare_build(spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild:
    """The module's cache key: the native build writes the generated files to
    ``spec.output`` first (its key hashes them there)."""
    if _is_torch(spec):
        from ksbind.backend import torch_build  # torch is imported only for torch modules

        return PreparedBuild(spec, rendered, torch_build.module_key(spec, rendered))
    if _is_jax(spec):
        from ksbind.backend import jax_build  # jax is imported only for jax modules

        return PreparedBuild(spec, rendered, jax_build.module_key(spec, rendered))
    plan = compile_plan(spec, write_generated(spec.output, rendered))
    return PreparedBuild(spec, rendered, cache_key(plan, rendered.target), plan)


def build_module(prepared: PreparedBuild, root: Path) -> ModuleType:
    """Compile (or reuse the cache under ``root``), install and import the module."""
    if _is_torch(prepared.spec):
        from ksbind.backend import torch_build

        module = torch_build.build_torch_module(prepared.spec, prepared.rendered, cache_dir=root)
        note_module(module_record(prepared, root))
        return module
    if _is_jax(prepared.spec):
        from ksbind.backend import jax_build

        module = jax_build.build_jax_module(prepared.spec, prepared.rendered, cache_dir=root)
        note_module(module_record(prepared, root))
        return module
    assert prepared.plan is not None
    module = build_plan(prepared.plan, prepared.rendered, root)
    note_module(module_record(prepared, root))
    return module


def module_record(prepared: PreparedBuild, root: Path) -> dict[str, Any]:
    """How a no-op build (ksbind/noop.py) loads this build again without building: its cache
    entry (checked as a build checks it) and the import steps, in order ("import" a module
    first, an "extension" module from its file, a generated "wrapper")."""
    spec, key = prepared.spec, prepared.key
    if _is_torch(spec):
        from ksbind.codegen.targets.torch import ext_name

        ext = ext_name(spec.name)
        entry = CacheEntry(root, ext, key, target="torch")
        steps = [["import", "torch"], ["extension", ext, str(entry.module_path)],
                 ["wrapper", spec.name, str(entry.dir / f"{spec.name}.py")]]
    elif _is_jax(spec):
        from ksbind.backend import jax_build
        from ksbind.codegen.targets.jax import lib_name

        entry = CacheEntry(root, lib_name(spec.name), key, suffix=jax_build.LIB_EXT, target="jax")
        steps = [["wrapper", spec.name, str(entry.dir / f"{spec.name}.py")]]
    else:
        entry = module_entry(root, spec.name, key, prepared.rendered.target)
        steps = [["extension", spec.name, str(entry.module_path)]]
    return {"name": spec.name, "key": key, "steps": steps,
            "entry": {"dir": str(entry.dir), "name": entry.name, "key": entry.key,
                      "module_file": entry.module_path.name}}


def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
    """The units and toolchain that build ``spec``'s generated files (in
    ``spec.output``) outside the cache: no object cache, no shared copies."""
    if _is_torch(spec):
        from ksbind.backend import torch_build

        cflags, ldflags = torch_build.flags()
        tc = torch_build.toolchain(torch_build.include_dirs_for(spec), cflags, ldflags)
        return torch_build.torch_units(spec, generated, tc, get_target(spec.target).compiled_name(spec.name),
                                       None), tc
    if _is_jax(spec):
        from ksbind.backend import jax_build

        return jax_build.jax_units(spec, generated, None), jax_build.toolchain(spec)
    plan = compile_plan(spec, generated)
    tc = plan_toolchain(plan)
    return plan_units(plan, tc, None), tc


__all__ = ["PreparedBuild", "prepare_build", "build_module", "module_record", "standalone_units"]
