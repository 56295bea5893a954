"""The torch and jax targets' support functions, written from ksbind/support.py's table.

A torch-target module's support functions are ops of its library, and a jax-target
module's are C functions of its library that ctypes calls; each has a Python wrapper in
the target's runtime. Both are generated from the table (its public functions and the
ones a module calls at import, INTERNAL_SUPPORT_FUNCTIONS) over ksbind::support's C++
(ksbind/include/ksbind/support_functions.h), so a new support function is a row of the
table and a C++ function, and nothing is written twice by hand:

- ``include/ksbind/support_registrations.h``: the torch library's schemas and kernels
  (KSBIND_STABLE_SUPPORT_SCHEMAS, KSBIND_STABLE_SUPPORT_IMPLS_HERE) and the jax library's
  C functions (KSBIND_JAX_ALLOCATOR_FUNCTIONS);
- ``torch_runtime/support.py``: ``support_functions(ops)``;
- the marked section of ``jax_runtime.py``: ``_support_functions(lib)``.

These files are part of ksbind's package (the torch target compiles its support ops once
per machine, and the runtimes are copied into wheels), so they are written ahead, by
scripts/generate_settings.py; tests/test_stubs.py fails when one differs from what this
module writes.

How values cross: a torch op's schema takes ``int``, ``bool`` and ``str`` and returns
``()``, ``int`` or ``str``; a jax C function takes ``int64_t``, ``int`` (a bool) and
``const char*``, returns its result through a pointer and an error code (1 RuntimeError,
2 MemoryError, 3 ValueError: ksbind/jax.h's support_call) with the message in a buffer.
A CPU capability crosses as its index, a set of them as a bitmask (the row's ``wire``).
"""
from __future__ import annotations

from pathlib import Path

from ksbind.inputs import PACKAGE_DIR
from ksbind.support import CPU_CAPABILITIES, INTERNAL_SUPPORT_FUNCTIONS, SUPPORT_FUNCTIONS, SupportFunction

HEADER = "include/ksbind/support_registrations.h"
TORCH_MODULE = "torch_runtime/support.py"
JAX_RUNTIME = "jax_runtime.py"
JAX_MARKERS = ("# ------------------------------------------------------------ BEGIN generated support functions\n",
               "# ------------------------------------------------------------ END generated support functions\n")
_WHY = "Generated from ksbind/support.py by scripts/generate_settings.py (codegen/support_wiring.py): do not edit."

_TORCH_SCHEMA = {"int": "int", "bool": "bool", "str": "str", "None": "()"}
_JAX_C_PARAM = {"int": "int64_t", "bool": "int", "str": "const char*"}
_JAX_CTYPE = {"int": "ctypes.c_int64", "bool": "ctypes.c_int", "str": "ctypes.c_char_p"}


def _rows(kernels: bool) -> list[tuple[str, SupportFunction]]:
    """(the name in Python, the row) of a module's support functions: the public ones, then
    the internal ones as ``_NAME``; with ``kernels`` False, none that only modules with
    per-CPU kernels have."""
    rows = [(f.name, f) for f in SUPPORT_FUNCTIONS] + [("_" + f.name, f) for f in INTERNAL_SUPPORT_FUNCTIONS]
    return [(name, f) for name, f in rows if kernels or not f.kernels_only]


def _cpp(f: SupportFunction) -> str:
    return f"ksbind::support::{f.name}"


def _result_type(f: SupportFunction) -> str:
    """What crosses for the result: its Python type, or int for a wired one."""
    return "int" if f.wire else f.returns


# ------------------------------------------------------------------ C++


def _macro(name: str, lines: list[str], statements: bool) -> str:
    """``#define NAME`` of ``lines``, one a line; ``statements``: each a statement the macro
    separates with ``;`` (the last one's the caller writes)."""
    if statements:
        lines = [line + ";" for line in lines[:-1]] + lines[-1:]
    width = max(len(line) for line in lines) + 5
    body = " \\\n".join(f"    {line}".ljust(width) for line in lines)
    return f"#define {name} \\\n{body.rstrip()}\n"


