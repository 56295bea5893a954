"""Where the build cache lives and what the things in its root are called.

``cache_root()`` is ``$KSBIND_CACHE_DIR``, else ``$XDG_CACHE_HOME/ksbind``, else
``~/.cache/ksbind``. In it: one folder per module build (``NAME-KEY16/``, see
ksbind.cache.entries) and per ksc output, and these shared folders and
temporary names.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when needed: a no-op build (ksbind/build_api.py) needs only cache_root
    from ksbind.errors import BuildError

#: load_ks's sources, one folder per source text (ksbind/load.py).
LOAD_KS_DIR = "load_ks"
#: Folders of the parts shared by every module (ksbind.cache.objects, ksbind.backend.pch):
#: compiled objects and precompiled headers, one entry per ``DIR/UNITKEY16/DEPSKEY16/``.
OBJECTS_DIR = "objects"
PCH_DIR = "pch"
#: Each shared entry's record (key, source, headers with their sha256, files); its mtime is the last use.
DEPS = "deps.json"
#: Copies of generated files (and init units) the shared objects are compiled from: small, removed by clean --all.
UNITS_DIR = "units"
#: No-op records (ksbind/build_api.py): one JSON file per config and module name, what its last build read.
NOOP_DIR = "noop"
#: Jinja2's compiled templates (ksbind/codegen/render.py), one folder per ksbind and Jinja2 version.
TEMPLATES_DIR = "templates"
#: Link-time stand-ins for torch's CPU library (ksbind/targets/torch/link_stub.py), one folder per torch library.
LINK_STUBS_DIR = "link-stubs"
#: Folders in the root that are neither entries nor shared parts: small, removed by clean --all.
SIDE_DIRS = (UNITS_DIR, NOOP_DIR, TEMPLATES_DIR, LINK_STUBS_DIR)
#: Entries being removed are first renamed to a name with this prefix (a reader sees all of an entry or none).
TRASH_PREFIX = ".trash-"
#: Prefixes of temporary folders in the cache root (builds, ksc runs): removed once stale.
TEMP_PREFIXES = (".staging-", ".ksc-", ".in-")


def cache_root() -> Path:
    env = os.environ.get("KSBIND_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ksbind"


#: What to do, for each kind of filesystem fault in the cache.
_FULL = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_NOT_A_FOLDER = (errno.ENOTDIR, errno.EEXIST)


def _within(path: str, root: Path) -> bool:
    """Whether path is the cache root, in it, or one of the folders above it (made for it)."""
    p, r = os.path.abspath(path), os.path.abspath(root)
    return p == r or p.startswith(r + os.sep) or r.startswith(p.rstrip(os.sep) + os.sep)


def check_root(root: Path) -> None:
    """A BuildError when the cache root is there but is not a folder."""
    from ksbind.errors import BuildError, Location

    if os.path.lexists(root) and not os.path.isdir(root):
        raise BuildError(f"the build cache {root} is not a folder (it is a file): remove it, or set "
                         "KSBIND_CACHE_DIR to a folder", Location(str(root)))


def cache_fault(error: OSError, root: Path) -> BuildError | None:
    """The one-line BuildError of a filesystem fault in the cache (full, read-only or
    not writable, a file where a folder belongs): which path, what failed, what to do;
    None when ``error`` is not one."""
    from ksbind.errors import BuildError, Location

    name = error.filename if isinstance(error.filename, str) else None
    if name is not None and not _within(name, root):
        return None
    what = f"{name}: {error.strerror}" if name is not None else str(error.strerror or error)
    if error.errno in _FULL:
        return BuildError(f"the build cache {root} is full ({what}): free space there (ksbind cache clean), "
                          "or set KSBIND_CACHE_DIR to a folder on another disk; nothing half-written was kept",
                          Location(str(root)))
    if name is None:
        return None
    if error.errno in _READ_ONLY:
        return BuildError(f"cannot write to the build cache {root} ({what}): make it writable, or set "
                          "KSBIND_CACHE_DIR to a writable folder", Location(str(root)))
    if error.errno in _NOT_A_FOLDER:
        return BuildError(f"the build cache {root} cannot be made ({what}): a file stands where a folder "
                          "belongs; remove it, or set KSBIND_CACHE_DIR to a folder", Location(str(root)))
    return None


__all__ = ["cache_root", "check_root", "cache_fault",
           "LOAD_KS_DIR", "OBJECTS_DIR", "PCH_DIR", "DEPS", "UNITS_DIR", "NOOP_DIR", "TEMPLATES_DIR", "LINK_STUBS_DIR",
           "SIDE_DIRS",
           "TRASH_PREFIX",
           "TEMP_PREFIXES"]
