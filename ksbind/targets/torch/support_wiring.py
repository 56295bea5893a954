"""The torch target's support functions, written from ksbind/support.py's table: a torch-target
module's support functions are ops of its library, each with a Python wrapper in the runtime.

- ``include/ksbind/torch_support_registrations.h``: the library's schemas and kernels
  (KSBIND_STABLE_SUPPORT_SCHEMAS, KSBIND_STABLE_SUPPORT_IMPLS_HERE), which
  ksbind/torch_stable.h's registrations expand;
- ``runtime/support.py``: ``support_functions(ops)``.

A torch op's schema takes ``int``, ``bool`` and ``str`` and returns ``()``, ``int`` or ``str``.
The record's ``written_ahead`` (scripts/generate_settings.py writes them; ksbind/codegen/
support_wiring.py says why they are written ahead).
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
from ksbind.support import CPU_CAPABILITIES

HERE = Path(__file__).parent
HEADER = HERE / "include" / "ksbind" / "torch_support_registrations.h"
RUNTIME_SUPPORT = HERE / "runtime" / "support.py"
_WHY = why("targets/torch/support_wiring.py")
_SCHEMA = {"int": "int", "bool": "bool", "str": "str", "None": "()"}


def header_text() -> str:
    rows = support_rows(kernels=True)
    schemas = [f'm.def("_ksbind_{f.name}({", ".join(f"{_SCHEMA[p.py_type]} {p.name}" for p in f.params)})'
               f' -> {_SCHEMA[result_type(f)]}")' for _, f in rows]
    impls = [f'm.impl("_ksbind_{f.name}", TORCH_BOX(&{cpp_function(f)}))' for _, f in rows]
    return (f"// {_WHY}\n"
            "// The torch library's support ops (ksbind/support.py's table, over ksbind/support_functions.h),\n"
            "// registered by ksbind/torch_stable.h.\n"
            "#pragma once\n\n"
            "// The support ops, in the generated ops file's STABLE_TORCH_LIBRARY blocks.\n"
            + macro("KSBIND_STABLE_SUPPORT_SCHEMAS(m)", schemas, True) + "\n"
            "// Their kernels: registered here (KSBIND_STABLE_SUPPORT_IMPLS_HERE), or in a unit that includes\n"
            "// ksbind/torch_stable_support.h by a call into the shared support object.\n"
            + macro("KSBIND_STABLE_SUPPORT_IMPLS_HERE(m)", impls, True))


def runtime_support_text() -> str:
    functions: list[str] = []
    for name, f in support_rows(kernels=True):
        args = [f"bool({p.name})" if p.py_type == "bool" else p.name for p in f.params]
        call = f"_translated_call(ops._ksbind_{f.name}, ({', '.join(args)}{',' if len(args) == 1 else ''}), " \
               f'"{name.lstrip("_")}")'
        lines = [call] if f.returns == "None" else [f"r = {call}"]
        functions.append(indented(wrapper_lines(name, f, lines, "r")))
    table = table_display(support_rows(kernels=True))
    return (f'"""A torch-target module\'s support functions over its library\'s support ops.\n\n{_WHY}\n'
            "Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch\n"
            "and nothing of ksbind's but this package, so that a wheel can carry a copy.\n"
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


def written_ahead() -> dict[Path, str]:
    """Each generated file of the package and the text it should have."""
    return {HEADER: header_text(), RUNTIME_SUPPORT: runtime_support_text()}


__all__ = ["HEADER", "RUNTIME_SUPPORT", "header_text", "runtime_support_text", "written_ahead"]
