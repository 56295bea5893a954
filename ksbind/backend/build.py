"""The backend's one way in: a rendered module to a built one, whatever its target.

Each target's record names its build kind (``Target.build``: "pybind11",
"python-capi", "torch" or "jax"); this module picks the build for it, so callers
(pipeline.py, standalone.py) never learn there is more than one:

- ``prepare_build(spec, rendered)``: the module's cache key, known before
  anything compiles (pipeline.py chooses a versioned name by it);
- ``build_module(prepared, root)``: compile (or reuse the cache), install and import;
- ``standalone_units(spec, generated)``: the translation units and toolchain
  of a build outside the cache (a wheel: standalone.py).

Each kind is a ``BuildKind`` (``BUILDS``, by the target record's ``build``):
``NativeBuild`` compiles pybind11 and Python C API modules (native.py);
``TorchBuild`` compiles torch extensions and installs their Python wrapper
(torch_build.py, imported only for torch modules); ``JaxBuild`` compiles a
library of XLA FFI handlers beside its pure-Python wrapper (jax_build.py,
imported only for jax modules). The functions here only ask the kind.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

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
from ksbind.codegen.targets.record import BuildName
from ksbind.inputs import note_module
from ksbind.spec import ModuleSpec

#: An import step of a no-op build (ksbind/noop.py): ["import", module], ["extension", name, path]
#: or ["wrapper", name, path].
ImportStep = list[str]


class BuildKind(Protocol):
    """How one kind of module is built. A kind object is made by ``prepare`` for one
    rendered module and holds what its build needs (the native build: its compile plan)."""

    @classmethod
    def prepare(cls, spec: ModuleSpec, rendered: RenderedModule) -> tuple[str, BuildKind]:
        """The module's cache key, and the kind object that builds it."""
        ...

    @staticmethod
    def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        """The units and toolchain of a build outside the cache (no object cache, no shared copies)."""
        ...

    def build(self, spec: ModuleSpec, rendered: RenderedModule, root: Path) -> ModuleType:
        """Compile (or reuse the cache under ``root``), install and import."""
        ...

    def entry(self, spec: ModuleSpec, rendered: RenderedModule, key: str,
              root: Path) -> tuple[CacheEntry, list[ImportStep]]:
        """The module's cache entry and the steps that import it again."""
        ...


class NativeBuild:
    """pybind11 and Python C API modules (native.py): the generated files are written to
    ``spec.output`` before the key is taken, since the key hashes them there."""

    def __init__(self, plan: CompilePlan) -> None:
        self.plan = plan

    @classmethod
    def prepare(cls, spec: ModuleSpec, rendered: RenderedModule) -> tuple[str, BuildKind]:
        plan = compile_plan(spec, write_generated(spec.output, rendered))
        return cache_key(plan, rendered.target), cls(plan)

    @staticmethod
    def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        plan = compile_plan(spec, generated)
        tc = plan_toolchain(plan)
        return plan_units(plan, tc, None), tc

    def build(self, spec: ModuleSpec, rendered: RenderedModule, root: Path) -> ModuleType:
        return build_plan(self.plan, rendered, root)

    def entry(self, spec: ModuleSpec, rendered: RenderedModule, key: str,
              root: Path) -> tuple[CacheEntry, list[ImportStep]]:
        entry = module_entry(root, spec.name, key, rendered.target)
        return entry, [["extension", spec.name, str(entry.module_path)]]