def header_text() -> str:
    torch = _rows(kernels=True)
    jax = _rows(kernels=False)
    schemas = [f'm.def("_ksbind_{f.name}({", ".join(f"{_TORCH_SCHEMA[p.py_type]} {p.name}" for p in f.params)})'
               f' -> {_TORCH_SCHEMA[_result_type(f)]}")' for _, f in torch]
    impls = [f'm.impl("_ksbind_{f.name}", TORCH_BOX(&{_cpp(f)}))' for _, f in torch]
    exports: list[str] = []
    for _, f in jax:
        params = [f"{_JAX_C_PARAM[p.py_type]} {p.name}" for p in f.params]
        args = ", ".join(f"{p.name} != 0" if p.py_type == "bool" else p.name for p in f.params)
        result = _result_type(f)
        if result == "None":
            body = f"{_cpp(f)}({args});"
        elif result == "int":
            params.append("int64_t* out")
            body = f"*out = {_cpp(f)}({args});"
        else:  # str: copied into the caller's buffer
            params += ["char* out", "size_t outlen"]
            body = f"ksbind::jax_target::copy_text(out, outlen, {_cpp(f)}({args}));"
        exports += [f"KSBIND_EXPORT int ksbind_jax_{f.name}({', '.join([*params, 'char* err', 'size_t errlen'])}) {{",
                    f"    return ksbind::jax_target::support_call(err, errlen, [&] {{ {body} }});", "}"]
    return (f"// {_WHY}\n"
            "// The support functions' registrations (ksbind/support.py's table, over\n"
            "// ksbind/support_functions.h): a torch library's ops (ksbind/torch_stable.h) and a jax\n"
            "// library's C functions (ksbind/jax.h).\n"
            "#pragma once\n\n"
            "// The torch library's support ops, in the generated ops file's STABLE_TORCH_LIBRARY blocks.\n"
            + _macro("KSBIND_STABLE_SUPPORT_SCHEMAS(m)", schemas, True) + "\n"
            "// Their kernels: registered here (KSBIND_STABLE_SUPPORT_IMPLS_HERE), or in a unit that includes\n"
            "// ksbind/torch_stable_support.h by a call into the shared support object.\n"
            + _macro("KSBIND_STABLE_SUPPORT_IMPLS_HERE(m)", impls, True) + "\n"
            "// The jax library's support functions, as C functions for ctypes (ksbind/jax_runtime.py).\n"
            + _macro("KSBIND_JAX_ALLOCATOR_FUNCTIONS", exports, False))


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


def _wrapper(name: str, f: SupportFunction, call_lines: list[str], value: str) -> list[str]:
    params = ", ".join(f"{p.name}: {p.py_type}" for p in f.params)
    lines = [f"def {name}({params}) -> {f.returns}:", f'    """{f.doc("thread")}"""']
    for p in f.params:
        lines += [f"    {line}" for line in _check(name.lstrip("_"), p.name, p.py_type)]
    lines += [f"    {line}" for line in call_lines]
    returned = _returned(f, value)
    if returned:
        lines.append(f"    {returned}")
    return lines


def _indent(lines: list[str], by: str = "    ") -> str:
    return "\n".join(by + line if line else "" for line in lines)


def _table(rows: list[tuple[str, SupportFunction]]) -> str:
    """The functions by name, a dict display of one entry a line."""
    return "{\n" + "".join(f'        "{name}": {name},\n' for name, _ in rows) + "    }"


