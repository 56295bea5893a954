"""Hypothesis strategies for ks types, names and declarations, shared by the property tests."""
from __future__ import annotations

from hypothesis import strategies as st

from ksbind.lang.identifiers import CPP_KEYWORDS, identifier_problem
from ksbind.lang.model import DERIVABLE, DERIVATIONS, FunctionDecl, StructuredName
from ksbind.lang.types import (
    BOOL,
    FLOAT,
    INTEGER,
    STRING,
    KsType,
    LamType,
    LMType,
    TensorType,
    TupleType,
)

scalars = st.sampled_from([INTEGER, FLOAT, BOOL, STRING])


def _extend(children: st.SearchStrategy[KsType], lam: bool, lm: bool) -> st.SearchStrategy[KsType]:
    options = [
        st.builds(TensorType, st.integers(1, 12), children),
        st.lists(children, max_size=4).map(lambda ts: TupleType(tuple(ts))),
    ]
    if lam:
        options.append(st.builds(LamType, children, children))
    if lm:
        options.append(st.builds(LMType, children, children))
    return st.one_of(options)


def ks_types(lam: bool = True, lm: bool = True, max_leaves: int = 12) -> st.SearchStrategy[KsType]:
    """Random nested ks types; Lam and LM only when asked for."""
    return st.recursive(scalars, lambda c: _extend(c, lam, lm), max_leaves=max_leaves)


#: Types a binding can carry across (no Lam, no LM).
bindable_types = ks_types(lam=False, lm=False)
#: Types that have a mangling (everything but LM).
mangleable_types = ks_types(lam=True, lm=False)

#: Plain ks function names: identifiers that are not derivations nor C++/Python keywords.
names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda n: n not in DERIVATIONS and identifier_problem(n) is None and n not in CPP_KEYWORDS)


def base_names(types: st.SearchStrategy[KsType] = mangleable_types) -> st.SearchStrategy[StructuredName]:
    return st.builds(StructuredName.base, names, types)


def structured_names(types: st.SearchStrategy[KsType] = mangleable_types) -> st.SearchStrategy[StructuredName]:
    """Base names wrapped in up to three derivations."""
    return st.builds(
        lambda base, ds: _wrap(base, ds), base_names(types),
        st.lists(st.sampled_from(DERIVATIONS), max_size=3))


def _wrap(base: StructuredName, derivations: list[str]) -> StructuredName:
    n = base
    for d in derivations:
        n = StructuredName.derived(d, n)
    return n


@st.composite
def decls(draw: st.DrawFn, types: st.SearchStrategy[KsType] = bindable_types) -> FunctionDecl:
    """A base declaration with random argument and return types."""
    name = draw(names)
    arg = draw(types)
    return FunctionDecl(StructuredName.base(name, arg), arg, draw(types))


__all__ = ["ks_types", "bindable_types", "mangleable_types", "names", "base_names", "structured_names",
           "decls", "DERIVABLE"]
