"""The ``python`` target: plain Python values in and out.

float, int, bool, str, tuples, and nested lists for tensors (copied in and
out). Results are copied out of the arena, which is reset after every call.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ksbind.codegen.targets.common import SCALAR_PY, Crossing, CrossingRole, EntryPoint, entry_points_for
from ksbind.codegen.targets.record import Target
from ksbind.lang.types import KsType, ScalarType, TensorType, TupleType
from ksbind.spec import Binding, ModuleOptions, TargetName

# The ks target's layout, with a module on Python's C API (ksbind/python_module.h) in place of pybind11's.
FILES = {"entry_points.h": "entry_points.h.j2", "entry_points.cpp": "entry_points.cpp.j2",
         "module.cpp": "python_module.cpp.j2", "{module}.pyi": "stub.pyi.j2"}
SINGLE_FILE = {"module.cpp": "python_single_file.cpp.j2", "{module}.pyi": "stub.pyi.j2"}

NAME: TargetName = "python"
__all__ = ["NAME", "TARGET", "FILES", "SINGLE_FILE", "LIMITED_API", "crossing", "py_type", "extra_context",
           "python_signature"]


def py_type(t: KsType) -> str:
    if isinstance(t, ScalarType):
        return SCALAR_PY[t.name]
    if isinstance(t, TensorType):
        inner = py_type(t.element)
        for _ in range(t.rank):
            inner = f"list[{inner}]"
        return inner
    if isinstance(t, TupleType):
        return "tuple[" + (", ".join(py_type(e) for e in t.elements) or "()") + "]"
    return "object"


# Results returned as C++ values and made into Python objects by the method (ksbind/python_module.h)
# after the arena guard is gone: no Python object is made while the guard holds the arena.
NATIVE_RESULTS = frozenset({"Float", "Integer", "Bool"})


def crossing(t: KsType, role: CrossingRole) -> Crossing:
    """Every ks type crosses as a Python object converted in C++ (ksbind/include/ksbind/python.h):
    ``from_py<T>`` checks and copies a parameter (a borrowed ``PyObject*``) into the
    arena, naming the argument in errors; ``to_py`` copies a result (or gradient)
    out as an owned ``ksbind::python::Object``, except a Float, Integer or Bool
    result, returned as its C++ value (see NATIVE_RESULTS)."""
    if role == "param":
        return Crossing("PyObject*", f"ksbind::python::from_py<{t.cpp}>", py_type(t))
    if isinstance(t, ScalarType) and t.name in NATIVE_RESULTS:
        return Crossing(t.cpp, "", py_type(t))
    return Crossing("ksbind::python::Object", "ksbind::python::to_py", py_type(t))


def extra_context(bindings: Sequence[Binding], options: ModuleOptions) -> dict[str, Any]:
    """The entry points, each with ``extra["signature"]``, its Python signature line
    (``f(x: float) -> float``, as pybind11 writes it) for python_module.cpp.j2."""
    entries = entry_points_for(list(bindings), crossing)
    return {"entry_points": [replace(e, extra={**e.extra, "signature": python_signature(e)}) for e in entries]}


def python_signature(e: EntryPoint) -> str:
    """``name(x: float, y: list[float]) -> float``: the docstring's first line."""
    params = ", ".join(f"{p.py_name}: {p.py_type}" for p in e.params)
    return f"{e.name}({params}) -> {e.result.py_type}"


#: The module keeps to CPython 3.10's stable ABI (ksbind/python.h; docs/packaging.md): one build
#: imports on 3.10 and every later CPython. 3.10 is the oldest with METH_FASTCALL in it.
LIMITED_API = (3, 10)

#: The package's folder: its templates/ and include/ (C++ headers) go into the record.
HERE = Path(__file__).parent

TARGET = Target(
    name=NAME, files=FILES, single_file=SINGLE_FILE, crossing=crossing, extra_context=extra_context,
    build="python-capi", tensors="nested lists", entry_headers=("ksbind/python.h",),
    limited_api=LIMITED_API, templates=HERE / "templates", include_dirs=(HERE / "include",),
)
