"""A pyproject-only project's ksbind settings: ``[tool.ksbind]`` of its
``pyproject.toml`` read into a ``Project`` (ksbind/build_meta.py builds it).

Its modules come from YAML configs the table names (``config = "ksbind.yaml"``,
or a list; ``ksbind.yaml`` beside pyproject.toml when nothing is named) or from
inline ``[[tool.ksbind.modules]]`` tables, which take the keys of a YAML
module (paths relative to pyproject.toml). docs/packaging.md describes every key.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, from PyPI, before it joined the standard library
    import tomli as tomllib

from ksbind.errors import ConfigError, KsbindError, Location, closest
from ksbind.lang.identifiers import identifier_problem
from ksbind.spec import ModuleSpec

TOOL_KEYS = ("config", "modules", "package", "packages", "templates", "sdist", "wheel")
SDIST_KEYS = ("include", "exclude")
WHEEL_KEYS = ("repair", "exclude-libs")
#: Never in an sdist, at any depth: version control, caches, venvs, compiled files.
ALWAYS_EXCLUDED = (".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv*",
                   "*.egg-info", "*.pyc", "*.so", ".tox", ".nox")
#: Never in an sdist, at its top: build outputs (ksbind's ``output:`` default, setuptools', build's).
TOP_EXCLUDED = ("build", "dist")
#: Libraries a repaired wheel must not carry: torch's (loaded by ``import torch`` before an extension is)
#: and Python's own. docs/packaging.md says why and what libgomp is.
REPAIR_EXCLUDES = ("libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_python.so", "libtorch_global_deps.so",
                   "libshm.so", "libgomp*.so*", "libpython3*.so*")


@dataclass(frozen=True)
class ProjectModule:
    """One ksbind module of the project, installed in ``package`` (None: top level)."""

    spec: ModuleSpec
    package: str | None

    @property
    def fullname(self) -> str:
        """What users import."""
        return f"{self.package}.{self.spec.name}" if self.package else self.spec.name

    @property
    def folder(self) -> Path:
        """Its folder inside the wheel."""
        return Path(*self.package.split(".")) if self.package else Path()


@dataclass(frozen=True)
class Project:
    root: Path
    pyproject: dict[str, Any]
    modules: tuple[ProjectModule, ...]
    configs: tuple[Path, ...]            # the YAML configs named (absolute)
    packages: tuple[Path, ...]           # Python package folders shipped, relative to root
    templates: tuple[str, ...]
    sdist_include: tuple[str, ...]
    sdist_exclude: tuple[str, ...]
    repair: bool
    exclude_libs: tuple[str, ...]

    @property
    def pyproject_path(self) -> Path:
        return self.root / "pyproject.toml"

    @property
    def package_roots(self) -> tuple[Path, ...]:
        """The folders (absolute) an editable install puts on sys.path: those holding the packages."""
        roots = {(self.root / p).parent for p in self.packages} or {self.root}
        return tuple(sorted(roots))


def _table_line(text: str, header: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(header):
            return i
    return None


def load_project(root: str | os.PathLike[str]) -> Project:
    """``root``'s pyproject.toml and its ``[tool.ksbind]`` (a ConfigError names
    the file and the table's line when a key is wrong)."""
    root = Path(root).resolve()
    path = root / "pyproject.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read pyproject.toml: {e.strerror}", Location(str(path))) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", Location(str(path))) from None
    tool = data.get("tool", {}).get("ksbind", {})
    where = Location(str(path), _table_line(text, "[tool.ksbind"))
    if not isinstance(tool, dict):
        raise ConfigError("[tool.ksbind] must be a table", where)
    _known(tool, TOOL_KEYS, "[tool.ksbind]", where)
    sdist = _subtable(tool, "sdist", SDIST_KEYS, where)
    wheel = _subtable(tool, "wheel", WHEEL_KEYS, where)
    repair = _bool(wheel, "repair", True, where)
    exclude_libs = REPAIR_EXCLUDES + tuple(_strings(wheel, "exclude-libs", where))

    package = tool.get("package")
    if package is not None:
        if not isinstance(package, str) or not package:
            raise ConfigError("[tool.ksbind] package: expected a dotted package name", where)
        for part in package.split("."):
            problem = identifier_problem(part)
            if problem:
                raise ConfigError(f"[tool.ksbind] package {package!r}: {problem}", where)

    configs = _strings(tool, "config", where)
    specs: list[ModuleSpec] = []
    config_paths: list[Path] = []
    if not configs and "modules" not in tool and (root / "ksbind.yaml").is_file():
        configs = ["ksbind.yaml"]
    for name in configs:
        from ksbind.config import load_config

        config_path = (root / name).resolve()
        if not config_path.is_file():
            raise ConfigError(f"[tool.ksbind] config: {name!r} is not a file (paths are relative to "
                              "pyproject.toml)", where)
        config_paths.append(config_path)
        specs.extend(load_config(config_path))
    if "modules" in tool:
        specs.extend(_inline_modules(tool["modules"], path, text,
                                     Location(str(path), _table_line(text, "[[tool.ksbind.modules]]"))))
    if not specs:
        raise ConfigError("no ksbind modules: [tool.ksbind] needs config = \"ksbind.yaml\" (a YAML config) or "
                          "[[tool.ksbind.modules]] tables", where)
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise ConfigError(f"two modules are named {s.name!r}", s.location or where)
        seen.add(s.name)

    packages = tuple(Path(p) for p in _strings(tool, "packages", where)) if "packages" in tool \
        else _discover_packages(root, data)
    for p in packages:
        if not (root / p / "__init__.py").is_file():
            raise ConfigError(f"[tool.ksbind] packages: {p} has no __init__.py", where)
    return Project(
        root=root, pyproject=data, modules=tuple(ProjectModule(s, package) for s in specs),
        configs=tuple(config_paths), packages=packages, templates=tuple(_strings(tool, "templates", where)),
        sdist_include=tuple(_strings(sdist, "include", where)), sdist_exclude=tuple(_strings(sdist, "exclude", where)),
        repair=repair, exclude_libs=exclude_libs,
    )


