"""Managing the cache root: what it holds (``scan``, as ``ksbind cache list``
shows it), the size cap (``cache_max_bytes``), eviction of least recently used
entries (``evict``), ``ksbind cache clean`` (``clean``) and removing entries
and leftovers safely.

- Entries are removed by renaming their folder to ``.trash-*`` in one step,
  then deleting that: a concurrent reader sees the whole entry or none. A
  module entry is removed only under its lock, taken without waiting (an
  entry being built is skipped).
- Eviction never removes an entry this process used (``note_used``) nor one
  used in the last minutes.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import stat
import time
import uuid
from pathlib import Path

from ksbind.cache import manifest
from ksbind.cache.keys import file_sha256
from ksbind.cache.layout import (
    DEPS,
    LOAD_KS_DIR,
    OBJECTS_DIR,
    PCH_DIR,
    SIDE_DIRS,
    TEMP_PREFIXES,
    TRASH_PREFIX,
    cache_root,
)
from ksbind.cache.locks import try_lock
from ksbind.cache.manifest import MANIFEST, manifest_files, note_used
from ksbind.errors import BuildError

#: Staging folders older than this are left over from killed builds: removed.
STALE_STAGING_SECONDS = 3600.0
#: The size cap when KSBIND_CACHE_MAX_BYTES is unset or 0: 2 GiB. A module is
#: 0.3-0.5 MB (-g0), so that is thousands of builds, or ~100 with debug info.
DEFAULT_MAX_BYTES = 2 * 1024 ** 3
#: Eviction never removes an entry used (or built) less than this long ago: a
#: build that has just checked an entry is importing it, and a ksc output is
#: in use until the module built from it is compiled.
EVICT_MIN_IDLE_SECONDS = 600.0
#: The shared folders (ksbind.cache.objects) and the kind of entry each holds.
SHARED_DIRS = {OBJECTS_DIR: "object", PCH_DIR: "pch"}
_ENTRY_NAME = re.compile(r"^(?P<name>.+)-(?P<key>[0-9a-f]{16})$")


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)", re.IGNORECASE)


def cache_max_bytes(text: str | None = None) -> int:
    """KSBIND_CACHE_MAX_BYTES (or ``text``): bytes, or with a K, M, G or T suffix
    (powers of 1024: ``2G``, ``500MiB``); unset or 0: DEFAULT_MAX_BYTES.
    Anything else is a BuildError."""
    text = (os.environ.get("KSBIND_CACHE_MAX_BYTES", "") if text is None else text).strip()
    if not text:
        return DEFAULT_MAX_BYTES
    m = _SIZE.fullmatch(text)
    if m is None or (m.group(3) and not m.group(2) and m.group(3).lower() != "b"):
        raise BuildError(f"KSBIND_CACHE_MAX_BYTES must be a size in bytes, like 2000000000 or 2G (0: the "
                         f"default, {format_size(DEFAULT_MAX_BYTES)}), found {text!r}")
    scale = 1024 ** " kmgt".index(m.group(2).lower() or " ")
    value = int(float(m.group(1)) * scale)
    return value if value > 0 else DEFAULT_MAX_BYTES


def format_size(n: int) -> str:
    """Bytes for people: ``512 B``, ``412.3 KiB``, ``1.5 GiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def remove_folder(root: Path, path: Path) -> bool:
    """Remove a folder in one step (renamed to ROOT/.trash-*, then deleted)."""
    return _remove_dir(Path(root), Path(path))


@dataclasses.dataclass(frozen=True)
class EntryInfo:
    """One entry of the cache root, as ``ksbind cache list`` shows it."""

    path: Path
    kind: str          # "module" (a build), "ksc" (ksc's output), "load_ks" (load_ks's source),
                       # "object" or "pch" (the parts shared by every module: see scan's shared)
    module: str        # the module's name; for ksc and load_ks entries, the name they were made for
    key: str           # the folder's 16 hex digits
    target: str        # ks, python or torch; "ksc"; "load_ks"; "" when unknown (no manifest)
    size: int          # bytes of every file in the folder
    last_used: float   # seconds since the epoch
    note: str = ""     # "no manifest", "bad manifest"

    @property
    def lock_path(self) -> Path | None:
        """The build lock of a module entry (ksc and load_ks entries have none)."""
        return self.path.parent / f".{self.path.name}.lock" if self.kind == "module" else None


