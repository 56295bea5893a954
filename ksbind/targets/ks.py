"""The ``ks`` target (the seed's form): ks values in and out.

Entry points take and return ksc's own C++ types; pybind11 converts scalars,
strings and tuples, and tensors are pybind classes ``Tensor_N_Elem`` declared
per ``tensor_types`` (plus every tensor type a binding uses).
"""
from __future__ import annotations

from ..types import KsType, ScalarType, TensorType, TupleType
from .common import Crossing

NAME = "ks"
FILES = {"entry_points.h": "entry_points.h.j2", "entry_points.cpp": "entry_points.cpp.j2",
         "module.cpp": "module.cpp.j2"}
SINGLE_FILE = {"module.cpp": "single_file.cpp.j2"}
SCALAR_PY = {"Float": "float", "Integer": "int", "Bool": "bool", "String": "str"}


def tensor_class_name(t: TensorType) -> str:
    return f"Tensor_{t.rank}_{t.element}"


def py_type(t: KsType) -> str:
    if isinstance(t, ScalarType):
        return SCALAR_PY[t.name]
    if isinstance(t, TensorType):
        return tensor_class_name(t) if isinstance(t.element, ScalarType) else "object"
    if isinstance(t, TupleType):
        return "tuple[" + (", ".join(py_type(e) for e in t.elements) or "()") + "]"
    return "object"


def crossing(t: KsType, role: str) -> Crossing:
    return Crossing(entry_type=t.cpp, converter="", py_type=py_type(t))
