"""The shared precompiled header: pybind11's and ksbind's headers (and torch's,
for the torch target) parsed once per machine, toolchain and flags, and
loaded by every generated unit instead of being parsed again.

The header (``ksbind_pch.h``: one ``#include`` per ``Toolchain.pch_includes``)
is forced into the units that ask for it with ``-include`` once its
precompiled file (``.gch`` for g++, ``.pch`` for clang++) is built; the units
include those headers themselves, so a unit means the same with or without
it: a missing or rejected precompiled header costs time, never correctness
(g++ ignores one that does not match; clang refuses it with an error, and the
unit is then compiled again without it, ksbind/backend/compile.py).

Its key is what its content depends on and nothing else: the compiler's
identity, the toolchain's flags and include path (never a module's own
folder: no module-specific folder is on a toolchain's include path), the
unit's own flags that change a header's meaning (``-f``/``-O``/``-m`` flags such
as ``fast_math``'s; ``-D`` defines like the module's name are left out: they
are given to units whose code uses them, after the header), versions, and the
header's text. The headers it pulled in are recorded with their sha256, as an
object's are (cache/objects.py), and a unit compiled with it records them too.

A toolchain may name a companion (``Toolchain.pch_companion``: a source and its
header under ksbind's include folder; the torch target's support code). The
same build compiles it into ``companion.o`` beside the precompiled file, with
the units' flags and without the precompiled header, and records what it read
with the header's dependencies. Units compiled with that precompiled header then
also ``-include`` the companion's header, which declares the companion's code
(so they leave it out), and the module links the object (ksbind/backend/compile.py,
``companion``). A companion that fails to compile is left out: the units
compile its code themselves, as without one.

Layout: ``pch/KEY16/ksbind_pch.h`` (the header alone: what units include until
the precompiled one exists) and ``pch/KEY16/DEPS16/{ksbind_pch.h,
ksbind_pch.h.gch|.pch, companion.o, deps.json}``. It is built once per machine: when a build
finds it missing, a process of its own builds it at low priority after that
build's compiles are done (so the build is no slower for it), and every later
build uses it; ``KSBIND_PCH=0`` turns it off.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksbind.backend.runner import Runner, Stopped, Unit
from ksbind.backend.toolchain import INCLUDE_DIR, Toolchain, compiler_identity, launcher
from ksbind.cache.keys import Hasher
from ksbind.cache.layout import PCH_DIR
from ksbind.cache.objects import (
    ObjectCache,
    Stored,
    dependency_records,
    parse_depfile,
)
from ksbind.fileio import write_atomic

HEADER = "ksbind_pch.h"
#: The companion's object in the precompiled header's folder.
COMPANION = "companion.o"


@dataclass(frozen=True)
class SharedPch:
    key: str
    include: Path                 # what the units -include: the built one's header, else the plain one
    plain: Path                   # the plain header: what the precompiled one is built from
    stored: Stored | None         # the built precompiled header's folder, when valid
    deps: tuple[tuple[str, str], ...]  # the headers it holds (with sha256): part of each unit's record
    flags: tuple[str, ...] = ()   # the units' own flags it was built with (meaning_flags)
    companion: Path | None = None  # the companion object built with it, when the toolchain has one
    companion_header: Path | None = None  # what a unit linked with that object includes first


def companion_paths(tc: Toolchain) -> tuple[Path, Path] | None:
    """The toolchain's companion source and header (as included: found on its include path,
    where a target package's headers are), or None."""
    if tc.pch_companion is None:
        return None
    source, header = tc.pch_companion
    folder = next((d for d in tc.include_dirs if (d / source).is_file()), INCLUDE_DIR)
    return folder / source, folder / header