def _known(table: dict[str, Any], keys: Sequence[str], what: str, where: Location) -> None:
    for key in table:
        if key not in keys:
            raise ConfigError(f"{what}: unknown key {key!r}{closest(key, keys)}; expected one of {', '.join(keys)}",
                              where)


def _subtable(tool: dict[str, Any], key: str, keys: Sequence[str], where: Location) -> dict[str, Any]:
    value = tool.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"[tool.ksbind] {key}: expected a table ([tool.ksbind.{key}])", where)
    _known(value, keys, f"[tool.ksbind.{key}]", where)
    return value


def _strings(table: dict[str, Any], key: str, where: Location) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key}: expected a string or a list of strings", where)
    return value


def _bool(table: dict[str, Any], key: str, default: bool, where: Location) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false", where)
    return value


def _inline_modules(value: Any, path: Path, text: str, where: Location) -> list[ModuleSpec]:
    """``[[tool.ksbind.modules]]``: each table is a YAML config's module, read by the config
    reader itself (ksbind/config.py), its errors at the TOML key's line and column."""
    from ksbind.config import load_toml_modules

    if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
        raise ConfigError("[[tool.ksbind.modules]]: expected one or more tables", where)
    try:
        return load_toml_modules(value, text, path)
    except KsbindError as e:
        raise type(e)(f"[[tool.ksbind.modules]]: {e.message}", e.location or where) from None


def _discover_packages(root: Path, data: dict[str, Any]) -> tuple[Path, ...]:
    """The project's import package, found as other backends find it: ``src/NAME``
    or ``NAME``, NAME being the project's name with ``-``/``.`` as ``_``."""
    name = re.sub(r"[-_.]+", "_", str(data.get("project", {}).get("name", ""))).lower()
    for candidate in (Path("src") / name, Path(name)):
        if name and (root / candidate / "__init__.py").is_file():
            return (candidate,)
    return ()


__all__ = ["Project", "ProjectModule", "load_project", "ALWAYS_EXCLUDED", "TOP_EXCLUDED", "REPAIR_EXCLUDES"]
