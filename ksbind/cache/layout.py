"""Where the build cache lives and what the things in its root are called.

``cache_root()`` is ``$KSBIND_CACHE_DIR``, else ``$XDG_CACHE_HOME/ksbind``, else
``~/.cache/ksbind``. In it: one folder per module build (``NAME-KEY16/``, see
ksbind.cache.entries) and per ksc output, and these shared folders and
temporary names.
"""
from __future__ import annotations

import os
from pathlib import Path

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


__all__ = ["cache_root", "LOAD_KS_DIR", "OBJECTS_DIR", "PCH_DIR", "DEPS", "UNITS_DIR", "TRASH_PREFIX",
           "TEMP_PREFIXES"]