def meaning_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The flags of a unit a precompiled header must be built with: all but
    -D/-U (a header's meaning does not depend on a macro it never uses, and
    both compilers accept extra defines after a precompiled header)."""
    return tuple(f for f in flags if not f.startswith(("-D", "-U")))


def suffix(tc: Toolchain) -> str:
    """The precompiled file's suffix each compiler looks for beside an -include'd header."""
    return ".pch" if tc.family == "clang" else ".gch"


def build_flags(tc: Toolchain) -> tuple[str, ...]:
    """Flags for building the precompiled header besides the units' own. clang
    records each header's modification time and refuses the header when one
    changed (a reinstall, a copy); the recorded sha256s check content instead."""
    return ("-Xclang", "-fno-pch-timestamp") if tc.family == "clang" else ()


def header_text(tc: Toolchain) -> str:
    lines = [f"// ksbind's shared precompiled header for the {tc.name} toolchain (ksbind/backend/pch.py)."]
    lines += [f"#include <{h}>" for h in tc.pch_includes]
    return "\n".join(lines) + "\n"


def pch_key(tc: Toolchain, flags: Sequence[str] = ()) -> str:
    h = Hasher.with_environment()
    for label, value in tc.key_parts:
        h.add_text(f"part:{label}", value)
    h.add_text("compiler", compiler_identity(tc.cxx))
    h.add_text("args", "\0".join(tc.compile_args(meaning_flags(flags))))
    h.add_text("build", "\0".join(build_flags(tc)))
    h.add_text("header", header_text(tc))
    h.add_text("companion", "\0".join(tc.pch_companion or ()))
    return h.hexdigest()


def lookup(tc: Toolchain, root: Path, flags: Sequence[str] = ()) -> SharedPch:
    """The shared precompiled header of this toolchain and these unit flags: the
    built one when it is valid, else the plain header (written if missing)."""
    flags = meaning_flags(flags)
    key = pch_key(tc, flags)
    store = ObjectCache(root, PCH_DIR)
    plain = store.unit_dir(key) / HEADER
    text = header_text(tc)
    try:
        current = plain.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text:
        write_atomic(plain, text)
    stored = store.find(key)
    if stored is not None and stored.file(HEADER + suffix(tc)).is_file():
        paths = companion_paths(tc)
        companion = stored.file(COMPANION)
        if paths is not None and companion.is_file():
            return SharedPch(key, stored.file(HEADER), plain, stored, stored.deps, flags, companion, paths[1])
        return SharedPch(key, stored.file(HEADER), plain, stored, stored.deps, flags)
    return SharedPch(key, plain, plain, None, (), flags)


def build(tc: Toolchain, root: Path, shared: SharedPch, runner: Runner, wait: bool = False) -> bool | None:
    """Build the precompiled header, unless another process is building it: then this
    build goes without, or with ``wait``, waits for that one and uses what it built.
    True when it is built, False when building it failed, None when another process had it."""

    store = ObjectCache(root, PCH_DIR)
    lock = store.lock(shared.key, what="the shared precompiled header") if wait else store.try_lock(shared.key)
    with lock as held:
        if held is False:
            return None
        if store.find(shared.key) is not None:
            return True
        with store.staging() as tmp:
            (tmp / HEADER).write_text(header_text(tc), encoding="utf-8")  # what units -include
            # Compiled from the plain header's lasting path, not the staging copy's: clang
            # records the file a precompiled header was made from and refuses it once that
            # file is gone (the staging folder is renamed into the store).
            header = shared.plain
            dep = tmp / "pch.d"
            out = HEADER + suffix(tc)
            cmd = [*launcher(), *tc.cxx, *tc.compile_args(shared.flags), *build_flags(tc), "-x", "c++-header",
                   str(header), "-MD", "-MF", str(dep), "-o", str(tmp / out)]
            try:
                runner.run(cmd, Unit(header), "precompiling", tmp, quiet_failure=True)
            except Stopped:
                return False  # the units read the header instead: slower, the same result
            names = [d for d in parse_depfile(dep.read_text(encoding="utf-8", errors="replace"))
                     if os.path.abspath(d) != str(header)]
            dep.unlink()
            files = [HEADER, out]
            companion_deps = _build_companion(tc, shared, runner, tmp)
            if companion_deps is not None:
                files.append(COMPANION)
                names = list(dict.fromkeys([*names, *companion_deps]))
            store.store(shared.key, tmp, files, dependency_records(names), str(header))
            return True


def _build_companion(tc: Toolchain, shared: SharedPch, runner: Runner, tmp: Path) -> list[str] | None:
    """Compile the toolchain's companion source into ``tmp/COMPANION`` with the units' flags
    (without the precompiled header: a background build, and clang ties a precompiled header
    to its path); the files it read, or None (no companion, or it failed: the units then
    compile its code themselves, the same result)."""
    paths = companion_paths(tc)
    if paths is None:
        return None
    source = paths[0]
    dep = tmp / "companion.d"
    cmd = [*launcher(), *tc.cxx, *tc.compile_args(shared.flags), "-MD", "-MF", str(dep), "-c", str(source),
           "-o", str(tmp / COMPANION)]
    try:
        runner.run(cmd, Unit(source), "compiling", tmp, quiet_failure=True)
    except Stopped:
        return None
    names = parse_depfile(dep.read_text(encoding="utf-8", errors="replace"))
    dep.unlink()
    return names


FAILED = "failed"
#: A failed background build is tried again (same key) only once this much more space is
#: free under the cache than when it failed: a full disk is its usual cause, and each try
#: fills the disk for a while (tens to hundreds of MB), which would put other builds at risk.
RETRY_FREED_BYTES = 32 * 1024 ** 2
#: Nor is one started with less than this free: a .gch is tens to hundreds of MB.
MIN_FREE_BYTES = 256 * 1024 ** 2


def free_bytes(folder: Path) -> int | None:
    """The bytes free for this user on folder's filesystem (None when it cannot be told)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def may_start(root: Path, key: str) -> bool:
    """Whether a background build of this header may start: none under way, enough space
    free, and no failed one since which no space was freed (that record is then removed)."""
    folder = ObjectCache(root, PCH_DIR).unit_dir(key)
    if building(root, key):
        return False
    free = free_bytes(folder)
    if free is not None and free < MIN_FREE_BYTES:
        return False
    try:
        failed_free = int(json.loads((folder / FAILED).read_bytes())["free"])
    except FileNotFoundError:
        return True
    except (OSError, ValueError, TypeError, KeyError):
        failed_free = 0  # an unreadable record: as if it failed with nothing free
    if free is None or free < failed_free + RETRY_FREED_BYTES:
        return False
    try:
        os.unlink(folder / FAILED)
    except OSError:
        return False
    return True


