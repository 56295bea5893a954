"""A build kind of a target's own package, as tests/test_target_plugins.py registers one
(``Target.build = "tests.plugin_kinds:RECORDING"``): the native build, noting each step the
backend asks of it."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType
from typing import Any

from ksbind.backend.kind import PreparedBuild, Steps
from ksbind.backend.native import NATIVE
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.cache.entries import CacheEntry
from ksbind.codegen.render import RenderedModule
from ksbind.session import Schedule
from ksbind.spec import ModuleSpec


class RecordingKind:
    """ksbind's native build kind under another name, with the steps it was asked for."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    def prepare(self, spec: ModuleSpec, rendered: RenderedModule) -> PreparedBuild[Any]:
        self.steps.append("prepare")
        return dataclasses.replace(NATIVE.prepare(spec, rendered), kind=self)

    def build(self, prepared: PreparedBuild[Any], root: Path) -> ModuleType:
        self.steps.append("build")
        return NATIVE.build(dataclasses.replace(prepared, kind=NATIVE), root)

    def loads(self, prepared: PreparedBuild[Any], root: Path) -> tuple[CacheEntry, Steps]:
        self.steps.append("loads")
        return NATIVE.loads(dataclasses.replace(prepared, kind=NATIVE), root)

    def standalone_units(self, spec: ModuleSpec, generated: list[Path]) -> tuple[list[Unit], Toolchain]:
        return NATIVE.standalone_units(spec, generated)

    def schedule(self) -> Schedule:
        self.steps.append("schedule")
        return Schedule()


RECORDING = RecordingKind()
NOT_A_KIND = object()
