"""The backend's one way in: a rendered module to a built one, whatever its target.

Each target's record names its build kind (``Target.build``: "pybind11",
"python-capi", or its package's own as ``package.module:NAME``); this module picks the build
for it, so callers
(pipeline.py, standalone.py) never learn there is more than one:

- ``prepare_build(spec, rendered)``: the module's cache key, known before
  anything compiles (pipeline.py chooses a versioned name by it);
- ``build_module(prepared, root)``: compile (or reuse the cache), install and import;
- ``schedule(spec)``: what the build overlaps with ksc's run and its compiles (torch's
  import), declared by its kind, which the pipeline puts in the build session;
- ``standalone_units(spec, generated)``: the translation units and toolchain
  of a build outside the cache (a wheel: standalone.py).

Each kind is a ``BuildKind`` (kind.py), asked rather than tested for: the
native build (native.py) compiles pybind11 and Python C API modules; a target package's own
kind is imported when one of its modules is built (the torch target's compiles a library of
torch ops and installs its Python wrapper, the jax target's a library of XLA FFI handlers
beside its pure-Python wrapper: ksbind/targets/torch/build.py, ksbind/targets/jax/build.py,
both on framework_build.py).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from ksbind.backend.kind import BuildKind, PlanT, PreparedBuild
from ksbind.backend.native import NATIVE
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.codegen.render import RenderedModule
from ksbind.codegen.targets.record import BUILD_KINDS
from ksbind.errors import ConfigError
from ksbind.inputs import note_module
from ksbind.session import Schedule
from ksbind.spec import ModuleSpec
from ksbind.targets.registry import get_target


def _kind(spec: ModuleSpec) -> BuildKind[Any]:
    """The build kind of ``spec``'s target (``Target.build``: one of record.py's BUILD_KINDS, or
    ``package.module:NAME``, a build kind of the target's own package)."""
    build = get_target(spec.target).build
    if build in BUILD_KINDS:
        return NATIVE
    return _imported_kind(spec.target, build)  # imported only when one of its modules is built


#: What the backend asks of a build kind (BuildKind's methods).
_KIND_METHODS = ("prepare", "build", "loads", "standalone_units", "schedule")


def _imported_kind(target: str, where: str) -> BuildKind[Any]:
    """The build kind a target's own package names as ``package.module:NAME``."""
    module_name, _, attr = where.partition(":")
    try:
        kind = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"target {target!r}: its build kind {where!r} failed to load: {type(e).__name__}: "
                          f"{e}") from e
    lacking = [m for m in _KIND_METHODS if not callable(getattr(kind, m, None))]
    if lacking:
        raise ConfigError(f"target {target!r}: its build kind {where!r} is no BuildKind (ksbind/backend/kind.py): "
                          f"it has no {', '.join(lacking)}")
    return cast("BuildKind[Any]", kind)


def prepare_build(spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[Any]:
    """The module's cache key: the native build writes the generated files to
    ``spec.output`` first (its key hashes them there)."""
    return _kind(spec).prepare(spec, rendered)


def build_module(prepared: PreparedBuild[PlanT], root: Path) -> ModuleType:
    """Compile (or reuse the cache under ``root``), install and import the module."""
    module = prepared.kind.build(prepared, root)
    note_module(module_record(prepared, root))
    return module


def module_record(prepared: PreparedBuild[PlanT], root: Path) -> dict[str, Any]:
    """How a no-op build (ksbind/build_api.py) loads this build again without building: its cache
    entry (checked as a build checks it) and the import steps, in order ("import" a module
    first, an "extension" module from its file, a generated "wrapper")."""
    entry, steps = prepared.kind.loads(prepared, root)
    return {"name": prepared.spec.name, "key": prepared.key, "steps": steps,
            "entry": {"dir": str(entry.dir), "name": entry.name, "key": entry.key,
                      "module_file": entry.module_path.name}}


def schedule(spec: ModuleSpec) -> Schedule:
    """What building ``spec``'s module overlaps with ksc's run and its compiles (the torch
    target: torch's import; nothing for the others): pipeline.py puts it in the session."""
    return _kind(spec).schedule()


def standalone_units(spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
    """The units and toolchain that build ``spec``'s generated files (in
    ``spec.output``) outside the cache: no object cache, no shared copies."""
    return _kind(spec).standalone_units(spec, generated)


__all__ = ["PreparedBuild", "prepare_build", "build_module", "module_record", "standalone_units", "schedule"]