def torch_module_text() -> str:
    functions: list[str] = []
    for name, f in _rows(kernels=True):
        args = [f"bool({p.name})" if p.py_type == "bool" else p.name for p in f.params]
        call = f"_translated_call(ops._ksbind_{f.name}, ({', '.join(args)}{',' if len(args) == 1 else ''}), " \
               f'"{name.lstrip("_")}")'
        lines = [call] if f.returns == "None" else [f"r = {call}"]
        functions.append(_indent(_wrapper(name, f, lines, "r")))
    table = _table(_rows(kernels=True))
    return (f'"""A torch-target module\'s support functions over its library\'s support ops.\n\n{_WHY}\n'
            "Part of ksbind/torch_runtime/ (its __init__ says what the package is); imports torch and nothing of\n"
            "ksbind's but this package, so that a wheel can carry a copy.\n"
            '"""\n'
            "from __future__ import annotations\n\n"
            "from collections.abc import Callable\n"
            "from typing import Any\n\n"
            "from .calls import _translated_call\n\n"
            "#: The CPU capabilities by the index the library's ops use (ksbind/cpu_capability.h).\n"
            f"CAPABILITIES = ({', '.join(f'{c!r}'.replace(chr(39), chr(34)) for c in CPU_CAPABILITIES)})\n\n\n"
            "def support_functions(ops: Any) -> dict[str, Callable[..., Any]]:\n"
            '    """The module\'s support functions by name (those it calls at import as ``_NAME``), over\n'
            '    ``ops``, its library\'s ops (``torch.ops.LIBRARY``)."""\n\n'
            + "\n\n".join(functions) + "\n\n"
            f"    return {table}\n\n\n"
            '__all__ = ["CAPABILITIES", "support_functions"]\n')


def jax_section_text() -> str:
    setup: list[str] = []
    functions: list[str] = []
    for name, f in _rows(kernels=False):
        c = f"lib.ksbind_jax_{f.name}"
        argtypes = [_JAX_CTYPE[p.py_type] for p in f.params]
        args = [f"int(bool({p.name}))" if p.py_type == "bool" else
                f"{p.name}.encode()" if p.py_type == "str" else p.name for p in f.params]
        result = _result_type(f)
        if result == "int":
            argtypes.append("ctypes.POINTER(ctypes.c_int64)")
            lines = ["out = ctypes.c_int64()"]
            args.append("ctypes.byref(out)")
            value = "out.value"
        elif result == "str":
            argtypes += ["ctypes.c_char_p", "ctypes.c_size_t"]
            lines = ["out = ctypes.create_string_buffer(_ERR_BYTES)"]
            args += ["out", "_ERR_BYTES"]
            value = 'out.value.decode("utf-8", "replace")'
        else:
            lines, value = [], ""
        setup.append(f"{c}.argtypes = [{', '.join([*argtypes, 'ctypes.c_char_p', 'ctypes.c_size_t'])}]")
        lines.append(f"_support_call({c}, ({', '.join(args)}{',' if len(args) == 1 else ''}))")
        functions.append(_indent(_wrapper(name, f, lines, value)))
    table = _table(_rows(kernels=False))
    begin, end = JAX_MARKERS
    return (begin +
            f"# {_WHY}\n\n\n"
            "def _support_functions(lib: ctypes.CDLL) -> dict[str, Callable[..., Any]]:\n"
            '    """The module\'s support functions by name (those it calls at import as ``_NAME``), over\n'
            '    the library\'s C functions."""\n'
            + _indent(setup) + "\n\n"
            + "\n\n".join(functions) + "\n\n"
            f"    return {table}\n\n\n" + end)


def with_jax_section(text: str) -> str:
    """jax_runtime.py's text with its marked section written anew."""
    begin, end = JAX_MARKERS
    start, stop = text.index(begin), text.index(end) + len(end)
    return text[:start] + jax_section_text() + text[stop:]


def generated_files() -> dict[Path, str]:
    """Each generated file of ksbind's package and the text it should have."""
    jax = PACKAGE_DIR / JAX_RUNTIME
    return {PACKAGE_DIR / HEADER: header_text(), PACKAGE_DIR / TORCH_MODULE: torch_module_text(),
            jax: with_jax_section(jax.read_text(encoding="utf-8"))}


__all__ = ["HEADER", "TORCH_MODULE", "JAX_RUNTIME", "JAX_MARKERS", "header_text", "torch_module_text",
           "jax_section_text", "with_jax_section", "generated_files"]
