"""What every backend compiles with: ksbind's include folders, the runtime's, the
flags every target shares, the compiler, the include path's part of a cache key,
and reading a compiler's first error. Shared by the native build (native.py:
ks/python targets) and the torch build (torch_build.py), so neither imports
the other.
"""
from __future__ import annotations

import dataclasses
import importlib.machinery
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import threading
from collections.abc import Sequence
from pathlib import Path

from ksbind.cache.keys import Hasher
from ksbind.spec import ModuleSpec
from ksbind.targets.registry import get_target

#: ksbind's own C++ headers are in INCLUDE_DIR/ksbind/ and included as
#: <ksbind/...>: no runtime folder holds a ksbind/ folder, so a runtime can
#: neither shadow them nor be shadowed by them.
INCLUDE_DIR = Path(__file__).parent.parent / "include"
#: The bundled minimal runtime (knossos.h): on the include path only for `runtime: bundled`.
RUNTIME_DIR = Path(__file__).parent.parent / "runtime"
#: ksc's runtime has its allocator only with KS_ALLOCATOR defined. Its knossos.h
#: defines it empty (unless KS_CUDA): the same spelling here, so no redefinition warning.
KS_FLAGS = ("-DKS_ALLOCATOR=",)
BASE_FLAGS = ("-O2", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-g0", *KS_FLAGS)
#: A config's `fast_math: true`: given only to the units holding the user's ks
#: code (never to pybind11's or ksbind's conversions), so g++ may reorder float
#: sums and products (-fassociative-math, which needs -fno-signed-zeros) and
#: assume no NaN or infinity (-ffinite-math-only): what lets it vectorise a
#: reduction (sum, max fold) with several accumulators, as inductor does.
#: Results then depend on the vector width (so on the CPU capability) in their
#: last bits, and NaN/inf inputs give unspecified results.
FAST_MATH_FLAGS = ("-fassociative-math", "-fno-signed-zeros", "-ffinite-math-only")
#: A config's `debug: true` (load_ks's debug=True), after every other flag so that they win: the
#: runtime's bounds checks (KS_BOUNDS_CHECK, off in ksc's knossos.h), no optimisation, debug
#: information, assertions (NDEBUG undefined). DEBUG_DIR comes first on such a build's include
#: path: its knossos.h makes the checks' abort() a C++ exception (see the file).
DEBUG_FLAGS = ("-O0", "-g", "-DKS_BOUNDS_CHECK", "-UNDEBUG")
DEBUG_DIR = Path(__file__).parent.parent / "runtime_debug"


#: The file suffix of a module built for the stable ABI (every CPython 3 on POSIX imports it).
ABI3_SUFFIX = ".abi3.so"


def stable_abi(version: tuple[int, int] | None) -> tuple[int, int] | None:
    """The stable ABI a target's module is built for here (its ``limited_api``), or None:
    a free-threaded CPython (3.13t) has no limited API, so there the module is built for
    that interpreter alone, as before."""
    if version is None or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    return version


def limited_api_flags(version: tuple[int, int] | None) -> tuple[str, ...]:
    """``-DPy_LIMITED_API=0x030A0000`` for (3, 10): Python's headers then declare
    only that version's stable ABI. None: the full C API, no flag."""
    version = stable_abi(version)
    if version is None:
        return ()
    return (f"-DPy_LIMITED_API=0x{version[0]:02X}{version[1]:02X}0000",)


def module_suffix(version: tuple[int, int] | None) -> str:
    """The compiled module's file suffix: ``.abi3.so`` for the stable ABI, else
    this interpreter's (``.cpython-311-x86_64-linux-gnu.so``)."""
    if stable_abi(version) is not None:
        return ABI3_SUFFIX
    return sysconfig.get_config_var("EXT_SUFFIX") or importlib.machinery.EXTENSION_SUFFIXES[0]


def compiler() -> tuple[str, ...]:
    return tuple(shlex.split(os.environ.get("CXX", "g++"))) or ("g++",)


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """How one target compiles and links: everything but the sources.

    ``cflags`` go to every unit, then ``-I`` for ``include_dirs`` and ``-isystem``
    for ``system_include_dirs`` (in that order); ``ldflags`` come before the
    objects at link time and ``libs`` after them. ``pch_includes`` are the
    headers of the shared precompiled header (ksbind/backend/pch.py) used by the
    generated units, ``pch_companion`` the object built beside it; ``key_parts``
    are versions the objects depend on beyond the compiler's and Python's (torch's).
    """

    name: str
    cxx: tuple[str, ...]
    cflags: tuple[str, ...]
    include_dirs: tuple[Path, ...]
    system_include_dirs: tuple[Path, ...] = ()
    ldflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    pch_includes: tuple[str, ...] = ()
    key_parts: tuple[tuple[str, str], ...] = ()
    two_phase_init: bool = False  # its pybind11's PYBIND11_MODULE names the module from the import
    #: (source, header) on the include path: an object built with the shared precompiled header and
    #: linked into the modules whose units then include the header (ksbind/backend/pch.py).
    pch_companion: tuple[str, str] | None = None


    @property
    def family(self) -> str:
        """"clang" or "gcc": how its precompiled headers are named and built."""
        return compiler_family(self.cxx)

    def include_flags(self) -> list[str]:
        return [f"-I{d}" for d in self.include_dirs] + [a for d in self.system_include_dirs
                                                         for a in ("-isystem", str(d))]

    def compile_args(self, extra: Sequence[str] = ()) -> list[str]:
        """Flags of one unit's compile, without the compiler, -c and -o."""
        return [*self.cflags, *extra, *self.include_flags()]


def pybind11_two_phase(include_dir: Path) -> bool:
    """Whether the pybind11 under this include folder initialises modules in two
    phases (PyModuleDef_Init: pybind11 >= 3), so a module compiled under one
    name can be imported under another."""
    try:
        text = (Path(include_dir) / "pybind11" / "detail" / "common.h").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "PyModuleDef_Init(" in text


def launcher() -> tuple[str, ...]:
    """A compiler launcher to put before the compiler: ccache when installed (or
    KSBIND_CCACHE names one; KSBIND_CCACHE=0: none). It never changes what is
    built, so it is not part of any key."""
    env = os.environ.get("KSBIND_CCACHE", "").strip()
    if env in ("0", "no", "false", "off"):
        return ()
    if env:
        return tuple(shlex.split(env))
    found = shutil.which("ccache")
    return (found,) if found else ()


#: The linkers ksbind picks, fastest first, when KSBIND_LINKER does not name one: each is
#: used when its ``ld.NAME`` is on PATH. GNU ld (the compilers' default) reads the whole
#: symbol table of every library it links against: for the torch target, libtorch_cpu's
#: (430 MB), about 0.4 s of each link; gold and lld read what the link needs (0.1 s).
FAST_LINKERS = ("lld", "gold")


def linker_flags() -> tuple[str, ...]:
    """``-fuse-ld=NAME`` for the linker links use: KSBIND_LINKER's (``default``, ``0`` or
    ``ld``: the compiler's own), else the first of FAST_LINKERS installed, else none. The
    linker never changes what a module does, so it is part of no key (as ccache)."""
    env = os.environ.get("KSBIND_LINKER", "").strip()
    if env in ("0", "no", "off", "default", "ld", "bfd"):
        return ()
    if env:
        return (f"-fuse-ld={env}",)
    for name in FAST_LINKERS:
        if shutil.which(f"ld.{name}"):
            return (f"-fuse-ld={name}",)
    return ()


#: Per process, by the compiler file's stat identity: each compiler command's identity.
_identities: dict[tuple[str, ...], tuple[tuple[float, int], str]] = {}
_identities_lock = threading.Lock()


def compiler_identity(cxx: Sequence[str]) -> str:
    """What names the compiler for a key: its resolved path and its --version
    text (run once per process and compiler, again when its file changed)."""
    cmd = tuple(cxx)
    path = shutil.which(cmd[0]) or cmd[0]
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
        stamp = (st.st_mtime, st.st_size)
    except OSError:
        real, stamp = path, (0.0, 0)
    with _identities_lock:
        known = _identities.get(cmd)
        if known is not None and known[0] == stamp:
            return known[1]
    try:
        proc = subprocess.run([*cmd, "--version"], capture_output=True, text=True, errors="replace",
                              stdin=subprocess.DEVNULL, timeout=60)
        version = proc.stdout.strip() or proc.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        version = f"unavailable: {e}"
    identity = f"{' '.join(cmd)}\0{real}\0{version}"
    with _identities_lock:
        _identities[cmd] = (stamp, identity)
    return identity


def compiler_family(cxx: Sequence[str]) -> str:
    """"clang" when the compiler says it is clang (its --version text), else "gcc":
    g++ and clang++ take the same flags ksbind gives, but name and check
    precompiled headers differently (ksbind/backend/pch.py)."""
    version = compiler_identity(cxx).split("\0", 2)[-1]
    return "clang" if "clang" in version.lower() else "gcc"


def ks_include_dirs(spec: ModuleSpec) -> tuple[Path, ...]:
    """The runtime's folder(s) (the bundled one for `runtime: bundled`), then ksbind's, then
    the target's own (an out-of-tree target's headers, Target.include_dirs); a debug build's
    knossos.h before them all (DEBUG_DIR)."""
    runtime = (RUNTIME_DIR,) if spec.runtime.bundled else tuple(spec.runtime.include_dirs)
    return tuple(dict.fromkeys([*((DEBUG_DIR,) if spec.debug else ()), *runtime, INCLUDE_DIR,
                                *get_target(spec.target).include_dirs]))


def hash_target_headers(h: Hasher, target: str) -> None:
    """Every header under the target's own include folders (Target.include_dirs), subfolders
    included: hash_include_path takes only the headers at the top of a folder (and ksbind/)."""
    for i, d in enumerate(get_target(target).include_dirs):
        h.add_tree_headers(d, f"target-include{i}")


def hash_include_path(h: Hasher, include_dirs: Sequence[Path]) -> None:
    """What #include can reach through these folders: the headers directly in
    each, those in its ksbind/ subfolder (ksbind's own), and its knossos.cpp
    (ksc's generated C++ ends with #include "knossos.cpp")."""
    for d in include_dirs:
        h.add_dir_headers(d)
        h.add_dir_headers(d / "ksbind", "ksbind")
        if (d / "knossos.cpp").is_file():
            h.add_file(d / "knossos.cpp", "include:knossos.cpp")


_ERROR_LINE = re.compile(r"(?:^|\s)(?:fatal )?error[:\s]", re.IGNORECASE)


def first_error(output: str) -> str:
    """The compiler's first error line, or its first line when none says 'error'."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in lines:
        # A link's own error line comes last ("collect2: error: ld returned 1"); what it could not
        # resolve is the line to show (ksbind/backend/missing.py reads the symbol off it).
        if _ERROR_LINE.search(ln) or "undefined reference to" in ln:
            return ln
    return lines[0] if lines else ""



__all__ = ["INCLUDE_DIR", "RUNTIME_DIR", "KS_FLAGS", "BASE_FLAGS", "FAST_MATH_FLAGS", "compiler", "ks_include_dirs",
           "hash_target_headers", "hash_include_path", "first_error", "Toolchain", "launcher", "linker_flags",
           "FAST_LINKERS", "compiler_identity", "compiler_family",
           "pybind11_two_phase", "ABI3_SUFFIX", "stable_abi", "limited_api_flags", "module_suffix"]
