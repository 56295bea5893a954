"""The ks type model: spelling, mangling, C++ types, tangents, and round-trip properties."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ksbind
from ksbind.errors import KsTypeError
from ksbind.lang.types import (
    BOOL,
    EMPTY_TUPLE,
    FLOAT,
    INTEGER,
    STRING,
    LMType,
    TensorType,
    TupleType,
    parse_type,
)

from .strategies import bindable_types, ks_types, mangleable_types

# (spelling, canonical str, mangled, C++)
TABLE = [
    ("Integer", "Integer", "i", "ks::Integer"),
    ("Float", "Float", "f", "ks::Float"),
    ("Bool", "Bool", "b", "ks::Bool"),
    ("String", "String", "s", "ks::String"),
    ("(Vec Float)", "(Tensor 1 Float)", "T1f", "ks::tensor<1, ks::Float>"),
    ("(Tensor 2 Integer)", "(Tensor 2 Integer)", "T2i", "ks::tensor<2, ks::Integer>"),
    ("(Tuple)", "(Tuple)", "<>", "ks::Tuple<>"),
    ("()", "(Tuple)", "<>", "ks::Tuple<>"),
    ("(Tuple Float Integer)", "(Tuple Float Integer)", "<fi>", "ks::Tuple<ks::Float,ks::Integer>"),
    ("(Float Integer)", "(Tuple Float Integer)", "<fi>", "ks::Tuple<ks::Float,ks::Integer>"),
    ("(Float)", "Float", "f", "ks::Float"),
    ("((Float))", "Float", "f", "ks::Float"),
    ("(Tuple Float)", "(Tuple Float)", "<f>", "ks::Tuple<ks::Float>"),
    ("(Tensor 1 (Tuple Float (Vec Float)))", "(Tensor 1 (Tuple Float (Tensor 1 Float)))", "T1<fT1f>",
     "ks::tensor<1, ks::Tuple<ks::Float,ks::tensor<1, ks::Float>>>"),
    ("(Tuple Float (Tuple Float Integer))", "(Tuple Float (Tuple Float Integer))", "<f<fi>>",
     "ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Integer>>"),
    ("(Lam Float (Vec Float))", "(Lam Float (Tensor 1 Float))", "l<fT1f>",
     "std::function<ks::tensor<1, ks::Float>(ks::Float)>"),
    ("(Tensor 12 Bool)", "(Tensor 12 Bool)", "T12b", "ks::tensor<12, ks::Bool>"),
    ("  ( Tensor\n 1 ; a comment\n Float )  ", "(Tensor 1 Float)", "T1f", "ks::tensor<1, ks::Float>"),
]


@pytest.mark.parametrize("text,canonical,mangled,cpp", TABLE)
def test_spelling_mangling_cpp(text: str, canonical: str, mangled: str, cpp: str) -> None:
    t = ksbind.parse_type(text)
    assert str(t) == canonical
    assert t.mangled == mangled
    assert t.cpp == cpp
    assert ksbind.parse_type(canonical) == t


def test_public_api_example() -> None:
    t = ksbind.parse_type("(Vec Float)")
    assert isinstance(t, ksbind.KsType)
    assert (str(t), t.mangled, t.cpp, t.tangent) == ("(Tensor 1 Float)", "T1f", "ks::tensor<1, ks::Float>", t)


@pytest.mark.parametrize("text,tangent", [
    ("Float", "Float"), ("Integer", "(Tuple)"), ("Bool", "(Tuple)"), ("String", "(Tuple)"),
    ("(Vec Float)", "(Tensor 1 Float)"), ("(Tensor 2 Integer)", "(Tensor 2 (Tuple))"),
    ("(Tuple Float Integer (Vec Bool))", "(Tuple Float (Tuple) (Tensor 1 (Tuple)))"), ("(Tuple)", "(Tuple)"),
])
def test_tangent(text: str, tangent: str) -> None:
    assert str(parse_type(text).tangent) == tangent


@pytest.mark.parametrize("text", ["(LM Float Float)", "(Lam Float Float)", "(Tuple Float (LM Float Float))"])
def test_no_tangent_for_functions_and_linear_maps(text: str) -> None:
    with pytest.raises(KsTypeError):
        _ = parse_type(text).tangent


def test_lm_parses_but_has_no_mangling_or_cpp() -> None:
    t = parse_type("(LM (Vec Float) Float)")
    assert t == LMType(TensorType(1, FLOAT), FLOAT)
    assert str(t) == "(LM (Tensor 1 Float) Float)"
    with pytest.raises(KsTypeError, match="LM"):
        _ = t.mangled
    with pytest.raises(KsTypeError, match="LM"):
        _ = t.cpp
    assert "linear map" in (t.unbindable_reason or "")


def test_unbindable_reason() -> None:
    assert parse_type("(Tuple Float (Vec Integer))").unbindable_reason is None
    assert "Lam" in (parse_type("(Vec (Lam Float Float))").unbindable_reason or "")
    assert "LM" in (parse_type("(Tuple (LM Float Float))").unbindable_reason or "")


def test_types_are_immutable_and_hashable() -> None:
    t = parse_type("(Tuple Float (Vec Integer))")
    assert isinstance(t, TupleType)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.elements = ()  # type: ignore[misc]
    assert hash(t) == hash(parse_type("(Float (Tensor 1 Integer))"))
    by_type: dict[ksbind.KsType, int] = {t: 1}
    assert by_type[parse_type("(Tuple Float (Vec Integer))")] == 1
    assert parse_type("(Tuple)") == EMPTY_TUPLE and EMPTY_TUPLE != TupleType((EMPTY_TUPLE,))


def test_bare_tuple_is_empty_tuple() -> None:
    assert parse_type("Tuple") == EMPTY_TUPLE


@pytest.mark.parametrize("text,fragment", [
    ("Flaot", "did you mean 'Float'"),
    ("(Tensor 1)", "Tensor takes 2 arguments"),
    ("(Vec Float Float)", "Vec takes 1 argument"),
    ("(Tensor 0 Float)", "between 1 and"),
    ("(Tensor -2 Float)", "between 1 and"),
    ("(Tensor x Float)", "expected a tensor rank"),
    ("(Lam Float)", "Lam takes 2 arguments"),
    ("Float Float", "exactly one type"),
    ("", "exactly one type"),
    ("[f Float]", "structured name"),
    ('"Float"', "string"),
    ("Vec", "needs arguments"),
])
def test_bad_types(text: str, fragment: str) -> None:
    with pytest.raises(KsTypeError, match=fragment) as info:
        parse_type(text, filename="t.ks")
    assert info.value.location is not None and info.value.location.file == "t.ks"


# ------------------------------------------------------------- properties

@settings(max_examples=400, deadline=None)
@given(ks_types())
def test_round_trip(t: ksbind.KsType) -> None:
    """parse(str(t)) == t for every type, Lam and LM included."""
    s = str(t)
    back = parse_type(s)
    assert back == t
    assert hash(back) == hash(t)
    assert str(back) == s


@settings(max_examples=200, deadline=None)
@given(bindable_types)
def test_round_trip_with_vec_alias_and_extra_space(t: ksbind.KsType) -> None:
    spelled = str(t).replace("(Tensor 1 ", "(Vec ").replace(" ", "  \n ")
    assert parse_type(spelled) == t


@settings(max_examples=300, deadline=None)
@given(st.lists(mangleable_types, min_size=2, max_size=8, unique=True))
def test_distinct_types_never_share_a_mangling(types: list[ksbind.KsType]) -> None:
    assert len({t.mangled for t in types}) == len(types)
    assert len({t.cpp for t in types}) == len(types)


@settings(max_examples=200, deadline=None)
@given(mangleable_types)
def test_mangling_alphabet(t: ksbind.KsType) -> None:
    # Only these characters; the symbol encoding turns < and > into $d and $b.
    assert set(t.mangled) <= set("ifbsTl<>0123456789")


@settings(max_examples=200, deadline=None)
@given(bindable_types)
def test_tangent_of_tangent_is_tangent(t: ksbind.KsType) -> None:
    dt = t.tangent
    assert dt.tangent == dt
    assert dt.unbindable_reason is None
    assert all(not (x == INTEGER or x == BOOL or x == STRING) for x in dt.walk())
