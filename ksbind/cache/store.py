"""The build cache: content hashes, cache folders, an inter-process lock, atomic
installs, verified entries, eviction and importing a module from a path.
Shared by every build backend (``build.py`` for the ks/python targets,
``build_torch.py`` for torch); ``ksbind cache list|clean`` manages it.

API (all paths are ``pathlib.Path``):

- ``cache_root()``: the cache folder: ``$KSBIND_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/ksbind``, else ``~/.cache/ksbind``.
- ``Hasher``: ``add_text(label, text)``, ``add_bytes``, ``add_file(path)``,
  ``add_files``, ``add_dir_headers(dir)``, ``.hexdigest()`` (sha256).
  ``environment_key()`` lists what every key must include (ksbind, pybind11
  and Python versions, ABI tag); ``Hasher.with_environment()`` starts a
  hasher holding them.
- ``CacheEntry(root, name, key, target=...)``: ``.dir`` (``root/NAME-KEY16``),
  ``.module_path`` (``dir/NAME + EXT_SUFFIX``), ``.is_built()`` (complete and
  intact: see below), ``.lock(timeout)`` (a context manager holding an
  inter-process lock for this entry), ``.staging()`` (a context manager
  yielding a fresh private temp folder next to the entry, removed on exit),
  ``.install(built_so)`` (atomic rename into place, then the manifest).
- ``build_lock(path, timeout)``: the lock itself. It is ``fcntl.flock`` on a
  lock file: the kernel drops it when the holder dies, so a killed build
  never leaves a lock that hangs the next one (the file may stay; it is only
  a name to lock, and may be deleted by its holder: see build_lock).
- ``import_from_path(name, path)``: import an extension module from a file,
  once per path per process.
- ``scan(root)``, ``evict(root)``, ``clean(root, ...)``, ``cache_max_bytes()``:
  what ``ksbind cache list|clean`` and the size cap use.

The invariants that keep the cache safe:

- A module file appears at ``module_path`` only by ``os.replace`` of a
  complete, linked file, and an entry counts as built only once its
  ``manifest.json`` (written atomically, after every other file of the entry)
  lists each file with its size and sha256 and the files match it: the sizes
  on every hit, the content once per process (again when a file's size,
  mtime or inode changed). So a failed or killed compile, a killed copy, a
  full disk or a bad disk leaves nothing that a later build would load: a
  damaged entry is rebuilt, with one warning, by whichever build takes its lock.
- Entries are removed (eviction, ``ksbind cache clean``, healing) by renaming
  their folder to ``.trash-*`` in one step, then deleting that: a concurrent
  reader sees the whole entry or none. A module entry is removed only under
  its lock, taken without waiting (an entry being built is skipped).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import re
import shutil
import stat
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator

from ksbind import log
from ksbind._version import __version__
from ksbind.errors import BuildError, KsbindWarning, Location, user_stacklevel

HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl", ".ipp")
#: Staging folders older than this are left over from killed builds: removed.
STALE_STAGING_SECONDS = 3600.0
DEFAULT_LOCK_TIMEOUT = 900.0
#: Each module entry's record of what it holds (see CacheEntry.check).
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
#: The size cap when KSBIND_CACHE_MAX_BYTES is unset or 0: 2 GiB. A module is
#: 0.3-0.5 MB (-g0), so that is thousands of builds, or ~100 with debug info.
DEFAULT_MAX_BYTES = 2 * 1024 ** 3
#: Eviction never removes an entry used (or built) less than this long ago: a
#: build that has just checked an entry is importing it, and a ksc output is
#: in use until the module built from it is compiled.
EVICT_MIN_IDLE_SECONDS = 600.0
TRASH_PREFIX = ".trash-"
#: Prefixes of temporary folders in the cache root (builds, ksc runs): removed after STALE_STAGING_SECONDS.
TEMP_PREFIXES = (".staging-", ".ksc-", ".in-")
LOAD_KS_DIR = "load_ks"
#: Folders of the parts shared by every module (ksbind/objcache.py, ksbind/pch.py):
#: compiled objects and precompiled headers, one entry per ``DIR/UNITKEY16/DEPSKEY16/``.
SHARED_DIRS = {"objects": "object", "pch": "pch"}
SHARED_RECORD = "deps.json"
#: Copies of generated files (and init units) the shared objects are compiled from: small, removed by clean --all.
UNITS_DIR = "units"
_ENTRY_NAME = re.compile(r"^(?P<name>.+)-(?P<key>[0-9a-f]{16})$")


#: ksbind.log.QUIET, set by ``build_spec(quiet=True)`` for the build's own thread
#: and the compile threads it starts: a quiet build logs no progress, not even
#: that it waits for a lock.
QUIET = log.QUIET
_log = log.get_logger("cache")


def cache_root() -> Path:
    env = os.environ.get("KSBIND_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ksbind"


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


def extension_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or importlib.machinery.EXTENSION_SUFFIXES[0]


def environment_key() -> list[tuple[str, str]]:
    """What every cache key includes besides the sources: tool and ABI versions."""
    try:
        import pybind11
        pybind11_version = pybind11.__version__
    except ImportError:  # the torch backend may not need it
        pybind11_version = "none"
    return [
        ("ksbind", __version__),
        ("python", sys.version),
        ("implementation", sys.implementation.cache_tag or sys.implementation.name),
        ("ext_suffix", extension_suffix()),
        ("pybind11", pybind11_version),
    ]


class Hasher:
    """A labelled sha256: each part is hashed with its label and length, so
    moving text between parts changes the key."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    @classmethod
    def with_environment(cls) -> "Hasher":
        h = cls()
        for label, value in environment_key():
            h.add_text(f"env:{label}", value)
        return h

    def add_bytes(self, label: str, data: bytes) -> None:
        head = f"{label}\0{len(data)}\0".encode("utf-8", "surrogateescape")
        self._h.update(head)
        self._h.update(data)

    def add_text(self, label: str, text: str) -> None:
        self.add_bytes(label, text.encode("utf-8", "surrogateescape"))

    def add_file(self, path: Path, label: str | None = None, strip_stamp: bool = False) -> None:
        """A file's content; ``strip_stamp`` drops a first "Generated by ksbind" line."""
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise BuildError(f"cannot read build input: {e.strerror}", Location(str(path))) from None
        self.add_bytes(label or f"file:{Path(path).name}", without_stamp(data) if strip_stamp else data)

    def add_files(self, paths: Iterable[Path], label: str) -> None:
        for p in paths:
            self.add_file(Path(p), f"{label}:{Path(p).name}")

    def add_dir_headers(self, directory: Path, label: str = "headers", strip_stamp: bool = False) -> None:
        """Every header directly in a folder (not recursive), in name order."""
        d = Path(directory)
        if not d.is_dir():
            return
        for p in sorted(d.iterdir()):
            if p.is_file() and p.suffix in HEADER_SUFFIXES:
                # By content, not path: the key is path-independent.
                self.add_file(p, f"{label}:{p.name}", strip_stamp)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def without_stamp(data: bytes) -> bytes:
    """A generated file less its first line when that is ksbind's stamp: the stamp
    names the config as seen from the current directory, which must not change a key."""
    first, sep, rest = data.partition(b"\n")
    return rest if b"Generated by ksbind" in first else data


