"""A stand-in for torch's CPU library at link time: the torch target's modules link against a
small library that exports only torch's C shim, instead of ``libtorch_cpu.so`` itself.

Why: linking against the real library makes the linker read its dynamic symbol table (a
0.4 GB file exporting about a million symbols, nearly all of them C++): about 60 ms of a
torch module's 80 ms link, on every build. A torch-target module calls nothing of it but the
stable ABI's C functions (``aoti_torch_*`` and ``torch_*``: the C shim), so a library
exporting those names, under the same file name (the module's ``DT_NEEDED`` entry is the same),
links the same module in a fifth of the time. At run time the module finds the real library
through its rpath, as before; the stub is never loaded.

The stub is made once per torch library (its real path and stat identity: a reinstalled torch
gets a new one) from that library's own export list (``nm -D``), as a C++ file of empty
``extern "C"`` functions compiled with the build's compiler, in the cache's ``link-stubs/``
folder. A build that finds none starts making it on a thread while its units compile (two
processes at low priority, about 0.3 s of CPU), and links against it if it is ready by then.
Where ``nm`` or the compiler cannot make one, builds link against the real library.
Beside the stub, ``stub.json`` records its size and sha256: a build checks it (hashed once per
process while its stat identity stays) and makes a damaged stub again, saying so; one that
failed to link would otherwise cost every later build a second link, silently.

A module whose objects need anything else of the library (user C++ declaring one of torch's
C++ functions itself) fails to link against the stub: ksbind/backend/compile.py's ``link``
then links it again against the real library, so the stub can cost a failed link, never a
build.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from ksbind.backend.compile import LinkFirst
from ksbind.backend.runner import child_setup, dying_with_this_process
from ksbind.cache.keys import file_sha256
from ksbind.cache.layout import LINK_STUBS_DIR
from ksbind.cache.maintenance import listed_files, remove_folder
from ksbind.cache.objects import damaged_file
from ksbind.errors import warn

log = logging.getLogger("ksbind.compile")

#: The exported names a stub keeps: the C shim's, which is all that a module built against
#: torch's stable headers (TORCH_TARGET_VERSION) calls.
PREFIXES = ("aoti_torch_", "torch_")
#: nm's letters for defined dynamic functions: global, weak, indirect.
_FUNCTION_KINDS = frozenset("TWi")
#: The stub's record, beside it, in the shape of an object's deps.json:
#: {"files": {NAME: {"size": N, "sha256": HEX}}} (read by cache/maintenance.py's listed_files).
RECORD = "stub.json"
#: The helper processes' niceness: they run beside the build's compiles and must not slow them.
_NICE = 10


def _run_yielding(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a helper process (nm, the compiler) at niceness _NICE, its output captured."""
    return subprocess.run(dying_with_this_process(cmd), capture_output=True, text=True, errors="replace",
                          stdin=subprocess.DEVNULL, preexec_fn=child_setup(_NICE), check=False)


def stub_folder(root: Path, library: Path) -> Path | None:
    """Where the stub of ``library`` lives under the cache ``root`` (None when the library
    cannot be read): one folder per real path and stat identity."""
    try:
        real = library.resolve()
        st = real.stat()
    except OSError:
        return None
    identity = f"{real}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_dev}"
    return root / LINK_STUBS_DIR / hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def link_first(root: Path, library: Path) -> LinkFirst | None:
    """What a link of a module puts first for the stub of ``library``: the stub's folder, used if
    the stub is there once the objects are compiled (None when the library cannot be read)."""
    folder = stub_folder(root, library)
    return LinkFirst(folder, library.name) if folder is not None else None


def _damage(folder: Path) -> str | None:
    """What is wrong with the stub in ``folder`` (its record unreadable, or the stub not what
    the record says), or None."""
    try:
        files = listed_files(json.loads((folder / RECORD).read_bytes()))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        return f"{RECORD} is unreadable: {type(e).__name__}"
    return damaged_file(folder, files, RECORD)


