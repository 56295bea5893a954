"""What a Python name stands for while a function is translated (translate.py): a typed ks
expression (``ir.Expr``), a Python constant known while translating (``Static``), a tuple or
list of values, a tensor's shape, a method before its call, an elementwise tensor not yet made
(``Elementwise``), a comprehension, a range, or a name Python would not have (``Undefined``).
"""
from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ksbind.frontend.ir import Expr, Lit, Var, call, lit_int
from ksbind.lang.types import INTEGER, KsType, TensorType


@dataclass(frozen=True)
class Static:
    """A Python value known while translating: a literal, a module, a function, a constant."""

    value: Any


@dataclass(frozen=True)
class PyTuple:
    items: tuple[Value, ...]


@dataclass(frozen=True)
class PyList:
    items: tuple[Value, ...]


@dataclass(frozen=True)
class Comprehension:
    """``[body for index in range(...)]``: ``count`` elements, ``body`` closed over ``index``."""

    count: Expr
    index: Var
    body: Expr


@dataclass(frozen=True)
class Shape:
    """``x.shape`` / ``x.size()`` of a tensor expression."""

    of: Expr


@dataclass(frozen=True)
class Method:
    """``x.sum`` before its call."""

    obj: Value
    name: str


@dataclass(frozen=True)
class Elementwise:
    """A tensor whose elements are ``body`` of the ``leaves``' elements (each a tensor variable
    of rank ``rank``, its element named by the paired Var), after the ``binds``."""

    rank: int
    leaves: tuple[tuple[Var, Var], ...]  # (element, tensor)
    binds: tuple[tuple[str, Expr], ...]
    body: Expr

    @property
    def type(self) -> KsType:
        return TensorType(self.rank, self.body.type)


@dataclass(frozen=True)
class Undefined:
    """A name Python would not have here (assigned in one branch of an if, or only inside a loop)."""

    why: str


@dataclass(frozen=True)
class StaticCallable:
    """A method of a constant, evaluated while translating (a tensor constant's ``size()``)."""

    call: Callable[..., Any]


@dataclass(frozen=True)
class RangeValue:
    """``range(start, stop, step)``: ``count`` items, item k being start + k * step."""

    count: Expr
    start: Expr
    step: int

    def at(self, k: Var) -> Expr:
        scaled: Expr = k if self.step == 1 else call("mul", INTEGER, k, lit_int(self.step))
        if isinstance(self.start, Lit) and self.start.value == 0:
            return scaled
        return call("add", INTEGER, self.start, scaled)


Value = Expr | Static | PyTuple | PyList | Comprehension | Shape | Method | Elementwise | Undefined | RangeValue


def is_number(v: object) -> bool:
    return isinstance(v, numbers.Real)


__all__ = ["Static", "PyTuple", "PyList", "Comprehension", "Shape", "Method", "Elementwise", "Undefined",
           "StaticCallable", "RangeValue", "Value", "is_number"]
