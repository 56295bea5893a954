"""The ks type model: immutable, hashable, and printed in canonical ks spelling.

``str(parse_type(s))`` is the canonical spelling and parses back to an equal
type. ``.mangled`` and ``.cpp`` follow ksc exactly (docs/knossos.md#types): tensors are
``ks::tensor<N, C>`` (space after the comma), tuples ``ks::Tuple<A,B>`` (none).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ksbind.errors import KsTypeError, Location, closest
from ksbind.lang.sexpr import Atom, Node, SList, parse_sexprs

SCALAR_NAMES = ("Integer", "Float", "Bool", "String")
CONSTRUCTOR_NAMES = ("Tensor", "Vec", "Tuple", "Lam", "LM")
_SCALAR_MANGLING = {"Integer": "i", "Float": "f", "Bool": "b", "String": "s"}


class KsType:
    """Base of every ks type. Subclasses are frozen dataclasses."""

    __slots__ = ()

    @property
    def mangled(self) -> str:
        """ksc's type mangling, e.g. ``T1f`` for ``(Tensor 1 Float)``."""
        return _mangle(self)

    @property
    def cpp(self) -> str:
        """ksc's C++ spelling, e.g. ``ks::tensor<1, ks::Float>``."""
        return _cpp(self)

    @property
    def tangent(self) -> KsType:
        """The tangent type: Float->Float, discrete->(Tuple), structure kept."""
        return _tangent(self)

    def children(self) -> tuple[KsType, ...]:
        return ()

    def walk(self) -> Iterator[KsType]:
        """This type and every type nested in it, outermost first."""
        yield self
        for child in self.children():
            yield from child.walk()

    def contains(self, predicate: Callable[[KsType], bool]) -> bool:
        return any(predicate(t) for t in self.walk())

    @property
    def unbindable_reason(self) -> str | None:
        """Why a value of this type cannot cross into Python, or None if it can."""
        return _unbindable_reason(self)


# Per process: a function of the (frozen) type alone.
@lru_cache(maxsize=4096)
def _unbindable_reason(t0: KsType) -> str | None:
    for t in t0.walk():
        if isinstance(t, LMType):
            return f"{t} is a linear map (LM), internal to automatic differentiation"
        if isinstance(t, LamType):
            return f"{t} is a function value (Lam), which ksbind cannot convert"
    return None


@dataclass(frozen=True, slots=True)
class ScalarType(KsType):
    name: str  # one of SCALAR_NAMES

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class TensorType(KsType):
    rank: int
    element: KsType

    def children(self) -> tuple[KsType, ...]:
        return (self.element,)

    def __str__(self) -> str:
        return _spell(self)


@dataclass(frozen=True, slots=True)
class TupleType(KsType):
    elements: tuple[KsType, ...]

    def children(self) -> tuple[KsType, ...]:
        return self.elements

    def __str__(self) -> str:
        return _spell(self)


@dataclass(frozen=True, slots=True)
class LamType(KsType):
    argument: KsType
    result: KsType

    def children(self) -> tuple[KsType, ...]:
        return (self.argument, self.result)

    def __str__(self) -> str:
        return f"(Lam {self.argument} {self.result})"


@dataclass(frozen=True, slots=True)
class LMType(KsType):
    argument: KsType
    result: KsType

    def children(self) -> tuple[KsType, ...]:
        return (self.argument, self.result)

    def __str__(self) -> str:
        return f"(LM {self.argument} {self.result})"


INTEGER = ScalarType("Integer")
FLOAT = ScalarType("Float")
BOOL = ScalarType("Bool")
STRING = ScalarType("String")
EMPTY_TUPLE = TupleType(())


# ---------------------------------------------------------------- spelling

# Per process: a function of the (frozen) type alone.
@lru_cache(maxsize=4096)
def _spell(t: KsType) -> str:
    """The canonical spelling of a tensor or tuple (cached: rendering prints the same types often)."""
    if isinstance(t, TensorType):
        return f"(Tensor {t.rank} {t.element})"
    assert isinstance(t, TupleType)
    return "(Tuple" + "".join(" " + str(e) for e in t.elements) + ")"


# Per process: a function of the (frozen) type alone.
@lru_cache(maxsize=4096)
def _mangle(t: KsType) -> str:
    if isinstance(t, ScalarType):
        return _SCALAR_MANGLING[t.name]
    if isinstance(t, TensorType):
        return f"T{t.rank}{_mangle(t.element)}"
    if isinstance(t, TupleType):
        return "<" + "".join(_mangle(e) for e in t.elements) + ">"
    if isinstance(t, LamType):
        return f"l<{_mangle(t.argument)}{_mangle(t.result)}>"
    raise KsTypeError(f"{t} cannot be mangled: linear maps (LM) have no C++ name")