def _tree(path: Path) -> tuple[int, float, list[tuple[Path, os.stat_result]]]:
    """Total size, newest mtime and the (path, stat) of every file under path."""
    size, newest, files = 0, 0.0, []
    try:
        stack = [os.scandir(path)]
    except OSError:
        return 0, 0.0, []
    while stack:
        it = stack.pop()
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    with contextlib.suppress(OSError):
                        stack.append(os.scandir(e.path))
                    continue
                size += st.st_size
                newest = max(newest, st.st_mtime)
                files.append((Path(e.path), st))
    return size, newest, files


def _module_entry(path: Path, details: bool = True) -> EntryInfo | None:
    size, newest, files = _tree(path)
    by_name = {p.name: st for p, st in files if p.parent == path}
    m = _ENTRY_NAME.match(path.name)
    if MANIFEST in by_name and not details and m is not None:  # eviction needs no more than this
        return EntryInfo(path, "module", m.group("name"), m.group("key"), "", size, by_name[MANIFEST].st_mtime)
    if MANIFEST in by_name:
        try:
            manifest = json.loads((path / MANIFEST).read_bytes())
            manifest_files(manifest)
            return EntryInfo(path, "module", str(manifest["module"]), str(manifest["key"])[:16],
                             str(manifest.get("target", "")), size, by_name[MANIFEST].st_mtime)
        except (OSError, ValueError, TypeError, KeyError):
            note = "bad manifest"
    else:
        note = "no manifest"  # an older ksbind's entry, or an unfinished one
    if m is None:
        return None  # not ksbind's
    return EntryInfo(path, "module", m.group("name"), m.group("key"), "", size, newest, note)


def _ksc_entry(path: Path) -> EntryInfo | None:
    m = _ENTRY_NAME.match(path.name)
    if m is None or not m.group("name").startswith("ksc-"):
        return None
    size, newest, files = _tree(path)
    # ksc.json is read on every hit: its atime (kept roughly, e.g. daily, by relatime) is a use.
    used = max([newest] + [st.st_atime for p, st in files if p.name == "ksc.json"])
    return EntryInfo(path, "ksc", m.group("name")[len("ksc-"):], m.group("key"), "ksc", size, used)


def _load_ks_entries(path: Path) -> list[EntryInfo]:
    out = []
    try:
        folders = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []
    for d in folders:
        size, newest, files = _tree(d)
        sources = [(p, st) for p, st in files if p.suffix == ".ks" and p.parent == d]
        used = max([newest] + [st.st_atime for _, st in sources])
        module = sources[0][0].stem if sources else ""
        out.append(EntryInfo(d, "load_ks", module, d.name[:16], "load_ks", size, used))
    return out


def _shared_entries(folder: Path, kind: str, details: bool) -> list[EntryInfo]:
    """The stored objects or precompiled headers under ``objects/`` or ``pch/``."""
    out = []
    try:
        units = sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir())
    except OSError:
        return []
    for u in units:
        try:
            stored = sorted(p for p in u.iterdir() if not p.name.startswith(".") and p.is_dir())
        except OSError:
            continue
        for d in stored:
            size, newest, _ = _tree(d)
            try:
                used = os.stat(d / DEPS).st_mtime
            except OSError:
                used = newest
            source = ""
            if details:
                with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                    source = Path(str(json.loads((d / DEPS).read_bytes())["source"])).name
            out.append(EntryInfo(d, kind, source, f"{u.name[:8]}{d.name[:8]}", kind, size, used))
    return out


def scan(root: Path | None = None, details: bool = True, shared: bool = False) -> list[EntryInfo]:
    """Every entry in the cache root: module builds, ksc outputs and load_ks sources
    (hidden names, i.e. locks, staging and trash, are not entries); with
    ``shared``, then also the objects and precompiled headers every module
    shares. Without ``details``, module entries' manifests (and the shared
    parts' records) are not read (their target, or source, is "")."""
    root = Path(root) if root is not None else cache_root()
    try:
        children = sorted(root.iterdir())
    except OSError:
        return []
    out: list[EntryInfo] = []
    later: list[EntryInfo] = []
    for p in children:
        if p.name.startswith(".") or p.is_symlink() or not p.is_dir():
            continue
        if p.name in SIDE_DIRS:
            continue
        if p.name in SHARED_DIRS:
            if shared:
                later += _shared_entries(p, SHARED_DIRS[p.name], details)
            continue
        if p.name == LOAD_KS_DIR:
            out += _load_ks_entries(p)
        elif (p / "ksc.json").is_file() or p.name.startswith("ksc-"):
            info = _ksc_entry(p)
            if info is not None:
                out.append(info)
        else:
            info = _module_entry(p, details)
            if info is not None:
                out.append(info)
    return out + later


