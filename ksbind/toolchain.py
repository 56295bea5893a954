"""What every backend compiles with: ksbind's include folders, the runtime's, the
flags every target shares, the compiler, the include path's part of a cache key,
and reading a compiler's first error. Shared by build_native (ks/python targets)
and build_torch, so neither imports the other.
"""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Sequence

from . import buildcache
from .config import ModuleSpec

#: ksbind's own C++ headers are in INCLUDE_DIR/ksbind/ and included as
#: <ksbind/...>: no runtime folder holds a ksbind/ folder, so a runtime can
#: neither shadow them nor be shadowed by them.
INCLUDE_DIR = Path(__file__).parent / "include"
#: The bundled minimal runtime (knossos.h): on the include path only for `runtime: bundled`.
RUNTIME_DIR = Path(__file__).parent / "runtime"
#: ksc's runtime has its allocator only with KS_ALLOCATOR defined. Its knossos.h
#: defines it empty (unless KS_CUDA): the same spelling here, so no redefinition warning.
KS_FLAGS = ("-DKS_ALLOCATOR=",)
BASE_FLAGS = ("-O2", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-g0", *KS_FLAGS)


def compiler() -> tuple[str, ...]:
    return tuple(shlex.split(os.environ.get("CXX", "g++"))) or ("g++",)


def ks_include_dirs(spec: ModuleSpec) -> tuple[Path, ...]:
    """The runtime's folder(s) (the bundled one for `runtime: bundled`), then ksbind's."""
    runtime = (RUNTIME_DIR,) if spec.runtime.bundled else tuple(spec.runtime.include_dirs)
    return tuple(dict.fromkeys([*runtime, INCLUDE_DIR]))


def hash_include_path(h: buildcache.Hasher, include_dirs: Sequence[Path]) -> None:
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
        if _ERROR_LINE.search(ln):
            return ln
    return lines[0] if lines else ""



__all__ = ["INCLUDE_DIR", "RUNTIME_DIR", "KS_FLAGS", "BASE_FLAGS", "compiler", "ks_include_dirs",
           "hash_include_path", "first_error"]
