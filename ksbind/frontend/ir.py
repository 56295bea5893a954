"""Typed ks expressions, as the translation builds them, and their ks text.

Every node knows its ks type (``KsType`` from ``ksbind.lang.types``), so a
translation rule decides forms from types, never from text. Rendering goes
through ``ksbind.lang.sexpr``'s nodes: no ks is pasted together as strings.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ksbind.errors import Location
from ksbind.lang.model import StructuredName
from ksbind.lang.sexpr import Atom, Node, SList
from ksbind.lang.types import BOOL, FLOAT, INTEGER, KsType, LamType, TensorType, TupleType

_HERE = Location("<ksbind.compile>")


class Expr:
    """A typed ks expression."""

    type: KsType

    def children(self) -> tuple[Expr, ...]:
        return ()

    def walk(self) -> Iterator[Expr]:
        yield self
        for c in self.children():
            yield from c.walk()

    def free_vars(self) -> dict[str, Var]:
        """The variables this expression reads that it does not bind, by name, in first-use order."""
        found: dict[str, Var] = {}
        _free(self, frozenset(), found)
        return found


@dataclass(frozen=True)
class Lit(Expr):
    value: bool | int | float
    type: KsType


@dataclass(frozen=True)
class Var(Expr):
    name: str
    type: KsType


@dataclass(frozen=True)
class Call(Expr):
    """``(fn a b ...)``: fn a plain ks name (ksc picks the overload by the arguments' types)
    or a structured name (``[sufrev [k (Tuple Float Float)]]``)."""

    fn: str | StructuredName
    args: tuple[Expr, ...]
    type: KsType

    def children(self) -> tuple[Expr, ...]:
        return self.args


@dataclass(frozen=True)
class Let(Expr):
    """``(let ((x E) ((a b) T)) body)``: each binding sees the ones before it; a tuple of
    names takes a tuple apart (one level)."""

    binds: tuple[tuple[str | tuple[str, ...], Expr], ...]
    body: Expr
    type: KsType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", self.body.type)

    def children(self) -> tuple[Expr, ...]:
        return (*(e for _, e in self.binds), self.body)


@dataclass(frozen=True)
class If(Expr):
    cond: Expr
    then: Expr
    other: Expr
    type: KsType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", self.then.type)

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.then, self.other)


@dataclass(frozen=True)
class Tup(Expr):
    items: tuple[Expr, ...]
    type: KsType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", TupleType(tuple(i.type for i in self.items)))

    def children(self) -> tuple[Expr, ...]:
        return self.items


@dataclass(frozen=True)
class Get(Expr):
    """``(get$I$N t)``, I counted from 1."""

    index: int
    tup: Expr
    type: KsType = field(init=False)

    def __post_init__(self) -> None:
        t = self.tup.type
        assert isinstance(t, TupleType)
        object.__setattr__(self, "type", t.elements[self.index - 1])

    def children(self) -> tuple[Expr, ...]:
        return (self.tup,)


@dataclass(frozen=True)
class Lam(Expr):
    param: Var
    body: Expr
    type: KsType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", LamType(self.param.type, self.body.type))

    def children(self) -> tuple[Expr, ...]:
        return (self.body,)


@dataclass(frozen=True)
class Def:
    """``(def NAME RESULT ((p : T) ...) BODY)``."""

    name: str
    params: tuple[Var, ...]
    body: Expr

    @property
    def arg_type(self) -> KsType:
        types = tuple(p.type for p in self.params)
        return types[0] if len(types) == 1 else TupleType(types)

    @property
    def structured_name(self) -> StructuredName:
        return StructuredName.base(self.name, self.arg_type)


# ------------------------------------------------------------------ helpers the rules use

def lit_float(x: float) -> Lit:
    return Lit(float(x), FLOAT)


def lit_int(i: int) -> Lit:
    return Lit(int(i), INTEGER)


def lit_bool(b: bool) -> Lit:
    return Lit(bool(b), BOOL)


def call(fn: str | StructuredName, result: KsType, *args: Expr) -> Call:
    return Call(fn, tuple(args), result)


def let(binds: Sequence[tuple[str | tuple[str, ...], Expr]], body: Expr) -> Expr:
    return Let(tuple(binds), body) if binds else body


def is_simple(e: Expr) -> bool:
    """Cheap to repeat: a variable or a literal."""
    return isinstance(e, Var | Lit)


def tensor_rank(t: KsType) -> int:
    return t.rank if isinstance(t, TensorType) else 0


def _free(e: Expr, bound: frozenset[str], found: dict[str, Var]) -> None:
    if isinstance(e, Var):
        if e.name not in bound:
            found.setdefault(e.name, e)
    elif isinstance(e, Let):
        inner = bound
        for names, value in e.binds:
            _free(value, inner, found)
            inner = inner | ({names} if isinstance(names, str) else set(names))
        _free(e.body, inner, found)
    elif isinstance(e, Lam):
        _free(e.body, bound | {e.param.name}, found)
    else:
        for c in e.children():
            _free(c, bound, found)


# ------------------------------------------------------------------ rendering

def _atom(text: str) -> Atom:
    return Atom(text, _HERE)


def _list(*items: Node, bracket: str = "(") -> SList:
    return SList(tuple(items), bracket, _HERE)


def float_text(x: float) -> str:
    """A Float literal ksc reads (``1.0``, ``-0.125``, ``1e-05``): always with a point or an exponent."""
    if not math.isfinite(x):
        raise ValueError(f"{x!r} has no ks literal")
    text = repr(float(x))
    return text if ("." in text or "e" in text) else text + ".0"


def _name_node(fn: str | StructuredName) -> Node:
    return _atom(fn) if isinstance(fn, str) else _atom(str(fn))


def to_node(e: Expr) -> Node:
    """The s-expression of ``e``."""
    if isinstance(e, Lit):
        if e.type == BOOL:
            return _atom("true" if e.value else "false")
        if e.type == FLOAT:
            return _atom(float_text(float(e.value)))
        return _atom(str(int(e.value)))
    if isinstance(e, Var):
        return _atom(e.name)
    if isinstance(e, Call):
        return _list(_name_node(e.fn), *(to_node(a) for a in e.args))
    if isinstance(e, Let):
        binds: list[Node] = []
        for names, value in e.binds:
            if isinstance(names, str):
                binds.append(_list(_atom(names), to_node(value)))
                continue
            # A tuple taken apart by get$I$N, never by a pattern: ksc's rev cannot derive a
            # let of a tuple pattern ("gradE: TupPat encountered").
            whole = value.name if isinstance(value, Var) else "_".join(names) + "_tup"
            if not isinstance(value, Var):
                binds.append(_list(_atom(whole), to_node(value)))
            for i, part in enumerate(names):
                binds.append(_list(_atom(part), _list(_atom(f"get${i + 1}${len(names)}"), _atom(whole))))
        if len(binds) == 2 and isinstance(binds[0], SList) and all(isinstance(i, Atom) for i in binds[0].items):
            # ((a x) (b y)) would read as the tuple pattern (a x) bound to a call of b: nest them
            return _list(_atom("let"), _list(binds[0]), _list(_atom("let"), _list(binds[1]), to_node(e.body)))
        return _list(_atom("let"), _list(*binds), to_node(e.body))
    if isinstance(e, If):
        return _list(_atom("if"), to_node(e.cond), to_node(e.then), to_node(e.other))
    if isinstance(e, Tup):
        return _list(_atom("tuple"), *(to_node(i) for i in e.items))
    if isinstance(e, Get):
        count = len(e.tup.type.elements) if isinstance(e.tup.type, TupleType) else 1
        return _list(_atom(f"get${e.index}${count}"), to_node(e.tup))
    if isinstance(e, Lam):
        return _list(_atom("lam"), _list(_atom(e.param.name), _atom(":"), _atom(str(e.param.type))), to_node(e.body))
    raise TypeError(f"not an expression: {e!r}")


def def_node(d: Def) -> SList:
    if len(d.params) == 1:
        params: Node = _list(_atom(d.params[0].name), _atom(":"), _atom(str(d.params[0].type)))
    else:
        params = _list(*(_list(_atom(p.name), _atom(":"), _atom(str(p.type))) for p in d.params))
    return _list(_atom("def"), _atom(d.name), _atom(str(d.body.type)), params, to_node(d.body))


def pretty(node: Node, width: int = 100, indent: int = 0) -> str:
    """``node`` as text, broken over lines where one line would be wider than ``width``
    (the leading atoms stay on the first line: ``(def name Float``, ``(let``)."""
    flat = str(node)
    if isinstance(node, Atom) or len(flat) + indent <= width or not node.items:
        return flat
    close = ")" if node.bracket == "(" else "]"
    items = node.items
    k = 0
    while k < len(items) and k < 3 and isinstance(items[k], Atom):
        k += 1
    head = " ".join(str(i) for i in items[:k]) if k else pretty(items[0], width, indent + 1)
    rest = [pretty(i, width, indent + 2) for i in items[max(k, 1):]]
    return node.bracket + head + "".join("\n" + " " * (indent + 2) + p for p in rest) + close
