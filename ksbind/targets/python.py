"""The ``python`` target: plain Python values in and out.

float, int, bool, str, tuples, and nested lists for tensors (copied in and
out). Results are copied out of the arena, which is reset after every call.
"""
from __future__ import annotations

from ..types import KsType, ScalarType, TensorType, TupleType
from .common import Crossing
from .ks import FILES, SINGLE_FILE, SCALAR_PY  # same file layout as the ks target

NAME = "python"
__all__ = ["NAME", "FILES", "SINGLE_FILE", "crossing", "py_type"]


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


def crossing(t: KsType, role: str) -> Crossing:
    """Every ks type crosses as a Python object converted in C++ (ksbind/include/ksbind/python.h):
    ``from_py<T>`` checks and copies a parameter into the arena, naming the
    argument in errors; ``to_py`` copies a result (or gradient) out."""
    if role == "param":
        return Crossing("pybind11::handle", f"ksbind::python::from_py<{t.cpp}>", py_type(t))
    return Crossing("pybind11::object", "ksbind::python::to_py", py_type(t))
