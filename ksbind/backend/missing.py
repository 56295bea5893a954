"""Turning the dynamic loader's "undefined symbol: _ZN2ks9my_log$afE..." (or the linker's
"undefined reference to" it) into the ks function a user must define.

A ks function the module needs (bound, or called by a bound one) whose C++ no
compiled file defines only shows up when the module is imported. Its mangled
C++ name says nothing to a ks user; the module's declarations say which ks
function that is and where it was declared (usually an ``edef``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from ksbind.errors import BuildError, KsbindError, Location
from ksbind.lang.model import FunctionDecl

#: The dynamic loader's "undefined symbol: _ZN2ks...", or the linker's "undefined reference to
#: `_ZN2ks...'" (a library linked with --no-undefined --no-demangle: the torch build's).
_UNDEFINED = re.compile(r"undefined (?:symbol: |reference to [`'])(_ZN2ks(\d+)([^\s']+))")


def missing_ks_symbol(message: str) -> str | None:
    """The ks:: name (e.g. ``my_log$af``) of an undefined symbol in a loader message, or None."""
    m = _UNDEFINED.search(message)
    if m is None:
        return None
    length = int(m.group(2))
    return m.group(3)[:length]


def explain_missing(error: KsbindError, decls: Sequence[FunctionDecl]) -> KsbindError:
    """A BuildError naming the ks function behind an undefined symbol; other errors unchanged."""
    symbol = missing_ks_symbol(error.message)
    if symbol is None:
        return error
    decl = next((d for d in decls if d.cpp_symbol == symbol), None)
    if decl is None:
        return BuildError(f"the module uses the C++ function ks::{symbol}, which no compiled file defines: "
                          "add the file that defines it under 'cpp:' (or the runtime's sources)", error.location)
    how = "an edef" if decl.origin == "edef" else f"a {decl.origin}"
    where: Location | None = decl.location or error.location
    return BuildError(f"ks function {decl.name} ({how}) has no C++ definition: a file under 'cpp:' must define "
                      f"ks::{symbol}({', '.join(['ks::allocator *', *decl.cpp_param_types])})", where)


__all__ = ["missing_ks_symbol", "explain_missing"]
