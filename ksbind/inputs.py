"""What a build read, noted as it reads it: the no-op record (ksbind/build_api.py).

A no-op build (``ksbind.build(config)`` of a module nothing of which changed)
must not render or even import the pipeline; it checks a record written by
the last full build instead. The record holds what that build's result
depends on:

- the *environment*, taken before the build starts: ksbind's own files
  (content), the installed distributions (each ``*.dist-info`` and the like on
  ``sys.path``, with its mtime: an install or reinstall changes it), the
  interpreter, ``sys.path``, the current folder (generated files name the
  config from it) and the environment variables a build reads (``ENVIRONMENT``);
- every *file* the build read, as read: the code that reads an input notes it
  here (``note_file``: the config, ks sources and preludes, templates, and
  every file a cache key hashes: sources, headers, ksc's outputs and
  binary); each folder whose listing decides something (``note_dir``:
  headers beside sources, the include path, template folders);
- every file the build wrote for the user (``note_output``: generated files,
  stubs), and the cache entry and import steps of the module it returned.

Noting is a no-op outside ``recording()``. A fingerprint is taken from the
bytes as read (or before the build began), never after: a file edited during
a build then differs from its record next time, and is rebuilt. A file read
twice with different content, or a build that cannot be described this way
(``refuse``: a config's own filters module, a versioned rebuild), writes no
record.

Fingerprints: a file's sha256 up to ``BIG_FILE`` bytes; above, its size,
mtime, ctime and inode (ksc's binary: not edited in place, and too large to
hash on every no-op); a folder's sorted entry names; ``None``: absent.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ksbind import session
from ksbind._version import __version__

#: Above this size a file is fingerprinted by its stat, not its content.
BIG_FILE = 1 << 20
#: The record's layout; a record of another format is ignored.
FORMAT = 1
#: Environment variables a build's result may depend on (compiler, flags, ksc, include paths, imports).
ENVIRONMENT_PREFIXES = ("KSBIND_", "KSC", "CCACHE_", "SCCACHE_")
ENVIRONMENT = ("CXX", "CC", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "LD_LIBRARY_PATH",
               "PATH", "PYTHONPATH", "PYTHONHOME", "HOME", "XDG_CACHE_HOME")
#: ksbind's verbosity does not change what is built.
_IGNORED = ("KSBIND_VERBOSE",)
#: ksbind's package folder: its digest is part of every record, and runtimes, headers and generated
#: files are named relative to it (ksbind/standalone.py, ksbind/codegen/).
PACKAGE_DIR = Path(__file__).resolve().parent
_DIST_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth")
#: ksbind's own files are not noted one by one: the environment's package digest covers them.
_PACKAGE_PREFIX = str(PACKAGE_DIR) + os.sep


def file_fingerprint(path: str | os.PathLike[str], data: bytes | None = None) -> str | None:
    """A file's fingerprint (``data``: its bytes, as already read); None when it is not a file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > BIG_FILE:
        return f"stat:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
    if data is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
    return hashlib.sha256(data).hexdigest()


