"""A torch-target module's support functions over its library's support ops.

Generated from ksbind/support.py by scripts/generate_settings.py (targets/torch/support_wiring.py): do not edit.
Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch
and nothing of ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .calls import _translated_call

#: The CPU capabilities by the index the library's ops use (ksbind/cpu_capability.h).
CAPABILITIES = ("default", "avx2", "avx512")


def support_functions(ops: Any) -> dict[str, Callable[..., Any]]:
    """The module's support functions by name (those it calls at import as ``_NAME``), over
    ``ops``, its library's ops (``torch.ops.LIBRARY``)."""

    def reset_allocator() -> None:
        """Reset this thread's arena (calls reset it themselves when they end; refused inside a call)."""
        _translated_call(ops._ksbind_reset_allocator, (), "reset_allocator")

    def allocator_top() -> int:
        """Bytes of this thread's arena in use (0 between calls)."""
        r = _translated_call(ops._ksbind_allocator_top, (), "allocator_top")
        return int(r)

    def allocator_peak() -> int:
        """The most bytes this thread's arena has held since it was made."""
        r = _translated_call(ops._ksbind_allocator_peak, (), "allocator_peak")
        return int(r)

    def logging(on: bool) -> None:
        """Print each call to stderr when on."""
        _translated_call(ops._ksbind_logging, (bool(on),), "logging")

    def arena_bytes() -> int:
        """The size in bytes of each thread's arena."""
        r = _translated_call(ops._ksbind_arena_bytes, (), "arena_bytes")
        return int(r)

    def set_arena_bytes(bytes: int) -> None:
        """Make each thread's arena this size (this thread's now, the others' at their next call)."""
        if isinstance(bytes, bool) or not isinstance(bytes, int):
            raise TypeError(f"set_arena_bytes(): bytes must be an int, "
                            f"got {type(bytes).__name__} ({bytes!r})")
        _translated_call(ops._ksbind_set_arena_bytes, (bytes,), "set_arena_bytes")

    def cpu_capability() -> str:
        """The CPU capability the elementwise and vmap kernels run with: default, avx2 or avx512."""
        r = _translated_call(ops._ksbind_cpu_capability, (), "cpu_capability")
        return CAPABILITIES[r]

    def cpu_capabilities() -> list[str]:
        """The CPU capabilities compiled into this module that this CPU runs, lowest first."""
        r = _translated_call(ops._ksbind_cpu_capabilities, (), "cpu_capabilities")
        return [c for i, c in enumerate(CAPABILITIES) if r >> i & 1]

    def _configure(arena_bytes: int, logging: bool) -> None:
        """At import: the config's arena size (KSBIND_ARENA_BYTES wins) and logging."""
        if isinstance(arena_bytes, bool) or not isinstance(arena_bytes, int):
            raise TypeError(f"configure(): arena_bytes must be an int, "
                            f"got {type(arena_bytes).__name__} ({arena_bytes!r})")
        _translated_call(ops._ksbind_configure, (arena_bytes, bool(logging)), "configure")

    def _configure_cpu() -> str:
        """At import: the CPU capability KSBIND_CPU_CAPABILITY asks for; what a fallback says ("": none)."""
        r = _translated_call(ops._ksbind_configure_cpu, (), "configure_cpu")
        return str(r)

    def _set_cpu_capability(name: str) -> str:
        """Run the kernels with this CPU capability (a lower one where this CPU lacks it); the one used."""
        if not isinstance(name, str):
            raise TypeError(f"set_cpu_capability(): name must be a str, got {type(name).__name__}")
        r = _translated_call(ops._ksbind_set_cpu_capability, (name,), "set_cpu_capability")
        return CAPABILITIES[r]

    return {
        "reset_allocator": reset_allocator,
        "allocator_top": allocator_top,
        "allocator_peak": allocator_peak,
        "logging": logging,
        "arena_bytes": arena_bytes,
        "set_arena_bytes": set_arena_bytes,
        "cpu_capability": cpu_capability,
        "cpu_capabilities": cpu_capabilities,
        "_configure": _configure,
        "_configure_cpu": _configure_cpu,
        "_set_cpu_capability": _set_cpu_capability,
    }


__all__ = ["CAPABILITIES", "support_functions"]
