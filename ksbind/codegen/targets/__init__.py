"""Binding targets: how ks values cross into Python for each kind of module.

Each target module (ks.py, python.py, torch.py, jax.py) defines its ``TARGET``, one
frozen ``Target`` record (record.py): its files, how each type crosses, its
template context, its build kind and its flags. Only this package and the
backend know target names; everything else looks a record up by
``get_target(name)`` and asks it.
"""
from __future__ import annotations

from ksbind.codegen.targets import jax as jax_target
from ksbind.codegen.targets import ks as ks_target
from ksbind.codegen.targets import python as python_target
from ksbind.codegen.targets import torch as torch_target
from ksbind.codegen.targets.record import Target
from ksbind.errors import ConfigError, Location, closest

TARGETS: dict[str, Target] = {t.name: t for t in (ks_target.TARGET, python_target.TARGET, torch_target.TARGET,
                                                  jax_target.TARGET)}
#: Other names a config may give: ``torch_stable`` was the torch target's name while it was a
#: preview beside the pybind11 one it replaced.
ALIASES: dict[str, str] = {"torch_stable": "torch"}


def get_target(name: str, where: Location | None = None) -> Target:
    try:
        return TARGETS[ALIASES.get(name, name)]
    except KeyError:
        raise ConfigError(
            f"unknown target {name!r}{closest(str(name), TARGETS)}; expected one of {', '.join(TARGETS)}",
            where,
        ) from None


__all__ = ["ALIASES", "Target", "TARGETS", "get_target"]
