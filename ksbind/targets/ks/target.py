"""The ``ks`` target (the seed's form): ks values in and out.

Entry points take and return ksc's own C++ types; pybind11 converts scalars,
strings and tuples, and tensors are pybind classes ``Tensor_N_Elem`` declared
per ``tensor_types`` (plus every tensor type a binding uses).
"""
from __future__ import annotations

from pathlib import Path

from ksbind.codegen.targets.common import SCALAR_PY, Crossing, CrossingRole
from ksbind.codegen.targets.record import Target
from ksbind.lang.types import KsType, ScalarType, TensorType, TupleType
from ksbind.spec import TargetName

NAME: TargetName = "ks"
# "{module}" in a file name is replaced by the module's name.
FILES = {"entry_points.h": "entry_points.h.j2", "entry_points.cpp": "entry_points.cpp.j2",
         "module.cpp": "module.cpp.j2", "{module}.pyi": "stub.pyi.j2"}
SINGLE_FILE = {"module.cpp": "single_file.cpp.j2", "{module}.pyi": "stub.pyi.j2"}


def tensor_class_name(t: TensorType) -> str:
    return f"Tensor_{t.rank}_{t.element}"


def py_type(t: KsType, param: bool = False) -> str:
    """The stub annotation; a parameter's tensor also accepts a buffer or numpy array of its element
    type (converted implicitly; the stub defines _BufferLike)."""
    if isinstance(t, ScalarType):
        return SCALAR_PY[t.name]
    if isinstance(t, TensorType):
        if not isinstance(t.element, ScalarType):
            return "object"
        return f"{tensor_class_name(t)} | _BufferLike" if param else tensor_class_name(t)
    if isinstance(t, TupleType):
        return "tuple[" + (", ".join(py_type(e, param) for e in t.elements) or "()") + "]"
    return "object"


def crossing(t: KsType, role: CrossingRole) -> Crossing:
    return Crossing(entry_type=t.cpp, converter="", py_type=py_type(t, param=role == "param"))


#: The package's folder: its templates/ and include/ (C++ headers) go into the record.
HERE = Path(__file__).parent

TARGET = Target(
    name=NAME, files=FILES, single_file=SINGLE_FILE, crossing=crossing, build="pybind11",
    tensors="pybind11 classes Tensor_N_Elem", tensor_classes=True,
    # Results may view the module's arena: it is reset only by reset_allocator().
    arena_per_call=False,
    templates=HERE / "templates", include_dirs=(HERE / "include",),
)