def note_failure(root: Path, key: str) -> None:
    """Record a failed build of this header, with the space free then (read by may_start)."""
    folder = ObjectCache(root, PCH_DIR).unit_dir(key)
    free = free_bytes(folder)
    with contextlib.suppress(OSError):
        write_atomic(folder / FAILED, json.dumps({"free": free or 0, "at": time.time()}) + "\n")


BUILDING = "building"
#: A "building" marker older than this is a build that died: another may start.
BUILDING_STALE_SECONDS = 1800.0


def building(root: Path, key: str) -> bool:
    """Whether a process is building this precompiled header now."""
    return _fresh(ObjectCache(root, PCH_DIR).unit_dir(key) / BUILDING)


def _fresh(marker: Path) -> bool:
    try:
        return time.time() - marker.stat().st_mtime < BUILDING_STALE_SECONDS
    except OSError:
        return False


def wait_for_background(folder: Path, timeout: float = 600.0) -> bool:
    """Wait until no background header build writes under folder (any cache root inside
    it): what a caller must do before deleting a cache it built in. False on timeout."""
    deadline = time.monotonic() + timeout
    while any(m.parent.parent.name == PCH_DIR and _fresh(m) for m in folder.rglob(BUILDING)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def start_background(tc: Toolchain, root: Path, shared: SharedPch) -> None:
    """Build the precompiled header in a process of its own, at low priority, not
    waited for: the build that starts it goes on without it, later builds use it."""
    if not may_start(root, shared.key):
        return
    fields = {f.name: getattr(tc, f.name) for f in dataclasses.fields(tc)}
    args = json.dumps({"root": str(root), "toolchain": _jsonable(fields), "flags": list(shared.flags)})
    # Marks a build in progress (removed by it when done): what benchmarks and tests wait on.
    marker = ObjectCache(root, PCH_DIR).unit_dir(shared.key) / BUILDING
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass
    try:
        proc = subprocess.Popen([sys.executable, "-m", __name__, args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=lambda: os.nice(10))
    except OSError:
        return  # no precompiled header: slower, the same result
    # Reaped by a thread of its own: a Popen dropped while its process runs is a
    # ResourceWarning in the user's program, and one never waited for a zombie.
    threading.Thread(target=proc.wait, name="ksbind-pch-reaper", daemon=True).start()


def _jsonable(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    return str(v) if isinstance(v, Path) else v


def _main(argv: list[str]) -> int:
    """``python -m ksbind.backend.pch ARGS``: what start_background runs."""

    args = json.loads(argv[0])
    f = args["toolchain"]
    companion = f.get("pch_companion")
    tc = Toolchain(f["name"], tuple(f["cxx"]), tuple(f["cflags"]), tuple(map(Path, f["include_dirs"])),
                   tuple(map(Path, f["system_include_dirs"])), tuple(f["ldflags"]), tuple(f["libs"]),
                   tuple(f["pch_includes"]), tuple((str(a), str(b)) for a, b in f["key_parts"]),
                   bool(f["two_phase_init"]), (str(companion[0]), str(companion[1])) if companion else None)
    root = Path(args["root"])
    shared = lookup(tc, root, tuple(args.get("flags", ())))
    try:
        built: bool | None = True
        if shared.stored is None:
            try:
                built = build(tc, root, shared, Runner())
            except Exception:  # noqa: BLE001 - a full disk, most often: the units go without it
                built = False
        if built is False:
            note_failure(root, shared.key)  # not tried again until space is freed (may_start)
    finally:
        try:
            os.unlink(ObjectCache(root, PCH_DIR).unit_dir(shared.key) / BUILDING)
        except OSError:
            pass
    return 0


__all__ = ["SharedPch", "COMPANION", "companion_paths",
           "lookup", "build", "start_background", "building", "wait_for_background", "may_start",
           "note_failure", "pch_key", "header_text", "HEADER", "meaning_flags", "suffix"]


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