# Per process: a function of the (frozen) type alone.
@lru_cache(maxsize=4096)
def _cpp(t: KsType) -> str:
    if isinstance(t, ScalarType):
        return f"ks::{t.name}"
    if isinstance(t, TensorType):
        return f"ks::tensor<{t.rank}, {_cpp(t.element)}>"
    if isinstance(t, TupleType):
        return "ks::Tuple<" + ",".join(_cpp(e) for e in t.elements) + ">"
    if isinstance(t, LamType):
        return f"std::function<{_cpp(t.result)}({_cpp(t.argument)})>"
    raise KsTypeError(f"{t} has no C++ type: linear maps (LM) are internal to ksc")


# Per process: a function of the (frozen) type alone.
@lru_cache(maxsize=4096)
def _tangent(t: KsType) -> KsType:
    if isinstance(t, ScalarType):
        return FLOAT if t.name == "Float" else EMPTY_TUPLE
    if isinstance(t, TensorType):
        return TensorType(t.rank, _tangent(t.element))
    if isinstance(t, TupleType):
        return TupleType(tuple(_tangent(e) for e in t.elements))
    raise KsTypeError(f"{t} has no tangent type")


# ---------------------------------------------------------------- parsing

def parse_type(text: str, filename: str = "<string>") -> KsType:
    """Parse one ks type from text, e.g. ``"(Vec Float)"``."""
    nodes = parse_sexprs(text, filename)
    if len(nodes) != 1:
        where = nodes[1].loc if len(nodes) > 1 else Location(filename, 1, 1)
        raise KsTypeError(f"expected exactly one type, found {len(nodes)} forms", where)
    return type_from_node(nodes[0])


def type_from_node(node: Node) -> KsType:
    """Read a type from an already-parsed s-expression node."""
    if isinstance(node, Atom):
        return _type_from_atom(node)
    if node.bracket != "(":
        raise KsTypeError(f"expected a type, found the structured name {node}", node.loc)
    items = node.items
    if not items:
        return EMPTY_TUPLE
    head = items[0]
    if isinstance(head, Atom) and not head.is_string and head.text in CONSTRUCTOR_NAMES:
        return _constructed(head, items[1:], node)
    return type_from_nodes(items, node.loc)


def type_from_nodes(items: Sequence[Node], loc: Location) -> KsType:
    """A list of types: one is itself, several are a tuple (docs/knossos.md#types)."""
    if not items:
        return EMPTY_TUPLE
    if isinstance(items[0], Atom) and not items[0].is_string and items[0].text in CONSTRUCTOR_NAMES:
        return _constructed(items[0], items[1:], SList(tuple(items), "(", loc))
    types = [type_from_node(i) for i in items]
    return types[0] if len(types) == 1 else TupleType(tuple(types))


def _type_from_atom(atom: Atom) -> KsType:
    if atom.is_string:
        raise KsTypeError(f"expected a type, found the string {atom}", atom.loc)
    if atom.text in SCALAR_NAMES:
        return ScalarType(atom.text)
    if atom.text in CONSTRUCTOR_NAMES:
        if atom.text == "Tuple":
            return EMPTY_TUPLE
        raise KsTypeError(f"{atom.text} needs arguments: write ({atom.text} ...)", atom.loc)
    known = SCALAR_NAMES + CONSTRUCTOR_NAMES
    raise KsTypeError(
        f"unknown type {atom.text!r}{closest(atom.text, known)}; expected one of {', '.join(known)}",
        atom.loc,
    )


def _constructed(head: Atom, args: Sequence[Node], whole: SList) -> KsType:
    name = head.text
    if name == "Tuple":
        return TupleType(tuple(type_from_node(a) for a in args))
    if name == "Vec":
        _expect_arity(name, args, 1, "(Vec ELEMENT)", whole)
        return TensorType(1, type_from_node(args[0]))
    if name == "Tensor":
        _expect_arity(name, args, 2, "(Tensor RANK ELEMENT)", whole)
        return TensorType(_rank(args[0]), type_from_node(args[1]))
    _expect_arity(name, args, 2, f"({name} ARGUMENT RESULT)", whole)
    argument, result = type_from_node(args[0]), type_from_node(args[1])
    return LamType(argument, result) if name == "Lam" else LMType(argument, result)


def _expect_arity(name: str, args: Sequence[Node], n: int, shape: str, whole: SList) -> None:
    if len(args) != n:
        raise KsTypeError(
            f"{name} takes {n} argument{'s' if n > 1 else ''}, found {len(args)}: expected {shape}",
            whole.loc,
        )


#: Highest tensor rank accepted: the rank becomes a C++ template argument and a
#: tuple of that many ints, so absurd ranks would only fail later, in the compiler.
MAX_RANK = 64


def _rank(node: Node) -> int:
    text = node.text if isinstance(node, Atom) and not node.is_string else ""
    digits = text[1:] if text.startswith("-") else text
    if digits.isdigit() and digits.isascii():
        rank = int(text)
        if 1 <= rank <= MAX_RANK:
            return rank
        raise KsTypeError(f"tensor rank must be between 1 and {MAX_RANK}, found {text}", node.loc)
    raise KsTypeError(f"expected a tensor rank (a whole number >= 1), found {node}", node.loc)