class TorchBuild:
    """torch extensions and their Python wrapper (torch_build.py, imported only for torch
    modules: importing it imports torch)."""

    @classmethod
    def prepare(cls, spec: ModuleSpec, rendered: RenderedModule) -> tuple[str, BuildKind]:
        from ksbind.backend import torch_build

        return torch_build.module_key(spec, rendered), cls()

    @staticmethod
    def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        from ksbind.backend import torch_build

        cflags, ldflags = torch_build.flags()
        tc = torch_build.toolchain(torch_build.include_dirs_for(spec), cflags, ldflags)
        return torch_build.torch_units(spec, generated, tc, get_target(spec.target).compiled_name(spec.name),
                                       None), tc

    def build(self, spec: ModuleSpec, rendered: RenderedModule, root: Path) -> ModuleType:
        from ksbind.backend import torch_build

        return torch_build.build_torch_module(spec, rendered, cache_dir=root)

    def entry(self, spec: ModuleSpec, rendered: RenderedModule, key: str,
              root: Path) -> tuple[CacheEntry, list[ImportStep]]:
        from ksbind.codegen.targets.torch import ext_name

        ext = ext_name(spec.name)
        entry = CacheEntry(root, ext, key, target="torch")
        return entry, [["import", "torch"], ["extension", ext, str(entry.module_path)],
                       ["wrapper", spec.name, str(entry.dir / f"{spec.name}.py")]]


class JaxBuild:
    """A library of XLA FFI handlers beside a pure-Python wrapper (jax_build.py, imported
    only for jax modules)."""

    @classmethod
    def prepare(cls, spec: ModuleSpec, rendered: RenderedModule) -> tuple[str, BuildKind]:
        from ksbind.backend import jax_build

        return jax_build.module_key(spec, rendered), cls()

    @staticmethod
    def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        from ksbind.backend import jax_build

        return jax_build.jax_units(spec, generated, None), jax_build.toolchain(spec)

    def build(self, spec: ModuleSpec, rendered: RenderedModule, root: Path) -> ModuleType:
        from ksbind.backend import jax_build

        return jax_build.build_jax_module(spec, rendered, cache_dir=root)

    def entry(self, spec: ModuleSpec, rendered: RenderedModule, key: str,
              root: Path) -> tuple[CacheEntry, list[ImportStep]]:
        from ksbind.backend import jax_build
        from ksbind.codegen.targets.jax import lib_name

        entry = CacheEntry(root, lib_name(spec.name), key, suffix=jax_build.LIB_EXT, target="jax")
        return entry, [["wrapper", spec.name, str(entry.dir / f"{spec.name}.py")]]


#: The build of each target record's ``build`` name (ksbind/codegen/targets/record.py).
BUILDS: dict[BuildName, type[BuildKind]] = {
    "pybind11": NativeBuild, "python-capi": NativeBuild, "torch": TorchBuild, "jax": JaxBuild}


def build_kind(spec: ModuleSpec) -> type[BuildKind]:
    return BUILDS[get_target(spec.target).build]


@dataclass(frozen=True)
class PreparedBuild:
    """A rendered module ready to build: its cache key and the kind object that builds it."""

    spec: ModuleSpec
    rendered: RenderedModule
    key: str
    kind: BuildKind


def prepare_build(spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild:
    """The module's cache key, known before anything compiles."""
    key, kind = build_kind(spec).prepare(spec, rendered)
    return PreparedBuild(spec, rendered, key, kind)


def build_module(prepared: PreparedBuild, root: Path) -> ModuleType:
    """Compile (or reuse the cache under ``root``), install and import the module."""
    module = prepared.kind.build(prepared.spec, prepared.rendered, root)
    note_module(module_record(prepared, root))
    return module


def module_record(prepared: PreparedBuild, root: Path) -> dict[str, Any]:
    """How a no-op build (ksbind/noop.py) loads this build again without building: its cache
    entry (checked as a build checks it) and the import steps, in order ("import" a module
    first, an "extension" module from its file, a generated "wrapper")."""
    spec, key = prepared.spec, prepared.key
    entry, steps = prepared.kind.entry(spec, prepared.rendered, key, root)
    return {"name": spec.name, "key": key, "steps": steps,
            "entry": {"dir": str(entry.dir), "name": entry.name, "key": entry.key,
                      "module_file": entry.module_path.name}}


def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
    """The units and toolchain that build ``spec``'s generated files (in
    ``spec.output``) outside the cache: no object cache, no shared copies."""
    return build_kind(spec).standalone_units(spec, generated)


__all__ = ["BuildKind", "BUILDS", "ImportStep", "JaxBuild", "NativeBuild", "PreparedBuild", "TorchBuild",
           "build_kind", "build_module", "module_record", "prepare_build", "standalone_units"]
