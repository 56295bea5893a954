"""The shared precompiled header: pybind11's and ksbind's headers (and torch's,
for the torch target) parsed once per machine, toolchain and runtime, and
loaded by every generated unit instead of being parsed again.

The header (``ksbind_pch.h``: one ``#include`` per ``Toolchain.pch_includes``)
is forced into the generated units with ``-include``. g++ uses the ``.gch``
beside it when that is valid and otherwise reads the header itself, so a unit
means the same with or without it: a missing or rejected .gch costs time,
never correctness. Its key is the toolchain's (compiler identity, flags,
include path, versions) and the header's text; the headers it pulled in are
recorded with their sha256, as an object's are (ksbind/cache/objects.py), and a
unit compiled with it records them too.

Layout: ``pch/KEY16/ksbind_pch.h`` (the header alone: what units include until
the .gch exists) and ``pch/KEY16/DEPS16/{ksbind_pch.h, ksbind_pch.h.gch,
deps.json}``. It is built once, when a second build wants it (one module
alone never pays for a header it would not reuse), in a process of its own at
low priority that the build does not wait for (units compiled before it
exists read the header); ``KSBIND_PCH=0`` turns it off.

Measured (docs/building.md): it saves the parse of pybind11 (~1.5 s of a
generated unit's 5-7 s on the GMM module); the rest of a generated unit's
time is code generation for pybind11's support code, which no precompiled
header removes.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksbind.backend.runner import Runner, Stopped, Unit
from ksbind.backend.toolchain import Toolchain, compiler_identity, launcher
from ksbind.cache.keys import Hasher
from ksbind.cache.layout import PCH_DIR
from ksbind.cache.objects import (
    ObjectCache,
    Stored,
    dependency_records,
    parse_depfile,
)
from ksbind.codegen.output import write_atomic

HEADER = "ksbind_pch.h"


@dataclass(frozen=True)
class SharedPch:
    key: str
    include: Path                 # what the units -include: the built one's header, else the plain one
    stored: Stored | None         # the built .gch's folder, when valid
    deps: tuple[tuple[str, str], ...]  # the headers it holds (with sha256): part of each unit's record


def header_text(tc: Toolchain) -> str:
    lines = [f"// ksbind's shared precompiled header for the {tc.name} toolchain (ksbind/backend/pch.py)."]
    lines += [f"#include <{h}>" for h in tc.pch_includes]
    return "\n".join(lines) + "\n"


def pch_key(tc: Toolchain) -> str:
    h = Hasher.with_environment()
    for label, value in tc.key_parts:
        h.add_text(f"part:{label}", value)
    h.add_text("compiler", compiler_identity(tc.cxx))
    h.add_text("args", "\0".join(tc.compile_args()))
    h.add_text("header", header_text(tc))
    return h.hexdigest()


def lookup(tc: Toolchain, root: Path) -> SharedPch:
    """The shared precompiled header of this toolchain: the built one when it is
    valid, else the plain header (written if missing)."""
    key = pch_key(tc)
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
    if stored is not None:
        return SharedPch(key, stored.file(HEADER), stored, stored.deps)
    return SharedPch(key, plain, None, ())


def build(tc: Toolchain, root: Path, shared: SharedPch, runner: Runner) -> None:
    """Build the .gch, unless another process is building it (then this build goes without)."""

    store = ObjectCache(root, PCH_DIR)
    with store.try_lock(shared.key) as held:
        if not held or store.find(shared.key) is not None:
            return
        with store.staging() as tmp:
            header = tmp / HEADER
            header.write_text(header_text(tc), encoding="utf-8")
            dep = tmp / "pch.d"
            cmd = [*launcher(), *tc.cxx, *tc.compile_args(), "-x", "c++-header", str(header), "-MD", "-MF", str(dep),
                   "-o", str(tmp / f"{HEADER}.gch")]
            try:
                runner.run(cmd, Unit(header), "precompiling", tmp, quiet_failure=True)
            except Stopped:
                return  # the units read the header instead: slower, the same result
            names = [d for d in parse_depfile(dep.read_text(encoding="utf-8", errors="replace"))
                     if os.path.abspath(d) != str(header)]
            dep.unlink()
            store.store(shared.key, tmp, [HEADER, f"{HEADER}.gch"], dependency_records(names), str(header))


WANTED = "wanted"
BUILDING = "building"


def wanted_before(root: Path, key: str) -> bool:
    """Whether an earlier build wanted this precompiled header (then it is worth
    building); notes that this one does."""
    marker = ObjectCache(root, PCH_DIR).unit_dir(key) / WANTED
    if marker.exists():
        return True
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass
    return False


def start_background(tc: Toolchain, root: Path) -> None:
    """Build the .gch in a process of its own, at low priority, not waited for:
    the build that starts it goes on without it, later builds use it."""
    fields = {f.name: getattr(tc, f.name) for f in dataclasses.fields(tc)}
    args = json.dumps({"root": str(root), "toolchain": _jsonable(fields)})
    # Marks a build in progress (removed by it when done): what benchmarks wait on.
    building = ObjectCache(root, PCH_DIR).unit_dir(pch_key(tc)) / BUILDING
    try:
        building.touch()
    except OSError:
        pass
    try:
        subprocess.Popen([sys.executable, "-m", __name__, args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         preexec_fn=lambda: os.nice(10))
    except OSError:
        pass  # no precompiled header: slower, the same result


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
    tc = Toolchain(f["name"], tuple(f["cxx"]), tuple(f["cflags"]), tuple(map(Path, f["include_dirs"])),
                   tuple(map(Path, f["system_include_dirs"])), tuple(f["ldflags"]), tuple(f["libs"]),
                   tuple(f["pch_includes"]), tuple((str(a), str(b)) for a, b in f["key_parts"]),
                   bool(f["two_phase_init"]))
    root = Path(args["root"])
    shared = lookup(tc, root)
    try:
        if shared.stored is None:
            build(tc, root, shared, Runner())
    finally:
        try:
            os.unlink(ObjectCache(root, PCH_DIR).unit_dir(shared.key) / BUILDING)
        except OSError:
            pass
    return 0


__all__ = ["SharedPch", "lookup", "build", "start_background", "wanted_before", "pch_key", "header_text", "HEADER"]


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
