"""What every build kind gives the backend's way in (ksbind/backend/build.py):
``BuildKind``, one implementation per kind (native.py's ``NATIVE`` for the ks and
python targets, torch_build.py's ``TORCH``, jax_build.py's ``JAX``), and
``PreparedBuild``, a rendered module with its key and its kind's own plan.

build.py asks the kind; it never tests which target it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Generic, Protocol, TypeVar

from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.cache.entries import CacheEntry
from ksbind.codegen.render import RenderedModule
from ksbind.session import Schedule
from ksbind.spec import ModuleSpec

PlanT = TypeVar("PlanT")

#: A no-op build's import steps (ksbind/build_api.py), in order: ["import", module],
#: ["extension", name, file], ["wrapper", name, file].
Steps = list[list[str]]


@dataclass(frozen=True)
class PreparedBuild(Generic[PlanT]):
    """A rendered module ready to build: its cache key, its kind, and the plan the
    kind made for it (what the key was computed from, reused by the build)."""

    spec: ModuleSpec
    rendered: RenderedModule
    key: str
    plan: PlanT
    kind: BuildKind[PlanT]


class BuildKind(Protocol[PlanT]):
    """One kind of build (``Target.build``'s values map to one each: build.py)."""

    def prepare(self, spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[PlanT]:
        """The module's plan and cache key, before anything compiles."""
        ...

    def build(self, prepared: PreparedBuild[PlanT], root: Path) -> ModuleType:
        """Compile (or reuse the cache under ``root``), install and import."""
        ...

    def loads(self, prepared: PreparedBuild[PlanT], root: Path) -> tuple[CacheEntry, Steps]:
        """The cache entry a no-op build checks, and its import steps."""
        ...

    def standalone_units(self, spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        """The units and toolchain of ``generated`` (in ``spec.output``) built
        outside the cache: no object cache, no shared copies."""
        ...

    def schedule(self) -> Schedule:
        """What a build of this kind overlaps with ksc's run and its compiles (torch's import
        on a thread), declared: the pipeline puts it in the build session, and ksc's driver
        and the compile step start each part (ksbind/session.py)."""
        ...


__all__ = ["BuildKind", "PreparedBuild", "PlanT", "Steps"]