def listed_files(record: object) -> dict[str, tuple[int, str]]:
    """The ``files`` of a deps.json, ksc.json or link stub's record as {name: (size, sha256)}
    (ValueError if malformed)."""
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict) or not record["files"]:
        raise ValueError("no files listed")
    out = {}
    for name, info in record["files"].items():
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            raise ValueError(f"bad file name {name!r}")
        out[name] = (int(info["size"]), str(info["sha256"]))
    return out


def broken(info: EntryInfo) -> str:
    """Why an entry is damaged (its record missing, unreadable or of another format; a file
    it lists missing, of another size or content), or "" when it is intact. What a build
    would find and rebuild; ``ksbind cache clean`` removes these too."""
    record_name = {"module": MANIFEST, "ksc": "ksc.json", "object": DEPS, "pch": DEPS}.get(info.kind)
    if record_name is None:
        return ""
    try:
        record = json.loads((info.path / record_name).read_bytes())
        files = manifest_files(record) if info.kind == "module" else listed_files(record)
        if record.get("format") != 1:  # each record's format: DEPS_FORMAT, MANIFEST_FORMAT, ksc's
            raise ValueError("another format")
    except FileNotFoundError:
        return f"it has no {record_name}"
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return f"{record_name} is unreadable or of another format"
    for name, (size, digest) in files.items():
        try:
            if os.stat(info.path / name).st_size != size:
                return f"{name} has another size than {record_name} says"
            if file_sha256(info.path / name) != digest:
                return f"{name} does not match its sha256"
        except OSError:
            return f"{name} is missing"
    return ""


def _remove_dir(root: Path, path: Path) -> bool:
    """Remove a folder as a whole: rename it to .trash-* in root (one step), then
    delete that. False when it was gone already."""
    trash = root / f"{TRASH_PREFIX}{path.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True


def remove_entry(info: EntryInfo, idle_since: float | None = None) -> bool:
    """Remove one entry, never one being built (its lock is taken without
    waiting) and, with ``idle_since``, never one used after that time (looked
    at again under the lock). The module entry's lock file goes with it.
    Returns whether it was removed."""
    lock = info.lock_path
    if lock is None:
        if idle_since is not None and _last_used_now(info) >= idle_since:
            return False
        root = {"load_ks": info.path.parent.parent, "object": info.path.parents[2],
                "pch": info.path.parents[2]}.get(info.kind, info.path.parent)
        return _remove_dir(root, info.path)
    if not lock.exists() and not info.path.exists():
        return False
    with try_lock(lock) as held:
        if not held:
            return False
        if idle_since is not None and _last_used_now(info) >= idle_since:
            return False
        removed = _remove_dir(info.path.parent, info.path)
        with contextlib.suppress(OSError):
            os.unlink(lock)  # safe while held: waiters see the path no longer names it (build_lock)
    return removed


def _last_used_now(info: EntryInfo) -> float:
    """An entry's last use as it is now (a scan may be a moment old)."""
    if info.kind in ("object", "pch"):
        with contextlib.suppress(OSError):
            return os.stat(info.path / DEPS).st_mtime
        return info.last_used
    if info.kind == "module":
        with contextlib.suppress(OSError):
            return os.stat(info.path / MANIFEST).st_mtime
        fresh = _module_entry(info.path)
    elif info.kind == "ksc":
        fresh = _ksc_entry(info.path)
    else:
        fresh = next((e for e in _load_ks_entries(info.path.parent) if e.path == info.path), None)
    return fresh.last_used if fresh is not None else info.last_used


def evict(root: Path | None = None, max_bytes: int | None = None,
          min_idle: float = EVICT_MIN_IDLE_SECONDS) -> list[EntryInfo]:
    """Enforce the size cap (KSBIND_CACHE_MAX_BYTES): remove least recently used
    module and ksc entries until the rest fit. Skipped: entries this process
    used or installed, entries used in the last ``min_idle`` seconds, and
    entries being built. Also deletes leftover trash. One scan of the root.
    Returns what was removed."""
    root = Path(root) if root is not None else cache_root()
    limit = cache_max_bytes() if max_bytes is None else max_bytes
    _remove_trash(root)
    entries = [e for e in scan(root, details=False, shared=True) if e.kind in ("module", "ksc", "object", "pch")]
    total = sum(e.size for e in entries)
    removed: list[EntryInfo] = []
    idle_since = time.time() - min_idle
    for e in sorted(entries, key=lambda e: e.last_used):
        if total <= limit or e.last_used >= idle_since:
            break
        if str(e.path) in manifest.USED_HERE:  # read now: a test may replace the set
            continue
        if remove_entry(e, idle_since):
            total -= e.size
            removed.append(e)
    return removed