@contextlib.contextmanager
def build_lock(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT, what: str = "") -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``path`` (created if missing).

    Waits up to ``timeout`` seconds (then BuildError), logging one line
    (``ksbind.cache``, INFO) while another process holds it. The kernel releases a flock when its
    holder exits or is killed, so no lock ever outlives its build.

    The holder may delete the lock file (eviction and ``ksbind cache clean``
    do, with the entry): a waiter that then gets the lock on the deleted file
    sees that the path no longer names it and locks the path afresh.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    announced = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as e:
                    if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                if not announced:
                    if _log.isEnabledFor(logging.INFO) and not QUIET.get():
                        _log.info("%s: waiting for another build%s", what or path.name, _read_holder(fd))
                    announced = True
                if time.monotonic() - start > timeout:
                    raise BuildError(f"timed out after {timeout:.0f} s waiting for the build lock",
                                     Location(str(path)))
                time.sleep(0.05)
            if not _still_named(fd, path):  # deleted (and maybe recreated) by its last holder
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            return
        finally:
            os.close(fd)


@contextlib.contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """The lock of build_lock, without waiting: yields whether it was taken
    (False: another process, or another lock in this one, holds it)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            yield False
            return
        try:
            yield _still_named(fd, path)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _still_named(fd: int, path: Path) -> bool:
    """Whether path still names the open file fd (not deleted or replaced)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def file_sha256(path: Path) -> str:
    return _sha256_at(None, str(path))


