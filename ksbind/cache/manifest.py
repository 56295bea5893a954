"""The record each module entry keeps of what it holds: ``manifest.json``, its
format, reading it and checking an entry against it (written last by
``CacheEntry.install``; ``check_entry`` serves ``CacheEntry.check``, the no-op
build of ksbind/build_api.py and ``ksbind cache list``), and the entries this
process uses (eviction leaves them alone).

Light on purpose (the standard library's os, json, hashlib): a no-op build
imports it to check an entry without the rest of the cache's machinery.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1

#: Per process, by nature: entry folders this process has used or installed (its modules may be
#: loaded from them): eviction never removes them (ksbind.cache.maintenance).
USED_HERE: set[str] = set()


def note_used(entry_dir: Path) -> None:
    """An entry folder (a module's, an object's, a precompiled header's) this
    process uses: eviction in this process leaves it alone."""
    USED_HERE.add(str(entry_dir))


def manifest_files(manifest: Any) -> dict[str, tuple[int, str]]:
    """A manifest's files as {name: (size, sha256)}; KeyError/TypeError/ValueError if malformed."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError("not a ksbind manifest")
    out: dict[str, tuple[int, str]] = {}
    for name, info in manifest["files"].items():
        size, digest = info["size"], info["sha256"]
        if not isinstance(name, str) or "/" in name or name.startswith(".") or not isinstance(size, int) \
                or not isinstance(digest, str):
            raise ValueError(f"bad file record {name!r}")
        out[name] = (size, digest)
    return out


def file_sha256(path: Path | str, dir_fd: int | None = None) -> str:
    """A file's sha256; with ``dir_fd``, ``path`` is relative to that open folder."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def still_named(fd: int, path: Path) -> bool:
    """Whether path still names the open file (or folder) fd: not deleted, renamed away or replaced."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


#: Files found intact: path -> (size, mtime_ns, inode, sha256 expected).
Verified = dict[str, tuple[int, int, int, str]]


def check_entry(entry_dir: Path, name: str, key: str, module_file: str, verified: Verified,
                sha256: Callable[[str, int], str] = file_sha256) -> tuple[str, str]:
    """``("ok", "")``, ``("missing", "")`` or ``("damaged", why)`` for the entry folder of
    module ``name``'s build ``key``, holding ``module_file``.

    Sizes are compared on every call, content (sha256) once per file while its
    size, mtime and inode stay those in ``verified`` (which a check fills). An
    entry without a manifest but with a module file (an older ksbind's, or an
    install cut short) is damaged; one without either is missing. Every file
    is read through one handle on the folder, and an entry removed (renamed
    away) while it was being checked counts as missing, not damaged: a reader
    sees the whole entry or none.
    """
    try:
        dir_fd = os.open(entry_dir, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return "missing", ""
    except OSError as e:
        return "damaged", f"cannot open it: {e.strerror}"
    try:
        state, why = _check_in(dir_fd, entry_dir, name, key, module_file, verified, sha256)
        if state != "ok" and not still_named(dir_fd, entry_dir):
            return "missing", ""
        return state, why
    finally:
        os.close(dir_fd)


def _check_in(dir_fd: int, entry_dir: Path, name: str, key: str, module: str, verified: Verified,
              sha256: Callable[[str, int], str]) -> tuple[str, str]:
    try:
        raw = _read_at(dir_fd, MANIFEST)
    except FileNotFoundError:
        if _exists_at(dir_fd, module):
            return "damaged", "it has no manifest (an older ksbind's entry, or an interrupted install)"
        return "missing", ""
    except OSError as e:
        return "damaged", f"cannot read {MANIFEST}: {e.strerror}"
    try:
        manifest = json.loads(raw)
        files = manifest_files(manifest)
    except (ValueError, TypeError, KeyError):
        return "damaged", f"{MANIFEST} is unreadable"
    if manifest.get("module") != name or manifest.get("key") != key:
        return "damaged", f"{MANIFEST} is another build's"
    if module not in files:
        return "damaged", f"{MANIFEST} does not list {module}"
    for fname, (size, digest) in files.items():
        try:
            st = os.stat(fname, dir_fd=dir_fd)
        except OSError:
            return "damaged", f"{fname} is missing"
        if st.st_size != size:
            return "damaged", f"{fname} has {st.st_size} bytes, its manifest says {size}"
        seen = (st.st_size, st.st_mtime_ns, st.st_ino, digest)
        where = str(entry_dir / fname)
        if verified.get(where) == seen:
            continue
        try:
            actual = sha256(fname, dir_fd)
        except OSError as e:
            return "damaged", f"cannot read {fname}: {e.strerror}"
        if actual != digest:
            return "damaged", f"{fname} does not match its sha256"
        verified[where] = seen
    return "ok", ""


def _read_at(dir_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd)
    except OSError:
        return False
    return True


__all__ = ["MANIFEST", "MANIFEST_FORMAT", "USED_HERE", "note_used", "manifest_files", "file_sha256", "still_named",
           "check_entry", "Verified"]
