"""What the torch and jax targets' support-function wiring shares: the rows of ksbind/support.py's
table a module has, and the C++ macros and Python wrappers written from them.

A torch-target module's support functions are ops of its library, and a jax-target module's
are C functions of its library that ctypes calls; each has a Python wrapper in the target's
runtime. Both are generated from the table (its public functions and the ones a module calls at
import, INTERNAL_SUPPORT_FUNCTIONS) over ksbind::support's C++
(ksbind/include/ksbind/support_functions.h), so a new support function is a row of the table and
a C++ function, and nothing is written twice by hand. Each target writes its own files in its
package (ksbind/targets/torch/support_wiring.py, ksbind/targets/jax/support_wiring.py: its
record's ``written_ahead``): they are part of ksbind's package (the torch target compiles its
support ops once per machine, and the runtimes are copied into wheels), so they are written
ahead, by scripts/generate_settings.py; tests/test_stubs.py fails when one differs.
"""
from __future__ import annotations

from ksbind.support import INTERNAL_SUPPORT_FUNCTIONS, SUPPORT_FUNCTIONS, SupportFunction


def why(writer: str) -> str:
    """The first line of each generated file: where it comes from (``writer``: the module that
    writes it, relative to ksbind/)."""
    return f"Generated from ksbind/support.py by scripts/generate_settings.py ({writer}): do not edit."


def support_rows(kernels: bool) -> list[tuple[str, SupportFunction]]:
    """(the name in Python, the row) of a module's support functions: the public ones, then
    the internal ones as ``_NAME``; with ``kernels`` False, none that only modules with
    per-CPU kernels have."""
    rows = [(f.name, f) for f in SUPPORT_FUNCTIONS] + [("_" + f.name, f) for f in INTERNAL_SUPPORT_FUNCTIONS]
    return [(name, f) for name, f in rows if kernels or not f.kernels_only]


def cpp_function(f: SupportFunction) -> str:
    return f"ksbind::support::{f.name}"


def result_type(f: SupportFunction) -> str:
    """What crosses for the result: its Python type, or int for a wired one (a CPU capability
    crosses as its index, a set of them as a bitmask: the row's ``wire``)."""
    return "int" if f.wire else f.returns


# ------------------------------------------------------------------ C++


def macro(name: str, lines: list[str], statements: bool) -> str:
    """``#define NAME`` of ``lines``, one a line; ``statements``: each a statement the macro
    separates with ``;`` (the last one's the caller writes)."""
    if statements:
        lines = [line + ";" for line in lines[:-1]] + lines[-1:]
    width = max(len(line) for line in lines) + 5
    body = " \\\n".join(f"    {line}".ljust(width) for line in lines)
    return f"#define {name} \\\n{body.rstrip()}\n"


# ------------------------------------------------------------------ Python


def _check(fname: str, p_name: str, p_type: str) -> list[str]:
    """The argument check a wrapper makes before the call (the op or C function would make a
    less clear one): an int that is not a bool, a str."""
    if p_type == "int":
        return [f"if isinstance({p_name}, bool) or not isinstance({p_name}, int):",
                f"    raise TypeError(f\"{fname}(): {p_name} must be an int, \"",
                f"                    f\"got {{type({p_name}).__name__}} ({{{p_name}!r}})\")"]
    if p_type == "str":
        return [f"if not isinstance({p_name}, str):",
                f"    raise TypeError(f\"{fname}(): {p_name} must be a str, got {{type({p_name}).__name__}}\")"]
    return []


def _returned(f: SupportFunction, value: str) -> str:
    if f.wire == "capability":
        return f"return CAPABILITIES[{value}]"
    if f.wire == "capability_set":
        return f"return [c for i, c in enumerate(CAPABILITIES) if {value} >> i & 1]"
    return {"None": "", "int": f"return int({value})", "str": f"return str({value})"}[f.returns]


def wrapper_lines(name: str, f: SupportFunction, call_lines: list[str], value: str) -> list[str]:
    """A support function's Python wrapper: its signature and docstring, its arguments' checks,
    ``call_lines`` (the target's call), and its result from ``value`` (the call's)."""
    params = ", ".join(f"{p.name}: {p.py_type}" for p in f.params)
    lines = [f"def {name}({params}) -> {f.returns}:", f'    """{f.doc("thread")}"""']
    for p in f.params:
        lines += [f"    {line}" for line in _check(name.lstrip("_"), p.name, p.py_type)]
    lines += [f"    {line}" for line in call_lines]
    returned = _returned(f, value)
    if returned:
        lines.append(f"    {returned}")
    return lines


def indented(lines: list[str], by: str = "    ") -> str:
    return "\n".join(by + line if line else "" for line in lines)


def table_display(rows: list[tuple[str, SupportFunction]]) -> str:
    """The functions by name, a dict display of one entry a line."""
    return "{\n" + "".join(f'        "{name}": {name},\n' for name, _ in rows) + "    }"


__all__ = ["why", "support_rows", "cpp_function", "result_type", "macro", "wrapper_lines", "indented",
           "table_display"]
