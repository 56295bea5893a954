"""A module's cache entry: ``CacheEntry(root, name, key, target=...)`` is the
folder ``root/NAME-KEY16/`` holding one build, with its lock, a staging folder
to build in, the atomic install and the check that it is complete and intact.

- ``.dir`` (``root/NAME-KEY16``), ``.module_path`` (``dir/NAME + EXT_SUFFIX``),
  ``.is_built()`` (complete and intact: see below), ``.lock(timeout)`` (a
  context manager holding an inter-process lock for this entry),
  ``.staging()`` (a context manager yielding a fresh private temp folder next
  to the entry, removed on exit), ``.install(built_so)`` (atomic rename into
  place, then the manifest).

A module file appears at ``module_path`` only by ``os.replace`` of a complete,
linked file, and an entry counts as built only once its ``manifest.json``
(written atomically, after every other file of the entry) lists each file with
its size and sha256 and the files match it: the sizes on every hit, the
content once per process (again when a file's size, mtime or inode changed).
So a failed or killed compile, a killed copy, a full disk or a bad disk leaves
nothing that a later build would load: a damaged entry is rebuilt, with one
warning, by whichever build takes its lock.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ksbind._version import __version__
from ksbind.cache.keys import extension_suffix, file_sha256
from ksbind.cache.locks import DEFAULT_LOCK_TIMEOUT, build_lock
from ksbind.cache.maintenance import cache_max_bytes, evict, remove_folder, remove_stale_staging
from ksbind.cache.manifest import MANIFEST, MANIFEST_FORMAT, Verified, check_entry, note_used
from ksbind.errors import KsbindWarning, user_stacklevel

#: Per process, by stat identity: files this process found intact: path -> (size, mtime_ns, inode,
#: sha256 expected).
#: A hit re-hashes a file only when one of these changed (see CacheEntry.check).
_verified: Verified = {}


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
        """``("ok", "")``, ``("missing", "")`` or ``("damaged", why)``: ksbind.cache.manifest's
        ``check_entry`` (content hashed once per process and file, sizes every time)."""
        # This module's _verified and file_sha256, looked up at each call (a test may replace either).
        return check_entry(self.dir, self.name, self.key, self.module_path.name, _verified,
                           lambda name, dir_fd: file_sha256(name, dir_fd))

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
            remove_folder(self.root, self.dir)
        return False

    def mark_used(self) -> None:
        """Record a use: the manifest's mtime is the entry's last use (LRU eviction)."""
        note_used(self.dir)
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
        note_used(self.dir)
        # A manifest left from an earlier install goes first, so no reader pairs it with new files.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.manifest_path)
        # Copy next to the target first (built may be on another filesystem),
        # then rename: readers see no file or a whole one.
        tmp = self.dir / f".{self.module_path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            try:
                shutil.copyfile(built, tmp)
                os.chmod(tmp, 0o755)
                _fsync(tmp)
                os.replace(tmp, self.module_path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            self._write_manifest()
        except BaseException:
            # No manifest (a full disk): the module goes too, so the entry is missing, not damaged.
            with contextlib.suppress(OSError):
                os.unlink(self.module_path)
            raise
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


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["CacheEntry"]
