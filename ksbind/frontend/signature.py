"""The ks types of a call's arguments: what a compiled function is compiled, and cached, for.

A tensor's rank and dtype (float32 is Float, int32 Integer, bool Bool), a
Python float, int or bool, a list of numbers (the python target's tensors).
A 0-dim tensor is a ks scalar, as everywhere on the torch target, so it keeps
its gradient. Nothing here imports torch or jax: arrays are recognised by
their ``shape`` and ``dtype``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ksbind.errors import KsbindError
from ksbind.lang.types import BOOL, FLOAT, INTEGER, KsType, ScalarType, TensorType

#: How a compiled function maps over its arguments (knossos.register, .elementwise, .vmap).
CompileMode = Literal["plain", "elementwise", "vmap"]
COMPILE_MODES: tuple[CompileMode, ...] = ("plain", "elementwise", "vmap")

#: dtype names (torch's str(dtype) less "torch.", numpy's and jax's dtype.name) with a ks element type.
_DTYPES: dict[str, KsType] = {"float32": FLOAT, "int32": INTEGER, "bool": BOOL}
#: dtypes a user is likely to pass, and what to do instead.
_DTYPE_ADVICE = {
    "float64": "ks's Float is 32-bit: pass x.float() (or .astype(float32))",
    "float16": "pass x.float()", "bfloat16": "pass x.float()",
    "int64": "ks's Integer is 32-bit: pass x.int() (or .astype(int32))",
}


class SignatureError(KsbindError):
    """An argument with no ks type (a dtype ks lacks, a ragged list, an object)."""

    kind = "signature error"


@dataclass(frozen=True)
class Signature:
    """The ks type of each parameter as the translation sees it (a vmap step's, for vmap)."""

    params: tuple[KsType, ...]
    mode: CompileMode

    def __str__(self) -> str:
        return "(" + ", ".join(str(p) for p in self.params) + ")"


def signature_of(args: Sequence[Any], names: Sequence[str], mode: CompileMode, where: str) -> Signature:
    """The signature a call with ``args`` compiles for, in ``mode``."""
    if mode == "elementwise":
        if not 1 <= len(args) <= 2:
            raise SignatureError(f"{where}: mode='elementwise' compiles a function of one or two floats "
                                 f"applied to every element; it was called with {len(args)} arguments")
        return Signature((FLOAT,) * len(args), mode)
    types = tuple(ks_type_of(a, f"{where}: argument {n!r}") for a, n in zip(args, names))
    if mode == "vmap":
        stepped = []
        for t in types:
            if isinstance(t, TensorType):
                stepped.append(t.element if t.rank == 1 else TensorType(t.rank - 1, t.element))
            else:
                stepped.append(t)
        if not any(isinstance(t, TensorType) for t in types):
            raise SignatureError(f"{where}: mode='vmap' maps over the leading axis of tensor arguments; "
                                 "this call has none")
        return Signature(tuple(stepped), mode)
    return Signature(types, mode)


def ks_type_of(value: Any, what: str) -> KsType:
    """The ks type ``value`` crosses as."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return FLOAT
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        name = str(dtype).removeprefix("torch.")
        element = _DTYPES.get(name)
        if element is None:
            advice = _DTYPE_ADVICE.get(name, "ks has Float (float32), Integer (int32) and Bool elements")
            raise SignatureError(f"{what} has dtype {name}, which ks has no type for: {advice}")
        rank = len(tuple(shape))
        return element if rank == 0 else TensorType(rank, element)
    if isinstance(value, list | tuple) and isinstance(value, list):
        return _list_type(value, what)
    raise SignatureError(f"{what} is a {type(value).__name__}: ksbind.compile takes tensors (float32, int32, bool), "
                         "Python floats, ints and bools, and lists of numbers")


def _list_type(value: list[Any], what: str) -> KsType:
    rank = 0
    probe_any: Any = value
    while isinstance(probe_any, list):
        if not probe_any:
            raise SignatureError(f"{what} is an empty list: its element type cannot be known")
        rank, probe_any = rank + 1, probe_any[0]
    element = ks_type_of(probe_any, what)
    if not isinstance(element, ScalarType):
        raise SignatureError(f"{what} is a list of arrays: pass one stacked tensor")
    return TensorType(rank, element)
