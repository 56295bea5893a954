"""The object cache: compiled translation units (and precompiled headers), shared
by every module built with the same cache root, keyed by everything that
affects them.

Two levels, as ccache's direct mode and ninja's depfiles do it:

- the *unit key* is known before compiling: the compiler's identity (path and
  ``--version``), every flag, the include path, the source's path and content,
  the shared precompiled header's key when one is used, and the tool versions
  of ``ksbind.cache.keys.environment_key()`` (plus torch's for the torch target);
- the headers a unit includes are known only after compiling it: the
  compiler writes them (``-MD -MF``) and each stored object records them with
  their sha256. A lookup takes the unit key's folder and accepts a stored
  object whose every recorded header still has the recorded content.

Layout under the cache root: ``objects/UNITKEY16/DEPSKEY16/`` holds the
object (or the .gch and its header) and ``deps.json`` (the full unit key,
the source, each header with its sha256, each stored file with its size and
sha256). A stored folder appears in one rename, so readers see all of it or
none; a lookup checks sizes always and content once per process (as module
entries are checked), except where a file's stat identity (size, mtime,
ctime, inode: ``file_identity``) is the one ``deps.json`` recorded when it was
hashed (``identities``, per header and per stored file): then its content is
the one hashed, as git's index and ccache's inode cache take it. Any write to
a file, in place or by replacing it, changes its ctime or inode, which no
program can set back; so a second module, in a new process, no longer hashes
the few hundred headers behind the torch target's precompiled header and its
110 MB file (0.7 s per build). ``deps.json``'s mtime is the entry's last use: eviction
(``ksbind.cache.maintenance.evict``) treats these folders like module entries. Compiling a
unit key happens under ``objects/.locks/UNITKEY16.lock``, so two processes
needing the same object compile it once.
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ksbind.cache.keys import file_sha256
from ksbind.cache.layout import DEPS, OBJECTS_DIR, PCH_DIR
from ksbind.cache.locks import build_lock, try_lock
from ksbind.cache.maintenance import listed_files, note_used, remove_folder
from ksbind.errors import warn

DEPS_FORMAT = 1

#: A file's stat identity: (size, mtime_ns, ctime_ns, inode).
Identity = tuple[int, int, int, int]

#: Per process: a file hashed by its stat identity (a changed file has another identity).
_digests: dict[str, tuple[Identity, str]] = {}  # path -> (identity when hashed, sha256)
_digests_lock = threading.Lock()


def file_identity(st: os.stat_result) -> Identity:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _as_identity(recorded: object) -> Identity | None:
    """An identity as a record holds it (a list of four ints), or None."""
    if not isinstance(recorded, list) or len(recorded) != 4 or not all(type(x) is int for x in recorded):
        return None
    return (recorded[0], recorded[1], recorded[2], recorded[3])


def file_digest(path: str, recorded: tuple[object, str] | None = None) -> str | None:
    """sha256 of a file (None when it cannot be read); memoised per process by
    its stat identity, so a header shared by many units is read once. ``recorded``:
    an identity and the digest a record holds for the file (``deps.json``'s
    ``identities``): while the file still has that identity, that digest, unread."""
    try:
        seen = file_identity(os.stat(path))
    except OSError:
        return None
    with _digests_lock:
        known = _digests.get(path)
        if known is not None and known[0] == seen:
            return known[1]
        if recorded is not None and _as_identity(recorded[0]) == seen:
            _digests[path] = (seen, recorded[1])
            return recorded[1]
    try:
        digest = file_sha256(Path(path))
    except OSError:
        return None
    with _digests_lock:
        _digests[path] = (seen, digest)
    return digest


def hashed_identity(path: str, digest: str) -> Identity | None:
    """The stat identity the file had when this process hashed it to ``digest`` (taken
    before reading it: a write during the hash leaves an identity that no longer
    matches), or None."""
    with _digests_lock:
        known = _digests.get(path)
    return known[0] if known is not None and known[1] == digest else None


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a make-style depfile (``-MD -MF``), in order, without
    duplicates; escaped spaces (``\\ ``) and ``$$`` are unescaped."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    tokens: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in " #":
            cur.append(text[i + 1])
            i += 2
            continue
        if c == "$" and text[i + 1:i + 2] == "$":
            cur.append("$")
            i += 2
            continue
        if c.isspace():
            if cur:
                tokens.append("".join(cur))
                cur = []
        else:
            cur.append(c)
        i += 1
    if cur:
        tokens.append("".join(cur))
    deps: list[str] = []
    seen_target = False
    for tok in tokens:
        if not seen_target:
            if tok.endswith(":"):
                seen_target = True
            continue
        if tok.endswith(":"):  # a second rule (-MP's phony targets): its name is a dependency already
            continue
        deps.append(tok)
    return list(dict.fromkeys(deps))


def dependency_records(paths: Sequence[str], base: Path | None = None) -> list[tuple[str, str]]:
    """(absolute path, sha256) of each dependency; relative paths are taken from ``base``."""
    out = []
    for p in paths:
        full = os.path.normpath(os.path.join(base, p)) if base is not None and not os.path.isabs(p) else p
        digest = file_digest(full)
        out.append((full, digest or "unreadable"))
    return out


@dataclass(frozen=True)
class Stored:
    """A cache hit: the folder holding the files, and what was recorded."""

    dir: Path
    deps: tuple[tuple[str, str], ...]

    def file(self, name: str) -> Path:
        return self.dir / name


#: Per process, by stat identity: stored files this process found intact: path -> (size, mtime_ns, inode).
_checked: dict[str, tuple[int, int, int, str]] = {}


def damaged_file(folder: Path, files: dict[str, tuple[int, str]], record: str,
                 identities: dict[str, object] | None = None) -> str | None:
    """What is wrong with the first of folder's files that does not match its record
    (name -> (size, sha256), read from the record file named ``record``), or None.
    Each file's content is hashed once per process while its size, mtime and inode stay,
    and not at all while its stat identity is the one ``identities`` recorded for it."""
    for name, (size, digest) in files.items():
        p = folder / name
        try:
            st = os.stat(p)
        except OSError:
            return f"{name} is missing"
        if st.st_size != size:
            return f"{name} has {st.st_size} bytes, {record} says {size}"
        seen = (st.st_size, st.st_mtime_ns, st.st_ino, digest)
        if _checked.get(str(p)) == seen:
            continue
        if identities is not None and file_identity(st) == _as_identity(identities.get(name)):
            _checked[str(p)] = seen
            continue
        try:
            ok = file_sha256(p) == digest
        except OSError:
            ok = False
        if not ok:
            return f"{name} does not match its sha256"
        _checked[str(p)] = seen
    return None


class ObjectCache:
    """Compiled outputs by unit key (see the module's docstring). ``root`` is the
    build cache's root (``ksbind.cache.layout.cache_root()``); ``kind`` is
    ``objects`` or ``pch``."""

    def __init__(self, root: Path, kind: str = OBJECTS_DIR) -> None:
        self.root = Path(root)
        self.dir = self.root / kind

    def unit_dir(self, key: str) -> Path:
        return self.dir / key[:16]

    @contextlib.contextmanager
    def lock(self, key: str, what: str = "") -> Iterator[None]:
        with build_lock(self.dir / ".locks" / f"{key[:16]}.lock", what=what or key[:16]):
            yield

    @contextlib.contextmanager
    def try_lock(self, key: str) -> Iterator[bool]:
        path = self.dir / ".locks" / f"{key[:16]}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with try_lock(path) as held:
            yield held

    def find(self, key: str) -> Stored | None:
        """A stored output for this unit key whose recorded headers all still have
        their recorded content; marks it used. Damaged folders are removed."""
        folder = self.unit_dir(key)
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return None
        for child in children:
            if child.name.startswith(".") or not child.is_dir(follow_symlinks=False):
                continue  # pch/KEY16/ also holds the plain header and the "building" marker
            stored = self._check(Path(child.path), key)
            if stored is not None:
                with contextlib.suppress(OSError):
                    os.utime(stored.dir / DEPS)  # the entry's last use (LRU eviction)
                note_used(stored.dir)
                return stored
        return None

    def _check(self, d: Path, key: str) -> Stored | None:
        """The stored output in ``d`` when its record is intact and its headers are
        unchanged. A damaged one (record missing, unreadable or another key's or
        format's; a file missing, of another size or content) is discarded with
        one warning, so the rebuild can store its own in its place; one whose
        headers changed is another build's, kept."""
        try:
            raw = (d / DEPS).read_bytes()
        except FileNotFoundError:
            self._discard(d, f"it has no {DEPS}")
            return None
        except OSError as e:
            self._discard(d, f"cannot read {DEPS}: {e.strerror}")
            return None
        try:
            record = json.loads(raw)
            if record.get("format") != DEPS_FORMAT:
                self._discard(d, f"{DEPS} is not of format {DEPS_FORMAT}")
                return None
            if record.get("key") != key:
                self._discard(d, f"{DEPS} is another unit's")
                return None
            deps = tuple((str(p), str(h)) for p, h in record["deps"])
            files = listed_files(record)
            identities = record.get("identities", {})
            dep_identities, file_identities = dict(identities.get("deps", {})), dict(identities.get("files", {}))
        except (ValueError, TypeError, KeyError, AttributeError):
            self._discard(d, f"{DEPS} is unreadable")
            return None
        for path, digest in deps:
            if file_digest(path, (dep_identities.get(path), digest)) != digest:
                return None
        why = damaged_file(d, files, DEPS, file_identities)
        if why is not None:
            self._discard(d, why)
            return None
        return Stored(d, deps)

    def _discard(self, d: Path, why: str) -> None:
        """A damaged stored output: said once, and moved out of the way as a whole
        (then rebuilt). On a read-only cache it stays, unused. One removed meanwhile
        (eviction, clean) was not damaged: nothing is said."""
        if not os.path.lexists(d):
            return
        try:
            removed = remove_folder(self.root, d)
        except OSError:
            removed = False
        removed = removed or not os.path.lexists(d)
        warn(f"the cached {'precompiled header' if self.dir.name == PCH_DIR else 'object'} {d} is damaged "
             f"({why}): {'rebuilding it' if removed else 'not using it'}")

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A private folder to compile into (on the cache's filesystem, for the rename)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.dir))
        try:
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def store(self, key: str, staged: Path, files: Sequence[str], deps: Sequence[tuple[str, str]],
              source: str) -> Stored:
        """Move ``files`` (names in the staging folder ``staged``) into the cache
        under this unit key and these dependencies, in one rename; returns them."""
        h = hashlib.sha256(key.encode())
        for path, digest in deps:
            h.update(f"\0{path}\0{digest}".encode("utf-8", "surrogateescape"))
        deps_key = h.hexdigest()
        records: dict[str, dict[str, object]] = {}
        file_identities: dict[str, list[int]] = {}
        for name in files:
            p = staged / name
            st = p.stat()  # before hashing: see hashed_identity
            records[name] = {"size": st.st_size, "sha256": file_sha256(p)}
            file_identities[name] = list(file_identity(st))  # the folder's rename keeps it
        dep_identities = {path: list(seen) for path, digest in deps
                          if (seen := hashed_identity(path, digest)) is not None}
        record = {"format": DEPS_FORMAT, "key": key, "source": source, "deps": [list(d) for d in deps],
                  "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "files": records, "identities": {"deps": dep_identities, "files": file_identities}}
        (staged / DEPS).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        final = self.unit_dir(key) / deps_key[:16]
        final.parent.mkdir(parents=True, exist_ok=True)
        moved = final.parent / f".in-{uuid.uuid4().hex[:12]}"
        os.rename(staged, moved)  # first beside the final name: same folder, one rename
        try:
            for attempt in range(2):
                try:
                    os.rename(moved, final)
                    break
                except OSError:
                    if not os.path.lexists(final):
                        raise
                    # Already there: stored by another process meanwhile (keep that one), or
                    # a damaged one (discarded by _check, then this one takes its place).
                    if attempt == 0 and self._check(final, key) is None:
                        continue
                    break
        finally:
            shutil.rmtree(moved, ignore_errors=True)
        staged.mkdir(exist_ok=True)  # the staging context removes it
        note_used(final)
        stored = self._check(final, key)
        if stored is None:
            raise OSError(f"the stored output in {final} does not check")
        return stored


__all__ = ["ObjectCache", "Stored", "parse_depfile", "dependency_records", "file_digest", "damaged_file"]
