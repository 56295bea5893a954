"""The support functions a generated module has besides its bindings: its arena, its
logging and (modules with per-CPU kernels) the CPU capability they run with.

Declared once, here: each function's name, Python signature, C++ function and
one-line doc. From this table come the modules' C++ registration (module.cpp.j2,
python_module.cpp.j2), their .pyi stubs (ksbind/codegen/context.py), the names a
binding may not take (spec.RESERVED_NAMES) and docs/targets.md's table; and, with
the functions a module calls at import (INTERNAL_SUPPORT_FUNCTIONS), the torch and
jax targets' registrations and Python wrappers (each target's support_wiring.py, on
ksbind/codegen/support_wiring.py: the headers ksbind/torch_support_registrations.h and
ksbind/jax_support_registrations.h in their packages, ksbind/targets/torch/runtime/support.py
and a section of ksbind/targets/jax/runtime/ffi.py). scripts/generate_settings.py writes the
generated files; tests/test_stubs.py fails when one differs.

What a function does depends on the module's arena (the target record's
``arena_per_call``): one arena per thread, made on its first call and reset after
every call (ksbind/call_arena.h), or one arena per module, which results view until
``reset_allocator()`` (ksbind/entry_points.h). Each row says both.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Which arena a module's calls use: one per thread (``thread``) or one per module (``module``).
ArenaKind = Literal["thread", "module"]

#: How a result crosses from a torch op or a jax C function where its Python type cannot:
#: ``capability``, an index into CPU_CAPABILITIES; ``capability_set``, a bitmask of them.
Wire = Literal["", "capability", "capability_set"]

#: The CPU capabilities by the index the C++ uses (ksbind/cpu_capability.h's capability_names).
CPU_CAPABILITIES = ("default", "avx2", "avx512")


@dataclass(frozen=True)
class SupportParam:
    name: str
    py_type: str


@dataclass(frozen=True)
class SupportFunction:
    """One support function: its Python signature, and per arena kind its C++ function and doc."""

    name: str
    params: tuple[SupportParam, ...]
    returns: str                 # the Python annotation of its result
    thread_doc: str              # what it does on a module with per-thread arenas
    module_doc: str              # ... with one arena per module
    thread_cpp: str = ""         # the C++ function implementing it (per-thread arenas)
    module_cpp: str = ""         # ... (one arena per module)
    kernels_only: bool = False   # only modules with per-CPU kernels have it (the target record's cpu_kernels)
    wire: Wire = ""              # how its result crosses a torch op or jax C function, where not as its type

    @property
    def signature(self) -> str:
        """``name(p: T) -> R``, as pybind11 writes it (the docstring's first line)."""
        return f"{self.name}({', '.join(f'{p.name}: {p.py_type}' for p in self.params)}) -> {self.returns}"

    def doc(self, arena: ArenaKind) -> str:
        return self.thread_doc if arena == "thread" else self.module_doc

    def cpp(self, arena: ArenaKind) -> str:
        return self.thread_cpp if arena == "thread" else self.module_cpp


def _same(doc: str) -> tuple[str, str]:
    return doc, doc


SUPPORT_FUNCTIONS: tuple[SupportFunction, ...] = (
    SupportFunction(
        "reset_allocator", (), "None",
        "Reset this thread's arena (calls reset it themselves when they end; refused inside a call).",
        "Free everything in the module's arena (results that view it become invalid).",
        "ksbind::arenas::reset_allocator", "ks::entry_points::reset_allocator"),
    SupportFunction(
        "allocator_top", (), "int",
        "Bytes of this thread's arena in use (0 between calls).",
        "Bytes of the module's arena in use (what results since the last reset hold).",
        "ksbind::arenas::allocator_top", "ks::entry_points::allocator_top"),
    SupportFunction(
        "allocator_peak", (), "int",
        "The most bytes this thread's arena has held since it was made.",
        "The most bytes the module's arena has held since it was made.",
        "ksbind::arenas::allocator_peak", "ks::entry_points::allocator_peak"),
    SupportFunction(
        "logging", (SupportParam("on", "bool"),), "None",
        *_same("Print each call to stderr when on."),
        "ks::entry_points::logging", "ks::entry_points::logging"),
    SupportFunction(
        "arena_bytes", (), "int",
        "The size in bytes of each thread's arena.",
        "The size in bytes of the module's arena.",
        "ksbind::arenas::arena_bytes", "ks::entry_points::arena_bytes"),
    SupportFunction(
        "set_arena_bytes", (SupportParam("bytes", "int"),), "None",
        "Make each thread's arena this size (this thread's now, the others' at their next call).",
        "Reset the module's arena to this size (a new arena if the size changes; results viewing the old one "
        "stay readable).",
        "ksbind::arenas::set_arena_bytes", "ks::entry_points::set_arena_bytes"),
    SupportFunction(
        "cpu_capability", (), "str",
        *_same("The CPU capability the elementwise and vmap kernels run with: default, avx2 or avx512."),
        *_same("ksbind::cpu::selected_name"), kernels_only=True, wire="capability"),
    SupportFunction(
        "cpu_capabilities", (), "list[str]",
        *_same("The CPU capabilities compiled into this module that this CPU runs, lowest first."),
        *_same("ksbind::cpu::usable_names"), kernels_only=True, wire="capability_set"),
)

#: What the torch and jax targets' modules call at import, or tests call (``_NAME`` in the
#: module): registered and wrapped as the table's are, on those targets only, ksbind::support's C++
#: (ksbind/include/ksbind/support_functions.h). Not in the stubs, docs or reserved names.
INTERNAL_SUPPORT_FUNCTIONS: tuple[SupportFunction, ...] = (
    SupportFunction(
        "configure", (SupportParam("arena_bytes", "int"), SupportParam("logging", "bool")), "None",
        *_same("At import: the config's arena size (KSBIND_ARENA_BYTES wins) and logging."),
        *_same("ksbind::support::configure")),
    SupportFunction(
        "configure_cpu", (), "str",
        *_same("At import: the CPU capability KSBIND_CPU_CAPABILITY asks for; what a fallback says (\"\": none)."),
        *_same("ksbind::support::configure_cpu"), kernels_only=True),
    SupportFunction(
        "set_cpu_capability", (SupportParam("name", "str"),), "str",
        *_same("Run the kernels with this CPU capability (a lower one where this CPU lacks it); the one used."),
        *_same("ksbind::support::set_cpu_capability"), kernels_only=True, wire="capability"),
)

#: Names a generated module defines itself: a binding may not take them, on any target. The
#: CPU-capability functions only exist on targets with per-CPU kernels (torch), but a binding's
#: name must not depend on its target: a config moves between targets.
RESERVED_NAMES = frozenset(f.name for f in SUPPORT_FUNCTIONS)


__all__ = ["ArenaKind", "Wire", "CPU_CAPABILITIES", "SupportParam", "SupportFunction", "SUPPORT_FUNCTIONS",
           "INTERNAL_SUPPORT_FUNCTIONS", "RESERVED_NAMES"]
