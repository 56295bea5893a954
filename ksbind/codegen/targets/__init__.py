"""Binding targets: how ks values cross into Python for each kind of module.

Each target module defines ``NAME``, ``FILES`` (output file -> template, split
layout), ``SINGLE_FILE`` (the combined layout) and ``module_context(...)``,
which returns plain values for the templates.
"""
from __future__ import annotations

from types import ModuleType

from ksbind.codegen.targets import ks as ks_target
from ksbind.codegen.targets import python as python_target
from ksbind.codegen.targets import torch as torch_target
from ksbind.errors import ConfigError, Location, closest

TARGETS: dict[str, ModuleType] = {"ks": ks_target, "python": python_target, "torch": torch_target}


def get_target(name: str, where: Location | None = None) -> ModuleType:
    try:
        return TARGETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown target {name!r}{closest(str(name), TARGETS)}; expected one of {', '.join(TARGETS)}",
            where,
        ) from None
