"""The ``torch`` target: torch.Tensor in and out.

Tensor arguments are viewed, not copied, when CPU, contiguous and of the
matching dtype; tensor results are copied out of the arena once. Other ks
values cross as Python scalars and tuples.
"""
from __future__ import annotations

from ..types import KsType, ScalarType, TensorType, TupleType
from .common import Crossing
from .ks import SCALAR_PY

NAME = "torch"
FILES = {"entry_points.h": "entry_points.h.j2", "entry_points.cpp": "entry_points.cpp.j2",
         "module.cpp": "module.cpp.j2"}
SINGLE_FILE = {"module.cpp": "single_file.cpp.j2"}
FILES["{module}.pyi"] = SINGLE_FILE["{module}.pyi"] = "stub.pyi.j2"  # the typed stub, named after the module


def py_type(t: KsType) -> str:
    if isinstance(t, ScalarType):
        return SCALAR_PY[t.name]
    if isinstance(t, TensorType):
        return "torch.Tensor"
    if isinstance(t, TupleType):
        return "tuple[" + (", ".join(py_type(e) for e in t.elements) or "()") + "]"
    return "object"


def crossing(t: KsType, role: str) -> Crossing:
    if isinstance(t, TensorType) and isinstance(t.element, ScalarType):
        if role == "param":
            return Crossing("torch::Tensor", f"ksbind::torch_target::from_torch<{t.cpp}>", "torch.Tensor")
        return Crossing("torch::Tensor", "ksbind::torch_target::to_torch", "torch.Tensor")
    if role == "param":
        return Crossing("pybind11::handle", f"ksbind::python::from_py<{t.cpp}>", py_type(t))
    return Crossing("pybind11::object", "ksbind::torch_target::to_py", py_type(t))
