"""The jax target's support functions, written from ksbind/support.py's table: a jax-target
module's support functions are C functions of its library that ctypes calls, each with a
Python wrapper in the runtime.

- ``include/ksbind/jax_support_registrations.h``: the C functions
  (KSBIND_JAX_ALLOCATOR_FUNCTIONS, expanded by the generated handlers' file);
- the marked section of ``runtime/ffi.py``: ``_support_functions(lib)``.

A C function takes ``int64_t``, ``int`` (a bool) and ``const char*``, returns its result
through a pointer and an error code (1 RuntimeError, 2 MemoryError, 3 ValueError:
ksbind/jax.h's support_call) with the message in a buffer. The record's ``written_ahead``
(scripts/generate_settings.py writes them; ksbind/codegen/support_wiring.py says why they
are written ahead).
"""
from __future__ import annotations

from pathlib import Path

from ksbind.codegen.support_wiring import (
    cpp_function,
    indented,
    macro,
    result_type,
    support_rows,
    table_display,
    why,
    wrapper_lines,
)

HERE = Path(__file__).parent
HEADER = HERE / "include" / "ksbind" / "jax_support_registrations.h"
RUNTIME = HERE / "runtime" / "ffi.py"
MARKERS = ("# ------------------------------------------------------------ BEGIN generated support functions\n",
           "# ------------------------------------------------------------ END generated support functions\n")
_WHY = why("targets/jax/support_wiring.py")
_C_PARAM = {"int": "int64_t", "bool": "int", "str": "const char*"}
_CTYPE = {"int": "ctypes.c_int64", "bool": "ctypes.c_int", "str": "ctypes.c_char_p"}


def header_text() -> str:
    exports: list[str] = []
    for _, f in support_rows(kernels=False):
        params = [f"{_C_PARAM[p.py_type]} {p.name}" for p in f.params]
        args = ", ".join(f"{p.name} != 0" if p.py_type == "bool" else p.name for p in f.params)
        result = result_type(f)
        if result == "None":
            body = f"{cpp_function(f)}({args});"
        elif result == "int":
            params.append("int64_t* out")
            body = f"*out = {cpp_function(f)}({args});"
        else:  # str: copied into the caller's buffer
            params += ["char* out", "size_t outlen"]
            body = f"ksbind::jax_target::copy_text(out, outlen, {cpp_function(f)}({args}));"
        exports += [f"KSBIND_EXPORT int ksbind_jax_{f.name}({', '.join([*params, 'char* err', 'size_t errlen'])}) {{",
                    f"    return ksbind::jax_target::support_call(err, errlen, [&] {{ {body} }});", "}"]
    return (f"// {_WHY}\n"
            "// The jax library's support functions (ksbind/support.py's table, over ksbind/support_functions.h),\n"
            "// as C functions for ctypes (ksbind/targets/jax/runtime/ffi.py); included by ksbind/jax.h.\n"
            "#pragma once\n\n"
            + macro("KSBIND_JAX_ALLOCATOR_FUNCTIONS", exports, False))


def section_text() -> str:
    setup: list[str] = []
    functions: list[str] = []
    for name, f in support_rows(kernels=False):
        c = f"lib.ksbind_jax_{f.name}"
        argtypes = [_CTYPE[p.py_type] for p in f.params]
        args = [f"int(bool({p.name}))" if p.py_type == "bool" else
                f"{p.name}.encode()" if p.py_type == "str" else p.name for p in f.params]
        result = result_type(f)
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
        functions.append(indented(wrapper_lines(name, f, lines, value)))
    table = table_display(support_rows(kernels=False))
    begin, end = MARKERS
    return (begin +
            f"# {_WHY}\n\n\n"
            "def _support_functions(lib: ctypes.CDLL) -> dict[str, Callable[..., Any]]:\n"
            '    """The module\'s support functions by name (those it calls at import as ``_NAME``), over\n'
            '    the library\'s C functions."""\n'
            + indented(setup) + "\n\n"
            + "\n\n".join(functions) + "\n\n"
            f"    return {table}\n\n\n" + end)


def with_section(text: str) -> str:
    """runtime/ffi.py's text with its marked section written anew."""
    begin, end = MARKERS
    start, stop = text.index(begin), text.index(end) + len(end)
    return text[:start] + section_text() + text[stop:]


def written_ahead() -> dict[Path, str]:
    """Each generated file of the package and the text it should have."""
    return {HEADER: header_text(), RUNTIME: with_section(RUNTIME.read_text(encoding="utf-8"))}


__all__ = ["HEADER", "RUNTIME", "MARKERS", "header_text", "section_text", "with_section", "written_ahead"]
