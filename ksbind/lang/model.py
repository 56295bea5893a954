"""Structured names and function declarations, with ksc's symbol and signature rules.

A base name ``[f T]`` names f at argument type T; a derived name ``[d X]``
names derivation d of X. The C++ symbol and the C++ parameter list follow
ksc's to the character (docs/knossos.md); ``derive`` computes fwd/rev/sufrev signatures
from the tangent rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ksbind.errors import DeclarationError, KsTypeError, Location, closest
from ksbind.lang.sexpr import Atom, SList, excerpt, parse_sexprs
from ksbind.lang.types import KsType, TupleType, type_from_node

#: Derivations ksc knows (docs/knossos.md#function-names), D (the gradient) last.
DERIVATIONS = ("fwd", "rev", "sufrev", "suffwdpass", "sufrevpass", "CL", "shape", "D")
#: Derivations whose signature follows from the primal's alone.
DERIVABLE = ("fwd", "rev", "sufrev", "CL")

_SYMBOL_ENCODING = str.maketrans(
    {"@": "$a", ",": "$_", "[": "$6", "]": "$9", "<": "$d", ">": "$b", "*": "$x", ":": "$8"}
)


@dataclass(frozen=True, slots=True)
class StructuredName:
    """``[f T]`` (name=f, arg_type=T) or ``[d X]`` (name=d, inner=X)."""

    name: str
    arg_type: KsType | None = None
    inner: StructuredName | None = None

    @staticmethod
    def base(name: str, arg_type: KsType) -> StructuredName:
        return StructuredName(name, arg_type=arg_type)

    @staticmethod
    def derived(derivation: str, inner: StructuredName) -> StructuredName:
        return StructuredName(derivation, inner=inner)

    @classmethod
    def parse(cls, text: str, filename: str = "<string>") -> StructuredName:
        """The name ``text`` spells, ``[f T]`` or ``[d X]``: the inverse of ``str()``.

        Text that is not one ``[...]`` form (a plain ``f``, two names, a ``(...)`` list)
        is a NotAStructuredNameError; a malformed one, the reader's KsSyntaxError,
        KsTypeError or DeclarationError, located in ``filename``."""
        nodes = parse_sexprs(text, filename)
        if len(nodes) != 1 or not isinstance(nodes[0], SList) or nodes[0].bracket != "[":
            where = nodes[min(1, len(nodes) - 1)].loc if nodes else Location(filename, 1, 1)
            raise NotAStructuredNameError(f"expected one structured name such as [f Float], found {text!r}", where)
        return structured_name_from_node(nodes[0])

    @property
    def is_derived(self) -> bool:
        return self.inner is not None

    @property
    def base_name(self) -> StructuredName:
        """The innermost ``[f T]`` of a derived name (itself for a base name)."""
        n = self
        while n.inner is not None:
            n = n.inner
        return n

    @property
    def derivations(self) -> tuple[str, ...]:
        """Outermost first: ``[sufrev [fwd [f T]]]`` gives ("sufrev", "fwd")."""
        out: list[str] = []
        n = self
        while n.inner is not None:
            out.append(n.name)
            n = n.inner
        return tuple(out)

    @property
    def raw_symbol(self) -> str:
        """The symbol before character encoding, e.g. ``sufrev$f@ff``."""
        if self.inner is not None:
            return f"{self.name}${self.inner.raw_symbol}"
        assert self.arg_type is not None
        t = self.arg_type
        if isinstance(t, TupleType):
            if not t.elements:
                return self.name
            return self.name + "@" + "".join(e.mangled for e in t.elements)
        return f"{self.name}@{t.mangled}"

    @property
    def cpp_symbol(self) -> str:
        """ksc's C++ function name in namespace ks, e.g. ``vrelu3$aT1f``."""
        return _cpp_symbol(self)

    def __str__(self) -> str:
        if self.inner is not None:
            return f"[{self.name} {self.inner}]"
        return f"[{self.name} {self.arg_type}]"


class NotAStructuredNameError(DeclarationError):
    """StructuredName.parse's text is not one ``[...]`` form (callers say what they expected)."""