def _sha256_at(dir_fd: int | None, name: str) -> str:
    h = hashlib.sha256()
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


#: Files this process found intact: path -> (size, mtime_ns, inode, sha256 expected).
#: A hit re-hashes a file only when one of these changed (see CacheEntry.check).
_verified: dict[str, tuple[int, int, int, str]] = {}
#: Entry folders this process has used or installed: eviction never removes them.
_used_here: set[str] = set()


def note_used(entry_dir: Path) -> None:
    """An entry folder (a module's, an object's, a precompiled header's) this
    process uses: eviction in this process leaves it alone."""
    _used_here.add(str(entry_dir))


def remove_folder(root: Path, path: Path) -> bool:
    """Remove a folder in one step (renamed to ROOT/.trash-*, then deleted)."""
    return _remove_dir(Path(root), Path(path))


class CacheEntry:
    """One cached build: ``root/NAME-KEY16/`` holding ``NAME<EXT_SUFFIX>`` (and,
    for the torch backend, files its build put there first) and ``manifest.json``."""

    def __init__(self, root: Path, name: str, key: str, suffix: str | None = None, target: str = "") -> None:
        self.root = Path(root)
        self.name = name
        self.key = key
        self.target = target
        self.dir = self.root / f"{name}-{key[:16]}"
        self.module_path = self.dir / f"{name}{suffix if suffix is not None else extension_suffix()}"
        self.manifest_path = self.dir / MANIFEST
        self.lock_path = self.root / f".{name}-{key[:16]}.lock"
        self._locked = False

    def check(self) -> tuple[str, str]:
        """``("ok", "")``, ``("missing", "")`` or ``("damaged", why)``.

        Sizes are compared on every call, content (sha256) once per process and
        file, and again when a file's size, mtime or inode changed. An entry
        without a manifest but with a module file (an older ksbind's, or an
        install cut short) is damaged; one without either is missing. Every
        file is read through one handle on the folder, and an entry removed
        (renamed away) while it was being checked counts as missing, not
        damaged: a reader sees the whole entry or none.
        """
        try:
            dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return "missing", ""
        except OSError as e:
            return "damaged", f"cannot open it: {e.strerror}"
        try:
            state, why = self._check_in(dir_fd)
            if state != "ok" and not _still_named(dir_fd, self.dir):
                return "missing", ""
            return state, why
        finally:
            os.close(dir_fd)

    def _check_in(self, dir_fd: int) -> tuple[str, str]:
        module = self.module_path.name
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
            files = _manifest_files(manifest)
        except (ValueError, TypeError, KeyError):
            return "damaged", f"{MANIFEST} is unreadable"
        if manifest.get("module") != self.name or manifest.get("key") != self.key:
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
            key = str(self.dir / fname)
            if _verified.get(key) == seen:
                continue
            try:
                actual = _sha256_at(dir_fd, fname)
            except OSError as e:
                return "damaged", f"cannot read {fname}: {e.strerror}"
            if actual != digest:
                return "damaged", f"{fname} does not match its sha256"
            _verified[key] = seen
        return "ok", ""

    def is_built(self) -> bool:
        """Whether the entry is complete and intact (check()); marks it used when so.

        Called with this entry's lock held, it also clears the way for the
        rebuild that follows: a damaged entry (one warning) or the leftovers of
        an unfinished one are moved out of the way as a whole.
        """
        cache_max_bytes()  # a bad KSBIND_CACHE_MAX_BYTES fails every build, cache hits too
        state, why = self.check()
        if state == "ok":
            self.mark_used()
            return True
        if self._locked and os.path.lexists(self.dir):
            if state == "damaged":
                warnings.warn(f"{self.name}: the cached build {self.dir} is damaged ({why}): rebuilding it",
                              KsbindWarning, stacklevel=user_stacklevel())
            _remove_dir(self.root, self.dir)
        return False

    def mark_used(self) -> None:
        """Record a use: the manifest's mtime is the entry's last use (LRU eviction)."""
        _used_here.add(str(self.dir))
        with contextlib.suppress(OSError):  # a read-only cache still works
            os.utime(self.manifest_path)

    @contextlib.contextmanager
    def lock(self, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        with build_lock(self.lock_path, timeout, what=self.name):
            self._locked = True
            try:
                yield
            finally:
                self._locked = False

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A fresh temp folder (same filesystem as the entry, so install can rename)."""
        self.root.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(self.root)
        tmp = Path(tempfile.mkdtemp(prefix=f".staging-{self.name}-", dir=self.root))
        try:
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def install(self, built: Path) -> Path:
        """Move a complete module file into place in one step, then write the
        manifest (last): it lists the module and every file the build already
        put in the entry folder (the torch backend's NAME.py and NAME.pyi),
        except the module's own stub NAME.pyi, which the ks/python backend
        rewrites on every build. Then the size cap is enforced (evict)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        _used_here.add(str(self.dir))
        # A manifest left from an earlier install goes first, so no reader pairs it with new files.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.manifest_path)
        # Copy next to the target first (built may be on another filesystem),
        # then rename: readers see no file or a whole one.
        tmp = self.dir / f".{self.module_path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            shutil.copyfile(built, tmp)
            os.chmod(tmp, 0o755)
            _fsync(tmp)
            os.replace(tmp, self.module_path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._write_manifest()
        with contextlib.suppress(OSError):
            evict(self.root)
        return self.module_path

    def _write_manifest(self) -> None:
        files: dict[str, dict[str, Any]] = {}
        stub = f"{self.name}.pyi"
        for p in sorted(self.dir.iterdir()):
            if p.name.startswith(".") or p.name in (MANIFEST, stub) or not p.is_file():
                continue
            st = p.stat()
            digest = file_sha256(p)
            files[p.name] = {"size": st.st_size, "sha256": digest}
            _verified[str(p)] = (st.st_size, st.st_mtime_ns, st.st_ino, digest)
        manifest = {"format": MANIFEST_FORMAT, "module": self.name, "key": self.key, "target": self.target,
                    "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "ksbind": __version__, "files": files}
        tmp = self.dir / f".{MANIFEST}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            _fsync(tmp)
            os.replace(tmp, self.manifest_path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _manifest_files(manifest: Any) -> dict[str, tuple[int, str]]:
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


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------ managing the cache


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
            _manifest_files(manifest)
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
                used = os.stat(d / SHARED_RECORD).st_mtime
            except OSError:
                used = newest
            source = ""
            if details:
                with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                    source = Path(str(json.loads((d / SHARED_RECORD).read_bytes())["source"])).name
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
        if p.name == UNITS_DIR:
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
            return os.stat(info.path / SHARED_RECORD).st_mtime
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
        if str(e.path) in _used_here:
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
    leftovers += _remove_orphan_locks(root)
    if everything:
        for d in SHARED_DIRS:  # its locks, the plain headers, empty folders: gone with the last entry
            folder = root / d
            if folder.is_dir() and not _shared_entries(folder, SHARED_DIRS[d], details=False):
                leftovers += _tree(folder)[0]
                _remove_dir(root, folder)
        units = root / UNITS_DIR  # the generated units' copies compiled from (ksbind/compile.py)
        if units.is_dir():
            leftovers += _tree(units)[0]
            _remove_dir(root, units)
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


_imported: dict[str, ModuleType] = {}
_import_lock = threading.Lock()


def import_from_path(name: str, path: Path) -> ModuleType:
    """Import the extension module ``name`` from ``path`` (once per path per process).

    The module is also put in ``sys.modules[name]`` so pickling and
    ``import name`` find it.
    """
    key = os.path.realpath(path)
    with _import_lock:
        if key in _imported:
            return _imported[key]
        if not os.path.isfile(key):
            raise BuildError(f"cannot import {name!r}: {path} is gone (its cache entry was removed while it "
                             "was being loaded?): build again", Location(str(path)))
        spec = importlib.util.spec_from_file_location(name, key)
        if spec is None or spec.loader is None:
            raise BuildError(f"cannot import {name!r}: not a loadable module", Location(str(path)))
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError as e:
            raise BuildError(f"cannot import {name!r}: {e}", Location(str(path))) from None
        _imported[key] = module
        sys.modules[name] = module
        return module


__all__ = ["cache_root", "cache_max_bytes", "format_size", "extension_suffix", "environment_key", "Hasher",
           "build_lock", "try_lock", "CacheEntry", "EntryInfo", "CleanReport", "scan", "evict", "clean",
           "remove_entry", "remove_stale_staging", "import_from_path", "file_sha256", "HEADER_SUFFIXES",
           "without_stamp", "MANIFEST", "DEFAULT_MAX_BYTES", "note_used", "remove_folder", "SHARED_DIRS"]