def _clear_damaged(root: Path, folder: Path) -> None:
    """Remove a stub folder that is not whole, saying so when it was damaged: a folder without
    its record (made by an earlier ksbind, or its record deleted) goes without a word."""
    if not folder.is_dir():
        return
    recorded = (folder / RECORD).exists()
    why = _damage(folder) if recorded else None
    if recorded and why is None:
        return  # whole
    try:
        removed = remove_folder(root, folder)
    except OSError:
        removed = False
    if why is not None:
        warn(f"the cached link stub {folder} is damaged ({why}): "
             f"{'making it again' if removed else 'linking against the real library'}")


def exported_shim(library: Path) -> list[str]:
    """The C shim functions ``library`` exports (nm -D), sorted; [] when nm cannot tell."""
    nm = shutil.which("nm")
    if nm is None:
        return []
    try:
        listed = _run_yielding([nm, "-D", "--defined-only", str(library)])
    except OSError:
        return []
    if listed.returncode != 0:
        return []
    names = set()
    for line in listed.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in _FUNCTION_KINDS and fields[2].startswith(PREFIXES):
            names.add(fields[2])
    return sorted(names)


def stub_source(names: Sequence[str]) -> str:
    """A C++ file defining each name as an empty ``extern "C"`` function: what the linker needs
    to resolve the module's calls (their types do not matter to it)."""
    lines = ["// A link-time stand-in for torch's CPU library, written by ksbind (ksbind/targets/torch/link_stub.py).",
             'extern "C" {']
    lines += [f"void {n}() {{}}" for n in names]
    lines.append("}")
    return "\n".join(lines) + "\n"


def make(root: Path, library: Path, cxx: Sequence[str]) -> Path | None:
    """Make the stub of ``library`` (if no process has) and return its folder; None when it
    cannot be made. Written in a temporary folder and renamed into place: a reader sees all
    of it or nothing."""
    folder = stub_folder(root, library)
    if folder is None:
        return None
    if (folder / library.name).is_file():
        return folder
    names = exported_shim(library)
    if not names:
        log.debug("no link stub for %s: nm listed none of its C shim", library)
        return None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".in-", dir=folder.parent) as tmp:
            work = Path(tmp)
            source = work / "stub.cpp"
            source.write_text(stub_source(names), encoding="utf-8")
            made = work / "stub"
            made.mkdir()
            cmd = [*cxx, "-shared", "-fPIC", "-nostdlib", f"-Wl,-soname,{library.name}", "-o",
                   str(made / library.name), str(source)]
            done = _run_yielding(cmd)
            if done.returncode != 0:
                log.debug("no link stub for %s: the compiler failed: %s", library, done.stdout + done.stderr)
                return None
            stub = made / library.name
            record = {"files": {library.name: {"size": stub.stat().st_size, "sha256": file_sha256(stub)}}}
            (made / RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")
            try:
                os.rename(made, folder)
            except OSError:
                if not (folder / library.name).is_file():  # not another process's, made meanwhile
                    raise
    except OSError as e:
        log.debug("no link stub for %s: %s", library, e)
        return None
    log.debug("made a link stub of %s (%d functions) in %s", library, len(names), folder)
    return folder


def start(root: Path, library: Path, cxx: Sequence[str]) -> threading.Thread | None:
    """Make the stub on a thread (None when it is made already): a build starts it beside its
    compiles, and links against it if it is ready when the compiles end. A stub that is not
    whole is removed first (a damaged one said: _clear_damaged)."""
    folder = stub_folder(root, library)
    if folder is None:
        return None
    _clear_damaged(root, folder)
    if (folder / library.name).is_file():
        return None
    thread = threading.Thread(target=make, args=(root, library, tuple(cxx)), name="ksbind-link-stub")
    thread.start()
    return thread


__all__ = ["PREFIXES", "stub_folder", "link_first", "exported_shim", "stub_source", "make", "start"]
