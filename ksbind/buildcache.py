"""The build cache: content hashes, cache folders, an inter-process lock, atomic
installs and importing a module from a path. Shared by every build backend
(``build.py`` for the ks/python targets, ``build_torch.py`` for torch).

API (all paths are ``pathlib.Path``):

- ``cache_root()``: the cache folder: ``$KSBIND_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/ksbind``, else ``~/.cache/ksbind``.
- ``Hasher``: ``add_text(label, text)``, ``add_bytes``, ``add_file(path)``,
  ``add_files``, ``add_dir_headers(dir)``, ``.hexdigest()`` (sha256).
  ``environment_key()`` lists what every key must include (ksbind, pybind11
  and Python versions, ABI tag); ``Hasher.with_environment()`` starts a
  hasher holding them.
- ``CacheEntry(root, name, key)``: ``.dir`` (``root/NAME-KEY16``), ``.module_path``
  (``dir/NAME + EXT_SUFFIX``), ``.is_built()``, ``.lock(timeout)`` (a context
  manager holding an inter-process lock for this entry), ``.staging()`` (a context
  manager yielding a fresh private temp folder next to the entry, removed on
  exit), ``.install(built_so)`` (atomic rename into place).
- ``build_lock(path, timeout)``: the lock itself. It is ``fcntl.flock`` on a
  lock file: the kernel drops it when the holder dies, so a killed build
  never leaves a lock that hangs the next one (the file may stay; it is only
  a name to lock).
- ``import_from_path(name, path)``: import an extension module from a file,
  once per path per process.

The invariant that keeps the cache safe: a module file appears at
``module_path`` only by ``os.replace`` of a complete, linked file, so a failed
or killed compile leaves nothing there that a later build would load.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator

from ._version import __version__
from .errors import BuildError, Location

HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl", ".ipp")
#: Staging folders older than this are left over from killed builds: removed.
STALE_STAGING_SECONDS = 3600.0
DEFAULT_LOCK_TIMEOUT = 900.0


def cache_root() -> Path:
    env = os.environ.get("KSBIND_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ksbind"


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

    def add_file(self, path: Path, label: str | None = None) -> None:
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise BuildError(f"cannot read build input: {e.strerror}", Location(str(path))) from None
        self.add_bytes(label or f"file:{Path(path).name}", data)

    def add_files(self, paths: Iterable[Path], label: str) -> None:
        for p in paths:
            self.add_file(Path(p), f"{label}:{Path(p).name}")

    def add_dir_headers(self, directory: Path, label: str = "headers") -> None:
        """Every header directly in a folder (not recursive), in name order."""
        d = Path(directory)
        if not d.is_dir():
            return
        for p in sorted(d.iterdir()):
            if p.is_file() and p.suffix in HEADER_SUFFIXES:
                self.add_file(p, f"{label}:{p.name}")  # by content, not path: the key is path-independent

    def hexdigest(self) -> str:
        return self._h.hexdigest()


@contextlib.contextmanager
def build_lock(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT, what: str = "") -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``path`` (created if missing).

    Waits up to ``timeout`` seconds (then BuildError), printing one line on
    stderr while another process holds it. The kernel releases a flock when its
    holder exits or is killed, so no lock ever outlives its build.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        start = time.monotonic()
        announced = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
            if not announced:
                holder = _read_holder(fd)
                print(f"ksbind: {what or path.name}: waiting for another build{holder}", file=sys.stderr)
                announced = True
            if time.monotonic() - start > timeout:
                raise BuildError(f"timed out after {timeout:.0f} s waiting for the build lock", Location(str(path)))
            time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


class CacheEntry:
    """One cached build: ``root/NAME-KEY16/NAME<EXT_SUFFIX>``."""

    def __init__(self, root: Path, name: str, key: str, suffix: str | None = None) -> None:
        self.root = Path(root)
        self.name = name
        self.key = key
        self.dir = self.root / f"{name}-{key[:16]}"
        self.module_path = self.dir / f"{name}{suffix if suffix is not None else extension_suffix()}"
        self.lock_path = self.root / f".{name}-{key[:16]}.lock"

    def is_built(self) -> bool:
        return self.module_path.is_file()

    def lock(self, timeout: float = DEFAULT_LOCK_TIMEOUT) -> contextlib.AbstractContextManager[None]:
        return build_lock(self.lock_path, timeout, what=self.name)

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
        """Move a complete module file into place in one step."""
        self.dir.mkdir(parents=True, exist_ok=True)
        # Copy next to the target first (built may be on another filesystem),
        # then rename: readers see no file or a whole one.
        tmp = self.dir / f".{self.module_path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            shutil.copyfile(built, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, self.module_path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return self.module_path


def remove_stale_staging(root: Path, older_than: float = STALE_STAGING_SECONDS) -> None:
    """Delete staging folders left by builds that were killed long ago."""
    now = time.time()
    try:
        entries = list(Path(root).iterdir())
    except OSError:
        return
    for p in entries:
        if p.name.startswith(".staging-") and p.is_dir():
            try:
                if now - p.stat().st_mtime > older_than:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass


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


__all__ = ["cache_root", "extension_suffix", "environment_key", "Hasher", "build_lock", "CacheEntry",
           "remove_stale_staging", "import_from_path", "HEADER_SUFFIXES"]
