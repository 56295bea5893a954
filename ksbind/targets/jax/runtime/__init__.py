"""What a generated jax-target wrapper (``NAME.py``) runs: it loads the module's handler library
with ctypes, registers each handler with ``jax.ffi`` and puts one JAX function per binding (and
per vjp) in the wrapper's namespace, with the allocator functions every module has.

The package, by concern: ``contract`` (the records a wrapper's ``BINDINGS`` table holds) and
``ffi`` (everything else: loading, registering, each binding's function; docs/jax.md).
It imports jax, numpy and the standard library, nothing of ksbind's, so a module built here runs
wherever this package and a jax whose FFI API is at least the one it was built against are
importable (docs/jax.md). A wheel ships a copy of the package beside each jax-target module
(``NAME_ksbind_jax_runtime/``, ksbind/standalone.py), which the wrapper imports instead of
ksbind's. This ``__init__`` imports only ``contract`` (typing alone) and ``ffi`` on first use
(PEP 562), so codegen imports the records it writes without jax.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The records a wrapper's BINDINGS table is written as (``_runtime.JaxBindingRecord(...)``).
from .contract import JaxBindingRecord, JaxParamRecord, Tree

if TYPE_CHECKING:
    from .ffi import VMAP_METHODS, Binding, install, leaves_of, library_path, unflatten


def __getattr__(name: str) -> Any:
    """Every other name is ``ffi``'s (imported, with jax, on first use)."""
    if name.startswith("__"):  # a tool probing the module (__wrapped__, __path__...): not jax's
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(".ffi", __name__), name)
    globals()[name] = value
    return value


__all__ = ["Tree", "JaxParamRecord", "JaxBindingRecord", "install", "library_path", "Binding", "leaves_of",
           "unflatten", "VMAP_METHODS"]