@dataclasses.dataclass
class CleanReport:
    removed: list[EntryInfo]
    skipped: list[EntryInfo]   # being built: their lock was held
    leftovers: int             # bytes of trash, stale staging folders and orphan lock files removed

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed) + self.leftovers


def clean(root: Path | None = None, older_than_days: float | None = None, everything: bool = False) -> CleanReport:
    """``ksbind cache clean``: with ``everything``, remove every entry; with
    ``older_than_days``, those not used for that long; with neither, evict down
    to the size cap. Entries being built are skipped. The shared objects and
    precompiled headers count as entries (kinds "object" and "pch"). Also
    removes leftovers: trash, staging folders of builds killed over an hour ago
    and lock files of entries that are gone."""
    root = Path(root) if root is not None else cache_root()
    leftovers = _remove_trash(root) + _remove_stale(root, STALE_STAGING_SECONDS)
    for d in SHARED_DIRS:
        leftovers += _remove_stale(root / d, STALE_STAGING_SECONDS)
    removed: list[EntryInfo] = []
    skipped: list[EntryInfo] = []
    if everything or older_than_days is not None:
        cutoff = None if everything else time.time() - float(older_than_days or 0) * 86400
        for e in scan(root, shared=True):
            if cutoff is not None and e.last_used >= cutoff:
                continue
            if remove_entry(e, cutoff):
                removed.append(e)
            elif e.path.exists() and (cutoff is None or _last_used_now(e) < cutoff):
                skipped.append(e)
    else:
        removed = evict(root)
    if not everything:  # what a build would find damaged and rebuild: no use keeping it
        gone = {e.path for e in removed}
        for e in scan(root, shared=True):
            if e.path not in gone and broken(e) and remove_entry(e):
                removed.append(e)
    leftovers += _remove_orphan_locks(root)
    if everything:
        for d in SHARED_DIRS:  # its locks, the plain headers, empty folders: gone with the last entry
            folder = root / d
            if folder.is_dir() and not _shared_entries(folder, SHARED_DIRS[d], details=False):
                leftovers += _tree(folder)[0]
                _remove_dir(root, folder)
        # The generated units' copies compiled from (ksbind.backend.compile), no-op records, compiled templates.
        for side in SIDE_DIRS:
            folder = root / side
            if folder.is_dir():
                leftovers += _tree(folder)[0]
                _remove_dir(root, folder)
    load_ks = root / LOAD_KS_DIR
    if load_ks.is_dir():
        with contextlib.suppress(OSError):
            load_ks.rmdir()  # only when empty
    return CleanReport(removed, skipped, leftovers)


def _remove_trash(root: Path) -> int:
    freed = 0
    with contextlib.suppress(OSError):
        for p in root.iterdir():
            if p.name.startswith(TRASH_PREFIX):
                freed += _tree(p)[0]
                shutil.rmtree(p, ignore_errors=True)
    return freed


def _remove_stale(root: Path, older_than: float) -> int:
    """Temporary folders (builds' staging, ksc runs) older than ``older_than`` seconds."""
    now, freed = time.time(), 0
    try:
        entries = list(Path(root).iterdir())
    except OSError:
        return 0
    for p in entries:
        if p.name.startswith(TEMP_PREFIXES) and p.is_dir():
            try:
                size, newest, _ = _tree(p)  # a long build or ksc run writes files in it: not stale
                if now - max(p.stat().st_mtime, newest) > older_than:
                    shutil.rmtree(p, ignore_errors=True)
                    freed += size
            except OSError:
                pass
    return freed


def _remove_orphan_locks(root: Path) -> int:
    """Lock files whose entry is gone (a failed build's): removed when nobody holds them."""
    freed = 0
    with contextlib.suppress(OSError):
        for p in root.iterdir():
            if not (p.name.startswith(".") and p.name.endswith(".lock")):
                continue
            if (root / p.name[1:-len(".lock")]).exists():
                continue
            with try_lock(p) as held:
                if held:
                    with contextlib.suppress(OSError):
                        size = p.stat().st_size
                        p.unlink()
                        freed += size
    return freed


def remove_stale_staging(root: Path, older_than: float = STALE_STAGING_SECONDS) -> None:
    """Delete staging folders left by builds that were killed long ago, and trash."""
    _remove_stale(Path(root), older_than)
    _remove_trash(Path(root))


__all__ = ["cache_max_bytes", "format_size", "DEFAULT_MAX_BYTES", "EVICT_MIN_IDLE_SECONDS", "STALE_STAGING_SECONDS",
           "SHARED_DIRS", "note_used", "broken", "listed_files",
           "remove_folder", "EntryInfo", "scan", "remove_entry", "evict", "CleanReport",
           "clean", "remove_stale_staging"]
