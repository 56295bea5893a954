"""Editable installs of pyproject-only projects (PEP 660, ksbind/build_meta.py):
what the installed finder calls when one of the project's ksbind modules is
imported.

The module is built with ``ksbind.build`` from the project's current
``[tool.ksbind]`` and sources, through ksbind's cache: when its ks, C++,
config or templates changed it is rebuilt (logged on the ``ksbind`` logger),
otherwise it costs what a cache hit costs. A failed build raises the build's
error from the import; an older build is never loaded in its place.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ksbind import log

_log = log.get_logger()


class _BuiltLoader(importlib.abc.Loader):
    """Hands the import system the module ksbind built (already initialised)."""

    def __init__(self, root: str, name: str) -> None:
        self.root = root
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return build_for_import(spec.name, self.root, self.name)

    def exec_module(self, module: ModuleType) -> None:
        pass  # built and initialised by create_module


def module_spec(fullname: str, root: str, name: str) -> importlib.machinery.ModuleSpec:
    """The import spec of the project's ksbind module ``name``, imported as ``fullname``."""
    spec = importlib.util.spec_from_loader(fullname, _BuiltLoader(root, name))
    assert spec is not None
    return spec


def build_for_import(fullname: str, root: str, name: str) -> ModuleType:
    """Build (or find in the cache) module ``name`` of the project at ``root``."""
    from ksbind import session
    from ksbind.errors import BuildError
    from ksbind.pipeline import build_spec
    from ksbind.project import load_project

    project = load_project(root)
    found = [m for m in project.modules if m.spec.name == name]
    if not found:
        raise BuildError(f"{fullname}: the editable install of this project names module {name!r}, which its "
                         "[tool.ksbind] no longer has: reinstall it (pip install -e .)",
                         None)
    built: list[Path] = []
    with session.changed(installed=built):
        module = build_spec(found[0].spec, templates=project.templates)
    if built:
        _log.info("%s: rebuilt for this editable install (its sources, config or templates changed)", fullname)
    else:
        _log.debug("%s: up to date (ksbind's cache)", fullname)
    sys.modules[fullname] = module
    return module


__all__ = ["module_spec", "build_for_import"]