def _content_digest(path: str) -> str | None:
    """A generated file's sha256 whatever its size (outputs are compared by content)."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def dir_fingerprint(path: str | os.PathLike[str], names: Iterable[str] | None = None) -> str | None:
    """A folder's fingerprint: its entries' names (``names``: as already listed); None when not a folder."""
    if names is None:
        try:
            names = os.listdir(path)
        except OSError:
            return None
    return hashlib.sha256("\0".join(sorted(names)).encode("utf-8", "surrogateescape")).hexdigest()


def package_digest(root: Path = PACKAGE_DIR) -> str:
    """ksbind's own files (code, templates, headers, runtime), by content: an edit to any rebuilds."""
    h = hashlib.sha256(__version__.encode())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                data = f.read()
            h.update(f"{os.path.relpath(path, root)}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            h.update(data)
    return h.hexdigest()


def distributions() -> str:
    """The installed distributions on sys.path: each one's metadata folder name (its version) and mtime."""
    h = hashlib.sha256()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                found = sorted((e.name, e.stat().st_mtime_ns) for e in it if e.name.endswith(_DIST_SUFFIXES))
        except OSError:
            continue
        h.update(f"{entry}\0{found!r}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def environment() -> dict[str, Any]:
    """What every record holds besides the files: see the module's docstring."""
    env = {k: v for k, v in os.environ.items()
           if (k in ENVIRONMENT or k.startswith(ENVIRONMENT_PREFIXES)) and k not in _IGNORED}
    return {"ksbind": package_digest(), "distributions": distributions(), "executable": sys.executable,
            "python": sys.version, "sys.path": list(sys.path), "cwd": os.getcwd(), "environ": dict(sorted(env.items()))}


class Recorder:
    """What one build read and wrote (see the module's docstring)."""

    def __init__(self) -> None:
        self.environment = environment()
        self.files: dict[str, str | None] = {}
        self.dirs: dict[str, str | None] = {}
        self.outputs: dict[str, str | None] = {}
        self.module: dict[str, Any] | None = None
        self.refused: str | None = None

    def _note(self, table: dict[str, str | None], path: str | os.PathLike[str], fingerprint: str | None,
              what: str) -> None:
        key = os.path.abspath(path)
        if key in table and table[key] != fingerprint and self.refused is None:
            self.refused = f"the {what} {key} changed while it was being built"
        table.setdefault(key, fingerprint)

    def note_file(self, path: str | os.PathLike[str], data: bytes | None = None) -> None:
        if not os.path.abspath(path).startswith(_PACKAGE_PREFIX):
            self._note(self.files, path, file_fingerprint(path, data), "file")

    def note_dir(self, path: str | os.PathLike[str], names: Iterable[str] | None = None) -> None:
        if not os.path.abspath(path).startswith(_PACKAGE_PREFIX):
            self._note(self.dirs, path, dir_fingerprint(path, names), "folder")

    def note_output(self, path: str | os.PathLike[str], data: bytes) -> None:
        self.outputs[os.path.abspath(path)] = hashlib.sha256(data).hexdigest()  # the last write stands

    def record(self, lookup: list[Any]) -> dict[str, Any]:
        assert self.module is not None and self.refused is None
        return {"format": FORMAT, "lookup": lookup, "environment": self.environment, "files": self.files,
                "dirs": self.dirs, "outputs": self.outputs, "module": self.module}


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    """Note what the build in this block (this thread's context) reads and writes: the
    build session's recorder (ksbind/session.py)."""
    recorder = Recorder()
    with session.changed(recorder=recorder):
        yield recorder


def _recorder() -> session.InputRecorder | None:
    return session.current().recorder


# ------------------------------------------------------------------ the reader: read and noted at once


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A build input's bytes, noted as read (an edit after this is a change next time). The way a
    build reads a file: a reader that goes through here cannot forget to note it. OSError as open's."""
    with open(path, "rb") as f:
        data = f.read()
    note_file(path, data)
    return data


def read_if_present(path: str | os.PathLike[str]) -> bytes | None:
    """``read_bytes``, or None where there is no file (its absence noted: one made later is a change)."""
    try:
        return read_bytes(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        note_file(path, None)
        return None


def list_dir(path: str | os.PathLike[str]) -> list[str]:
    """A folder's entries' names, sorted, noted as listed (an entry added or removed is a change)."""
    names = sorted(os.listdir(path))
    note_dir(path, names)
    return names


def note_file(path: str | os.PathLike[str], data: bytes | None = None) -> None:
    """An input file, as read (``data``) or as it is now, when a build is being recorded."""
    recorder = _recorder()
    if recorder is not None:
        recorder.note_file(path, data)


def note_dir(path: str | os.PathLike[str], names: Iterable[str] | None = None) -> None:
    """A folder whose listing the build used (``names``: as listed)."""
    recorder = _recorder()
    if recorder is not None:
        recorder.note_dir(path, names)


def note_tree(path: str | os.PathLike[str]) -> None:
    """A folder, its subfolders and every file in them (a template folder)."""
    recorder = _recorder()
    if recorder is None:
        return
    recorder.note_dir(path)
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for d in dirs:
            recorder.note_dir(os.path.join(folder, d))
        for name in sorted(files):
            recorder.note_file(os.path.join(folder, name))


def note_output(path: str | os.PathLike[str], data: str | bytes) -> None:
    """A file the build wrote (or found already holding ``data``) for the user."""
    recorder = _recorder()
    if recorder is not None:
        recorder.note_output(path, data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)


def note_module(module: dict[str, Any]) -> None:
    """The cache entry and import steps of the module the build returned (ksbind/build_api.py loads it so)."""
    recorder = _recorder()
    if recorder is not None:
        recorder.module = module


def refuse(why: str) -> None:
    """This build cannot be reused without running it (no record is written)."""
    recorder = _recorder()
    if recorder is not None and recorder.refused is None:
        recorder.refused = why


def changed(record: dict[str, Any]) -> str | None:
    """What differs between a record and now (None: nothing): the first difference found,
    cheapest checks first."""
    now = record.get("environment")
    if not isinstance(now, dict):
        return "the record is unreadable"
    env = {k: v for k, v in os.environ.items()
           if (k in ENVIRONMENT or k.startswith(ENVIRONMENT_PREFIXES)) and k not in _IGNORED}
    for label, value in (("environ", dict(sorted(env.items()))), ("cwd", os.getcwd()),
                         ("executable", sys.executable), ("python", sys.version), ("sys.path", list(sys.path))):
        if now.get(label) != value:
            return f"the {label} differs"
    for path, fingerprint in record["files"].items():
        if file_fingerprint(path) != fingerprint:
            return f"{path} changed"
    for path, fingerprint in record["dirs"].items():
        if dir_fingerprint(path) != fingerprint:
            return f"the folder {path} changed"
    for path, digest in record["outputs"].items():
        if _content_digest(path) != digest:
            return f"the generated file {path} changed"
    if now.get("distributions") != distributions():
        return "the installed distributions changed"
    if now.get("ksbind") != package_digest():
        return "ksbind's own files changed"
    return None


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


__all__ = ["BIG_FILE", "FORMAT", "ENVIRONMENT", "Recorder", "recording", "note_file", "note_dir", "note_tree",
           "note_output", "note_module", "refuse", "changed", "file_fingerprint", "dir_fingerprint",
           "package_digest", "distributions", "environment", "dumps"]