def structured_name_from_node(node: SList) -> StructuredName:
    """``[f T]`` or ``[d [f T]]`` from a parsed ``[...]`` list."""
    items = node.items
    if len(items) != 2 or not isinstance(items[0], Atom) or items[0].is_string:
        raise DeclarationError(
            f"a structured name is [NAME TYPE] or [DERIVATION [NAME TYPE]], found {excerpt(node)}", node.loc
        )
    head, rest = items
    assert isinstance(head, Atom)  # checked above; tells the type checker
    if head.text in DERIVATIONS and not (isinstance(rest, SList) and rest.bracket == "["):
        raise DeclarationError(
            f"{head.text!r} is a derivation: it takes a structured name, as in [{head.text} [f Float]]; "
            f"found {excerpt(node)}",
            node.loc,
        )
    if isinstance(rest, SList) and rest.bracket == "[":
        if head.text not in DERIVATIONS:
            raise DeclarationError(
                f"unknown derivation {head.text!r}{closest(head.text, DERIVATIONS)}; "
                f"expected one of {', '.join(DERIVATIONS)}",
                head.loc,
            )
        return StructuredName.derived(head.text, structured_name_from_node(rest))
    return StructuredName.base(head.text, type_from_node(rest))


# Per process: a function of the name alone.
@lru_cache(maxsize=16384)
def _cpp_symbol(name: StructuredName) -> str:
    # Cached: rendering asks for each binding's symbol many times.
    return name.raw_symbol.translate(_SYMBOL_ENCODING)


@dataclass(frozen=True, slots=True)
class FunctionDecl:
    """A ks function ksbind can call: its name and full signature.

    ``arg_type`` is the single argument type; several parameters make it a
    Tuple. ``param_names`` are the def's parameter names when it had them.
    """

    name: StructuredName
    arg_type: KsType
    return_type: KsType
    param_names: tuple[str, ...] = ()
    location: Location | None = field(default=None, compare=False)
    origin: str = field(default="edef", compare=False)  # def | edef | gdef | derived

    @property
    def cpp_symbol(self) -> str:
        return self.name.cpp_symbol

    @property
    def params(self) -> tuple[KsType, ...]:
        """The C++ parameters' ks types: a Tuple argument is spread one level."""
        if isinstance(self.arg_type, TupleType):
            return self.arg_type.elements
        return (self.arg_type,)

    @property
    def cpp_param_types(self) -> list[str]:
        return [p.cpp for p in self.params]

    @property
    def cpp_return_type(self) -> str:
        return self.return_type.cpp

    @property
    def signature(self) -> str:
        """``[f (Tuple Float Float)] : (Tuple Float Float) -> Float``."""
        return f"{self.name} : {self.arg_type} -> {self.return_type}"

    def to_edef(self) -> str:
        """This declaration as an edef form; ``parse_ks`` reads it back to an equal decl
        (less ``param_names``, which an edef cannot state)."""
        return f"(edef {self.name} {self.return_type} {self.arg_type})"

    def to_def(self, body: str = "0") -> str:
        """A def form with this signature and parameter names (arg0... when there are none)."""
        names = self.param_names
        if not names:
            # One parameter list entry per tuple element, except that a one-element
            # tuple must stay one parameter: ((x : T)) would declare argument type T.
            spread = isinstance(self.arg_type, TupleType) and len(self.arg_type.elements) != 1
            names = tuple(f"arg{i}" for i in range(len(self.params))) if spread else ("arg0",)
        if len(names) == 1:
            params = f"({names[0]} : {self.arg_type})"
        else:
            params = "(" + " ".join(f"({n} : {t})" for n, t in zip(names, self.params)) + ")"
        return f"(def {self.name} {self.return_type} {params} {body})"

    def derive(self, kind: str) -> FunctionDecl:
        """The declaration of ``[kind NAME]`` computed from this signature."""
        s, t = self.arg_type, self.return_type
        arg: KsType
        ret: KsType
        try:
            if kind == "fwd":
                arg, ret = TupleType((s, s.tangent)), t.tangent
            elif kind in ("rev", "sufrev"):
                arg, ret = TupleType((s, t.tangent)), s.tangent
            elif kind == "CL":
                arg, ret = s, t
            elif kind in DERIVATIONS:
                raise DeclarationError(
                    f"the signature of [{kind} {self.name}] depends on the function body; "
                    "give ksbind the .kso file ksc writes, which states it",
                    self.location,
                )
            else:
                raise DeclarationError(
                    f"unknown derivation {kind!r}; expected one of {', '.join(DERIVABLE)}",
                    self.location,
                )
        except KsTypeError as e:
            raise DeclarationError(f"cannot derive [{kind} {self.name}]: {e.message}", self.location) from None
        return FunctionDecl(StructuredName.derived(kind, self.name), arg, ret,
                            location=self.location, origin="derived")
