"""Binding targets: how ks values cross into Python for each kind of module.

Each target module (ks.py, python.py, torch.py, jax.py) defines its ``TARGET``, one
frozen ``Target`` record (record.py): its files, how each type crosses, its
template context, its build kind and its flags. Only this package and the
backend know target names; everything else looks a record up by
``get_target(name)`` and asks it.

A target can also live in another installed distribution: one that names a ``Target``
under the entry point group ``ksbind.targets`` (``hello = "ksbind_hello:TARGET"``) adds
the target ``hello``, found the first time a config or call names it
(docs/templates.md, "Adding a target").
"""
from __future__ import annotations

from functools import cache
from importlib import metadata

from ksbind.codegen.targets.record import Target, TargetOption
from ksbind.errors import ConfigError, Location, closest
from ksbind.targets.jax import target as jax_target
from ksbind.targets.ks import target as ks_target
from ksbind.targets.python import target as python_target
from ksbind.targets.torch import target as torch_target

#: ksbind's own targets.
TARGETS: dict[str, Target] = {t.name: t for t in (ks_target.TARGET, python_target.TARGET, torch_target.TARGET,
                                                  jax_target.TARGET)}
#: Other names a config may give: ``torch_stable`` was the torch target's name while it was a
#: preview beside the pybind11 one it replaced.
ALIASES: dict[str, str] = {"torch_stable": "torch"}
#: The entry point group through which another distribution adds a target.
ENTRY_POINT_GROUP = "ksbind.targets"


def get_target(name: str, where: Location | None = None) -> Target:
    """The target a config's ``target:`` names: ksbind's own, or one an installed distribution
    registers (loaded when first named); an unknown name is a ConfigError at ``where``."""
    name = ALIASES.get(name, name)
    found = TARGETS.get(name)
    if found is not None:
        return found
    registered = _registered(name)
    if registered is not None:
        return registered
    known = [*TARGETS, *registered_names()]
    raise ConfigError(f"unknown target {name!r}{closest(str(name), known)}; expected one of {', '.join(known)}",
                      where)


def registered_names() -> list[str]:
    """The names other installed distributions register targets under (not loaded)."""
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)} - set(TARGETS))


# Per process: the installed distributions do not change under a running program, and a
# target's record is a frozen value (as ksbind's own are, imported once).
@cache
def _registered(name: str) -> Target | None:
    """The target registered under ``name`` (loaded), or None when none is."""
    points = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not points:
        return None
    if len(points) > 1:
        raise ConfigError(f"target {name!r} is registered by several installed distributions ("
                          f"{', '.join(_origin(ep) for ep in points)}); uninstall all but one")
    ep = points[0]
    try:
        target = ep.load()
    except Exception as e:  # the other distribution's import: any error it raises
        raise ConfigError(f"target {name!r} ({_origin(ep)}) failed to load: {type(e).__name__}: {e}") from e
    if not isinstance(target, Target):
        raise ConfigError(f"target {name!r} ({_origin(ep)}) is a {type(target).__name__}, not a "
                          "ksbind.codegen.targets.record.Target")
    if target.name != name:
        raise ConfigError(f"target {name!r} ({_origin(ep)}) is a Target named {target.name!r}: the entry "
                          "point's name and the record's must agree")
    return target


def _origin(ep: metadata.EntryPoint) -> str:
    dist = ep.dist
    who = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an installed distribution"
    return f"{ENTRY_POINT_GROUP} entry point {ep.value!r} of {who}"


__all__ = ["ALIASES", "ENTRY_POINT_GROUP", "Target", "TargetOption", "TARGETS", "get_target", "registered_names"]
