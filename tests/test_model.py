"""Structured names, ksc's C++ symbols and parameter lists, and derived signatures."""
from __future__ import annotations

import pytest
from hypothesis import given, settings

import ksbind
from ksbind.binding import parse_structured_name
from ksbind.codegen.render import FILTERS
from ksbind.errors import BindingError, DeclarationError, KsbindError, KsSyntaxError, KsTypeError, Location
from ksbind.lang.model import FunctionDecl, NotAStructuredNameError, StructuredName
from ksbind.lang.types import FLOAT, INTEGER, parse_type
from tests.strategies import ks_types, structured_names


def decl(text: str) -> FunctionDecl:
    [d] = ksbind.parse_ks(text)
    return d


def base(name: str, t: str) -> StructuredName:
    return StructuredName.base(name, parse_type(t))


@pytest.mark.parametrize("name,symbol", [
    (base("vrelu3", "(Tensor 1 Float)"), "vrelu3$aT1f"),
    (StructuredName.derived("sufrev", base("vrelu3", "(Tensor 1 Float)")), "sufrev$vrelu3$aT1f"),
    (base("f", "(Tuple (Tensor 2 Float) (Vec Float))"), "f$aT2fT1f"),
    (base("g", "(Tuple Float (Tuple Float Integer))"), "g$af$dfi$b"),
    (base("f", "(Tuple Float Float)"), "f$aff"),
    (base("main", "(Tuple)"), "main"),
    (base("h", "(Tuple (Tuple))"), "h$a$d$b"),
    (base("k", "(Lam Float Integer)"), "k$al$dfi$b"),
    (StructuredName.derived("D", base("f", "Float")), "D$f$af"),
    (StructuredName.derived("shape", StructuredName.derived("rev", base("f", "Float"))), "shape$rev$f$af"),
    (StructuredName.derived("fwd", base("main", "(Tuple)")), "fwd$main"),
    # Every character of the encoding table (docs/knossos.md#from-a-name-to-a-c-symbol).
    (base("a*b:c,d", "Float"), "a$xb$8c$_d$af"),
])
def test_cpp_symbols(name: StructuredName, symbol: str) -> None:
    assert name.cpp_symbol == symbol


def test_structured_name_parts() -> None:
    n = StructuredName.derived("sufrev", StructuredName.derived("fwd", base("f", "(Tuple Float Float)")))
    assert str(n) == "[sufrev [fwd [f (Tuple Float Float)]]]"
    assert n.is_derived and n.derivations == ("sufrev", "fwd")
    assert n.base_name == base("f", "(Tuple Float Float)") and not n.base_name.is_derived
    assert n.raw_symbol == "sufrev$fwd$f@ff"


def test_singleton_tuple_shares_the_plain_symbol() -> None:
    """ksc's rule drops the outer <> of a tuple: [f (Tuple Float)] and [f Float] share a symbol.

    That is what ksc really emits (docs/knossos.md); docs/errors.md records the quirk.
    """
    assert base("f", "(Tuple Float)").cpp_symbol == base("f", "Float").cpp_symbol == "f$af"
    assert base("f", "(Tuple Float)") != base("f", "Float")


def test_public_api_decl() -> None:
    d = decl("(edef f Float (Float Float))")
    assert str(d.name) == "[f (Tuple Float Float)]"
    assert d.arg_type == parse_type("(Tuple Float Float)") and d.return_type == FLOAT
    assert d.cpp_symbol == "f$aff"
    assert d.cpp_param_types == ["ks::Float", "ks::Float"]
    assert d.cpp_return_type == "ks::Float"
    assert d.signature == "[f (Tuple Float Float)] : (Tuple Float Float) -> Float"


@pytest.mark.parametrize("text,params", [
    ("(edef f Float (Tuple Integer Integer))", ["ks::Integer", "ks::Integer"]),
    ("(edef f Float (Tuple))", []),
    ("(edef f Float ())", []),
    ("(edef f Float (Vec Float))", ["ks::tensor<1, ks::Float>"]),
    ("(edef f Float (Tuple Float (Tuple Float Integer)))", ["ks::Float", "ks::Tuple<ks::Float,ks::Integer>"]),
    ("(edef f Float (Tuple (Tuple Float)))", ["ks::Tuple<ks::Float>"]),
])
def test_cpp_params_flatten_one_level(text: str, params: list[str]) -> None:
    assert decl(text).cpp_param_types == params


@pytest.mark.parametrize("kind,arg,ret", [
    ("fwd", "(Tuple (Tuple Float (Vec Float) Integer) (Tuple Float (Vec Float) (Tuple)))", "(Tensor 1 Float)"),
    ("rev", "(Tuple (Tuple Float (Vec Float) Integer) (Tensor 1 Float))", "(Tuple Float (Tensor 1 Float) (Tuple))"),
    ("sufrev", "(Tuple (Tuple Float (Vec Float) Integer) (Tensor 1 Float))", "(Tuple Float (Tensor 1 Float) (Tuple))"),
    ("CL", "(Tuple Float (Vec Float) Integer)", "(Tensor 1 Float)"),
])
def test_derive(kind: str, arg: str, ret: str) -> None:
    d = decl("(edef f (Vec Float) (Float (Vec Float) Integer))")
    derived = d.derive(kind)
    assert derived.name == StructuredName.derived(kind, d.name)
    assert derived.arg_type == parse_type(arg)
    assert derived.return_type == parse_type(ret)
    assert derived.origin == "derived"


def test_sufrev_params_keep_the_primal_tuple_whole() -> None:
    d = decl("(edef f Integer (Tuple Integer Integer))").derive("sufrev")
    assert d.cpp_symbol == "sufrev$f$aii"
    assert d.cpp_param_types == ["ks::Tuple<ks::Integer,ks::Integer>", "ks::Tuple<>"]
    assert d.cpp_return_type == "ks::Tuple<ks::Tuple<>,ks::Tuple<>>"


def test_derive_of_a_derived_function() -> None:
    d = decl("(edef f Float Float)").derive("rev").derive("fwd")
    assert str(d.name) == "[fwd [rev [f Float]]]"
    assert d.cpp_symbol == "fwd$rev$f$af"
    assert d.arg_type == parse_type("(Tuple (Tuple Float Float) (Tuple Float Float))")
    assert d.return_type == FLOAT


@pytest.mark.parametrize("kind,fragment", [
    ("suffwdpass", "give ksbind the .kso"), ("sufrevpass", "give ksbind the .kso"),
    ("shape", "give ksbind the .kso"), ("grad", "unknown derivation 'grad'"),
])
def test_underivable(kind: str, fragment: str) -> None:
    with pytest.raises(DeclarationError, match=fragment):
        decl("(edef f Float Float)").derive(kind)


def test_derive_through_lm_is_an_error() -> None:
    with pytest.raises(DeclarationError, match="cannot derive"):
        decl("(edef f (LM Float Float) Float)").derive("sufrev")


@pytest.mark.parametrize("text", [
    "(edef f Float (Float Float))", "(edef [g (Tuple Float)] (Vec Integer) (Tuple Float))",
    "(edef main (Tuple) ())", "(edef [sufrev [f Float]] Float (Tuple Float Float))",
    "(def h (Tensor 2 Float) ((a : Float) (b : Vec (Tuple Bool String))) (body))",
])
def test_printers_round_trip(text: str) -> None:
    d = decl(text)
    again = decl(d.to_edef())
    assert (again.name, again.arg_type, again.return_type) == (d.name, d.arg_type, d.return_type)
    assert decl(d.to_def()) == FunctionDecl(d.name, d.arg_type, d.return_type,
                                            d.param_names or decl(d.to_def()).param_names)


def test_decls_compare_by_signature_not_location() -> None:
    a = ksbind.parse_ks("(edef f Float Integer)", "a.ks")[0]
    b = ksbind.parse_ks("\n\n(edef f Float Integer)", "b.ks")[0]
    assert a == b and hash(a) == hash(b) and a.location != b.location
    assert a != ksbind.parse_ks("(edef f Integer Integer)")[0]
    assert INTEGER == a.arg_type


# ------------------------------------------------------------------ StructuredName.parse


@settings(max_examples=300, deadline=None)
@given(structured_names(ks_types(lm=True)))
def test_parse_round_trips(name: StructuredName) -> None:
    text = str(name)
    assert StructuredName.parse(text) == name
    assert str(StructuredName.parse(text)) == text


@pytest.mark.parametrize("text", [
    "[f Float]", "[f (Tuple Float Float)]", "[main (Tuple)]", "[g (Tuple Float)]", "[sufrev [f Float]]",
    "[shape [rev [f (Tensor 2 (Tuple Integer Bool))]]]", "[k (Lam Float (Tuple))]", "[D [h (LM Float Float)]]",
])
def test_parse_canonical_spellings(text: str) -> None:
    assert str(StructuredName.parse(text)) == text


def test_parse_reads_other_spellings_to_the_canonical_one() -> None:
    assert str(StructuredName.parse(" [f  (Vec Float)] ; note")) == "[f (Tensor 1 Float)]"


@pytest.mark.parametrize("text,error,where,fragment", [
    ("f", NotAStructuredNameError, "a.ks:1:1", "expected one structured name such as [f Float], found 'f'"),
    ("", NotAStructuredNameError, "a.ks:1:1", "found ''"),
    ("(f Float)", NotAStructuredNameError, "a.ks:1:1", "found '(f Float)'"),
    ("[f Float] [g Float]", NotAStructuredNameError, "a.ks:1:11", "found '[f Float] [g Float]'"),
    ("[f Float", KsSyntaxError, "a.ks:1:1", "unbalanced '['"),
    ("[f Flot]", KsTypeError, "a.ks:1:4", "unknown type 'Flot'"),
    ("[foo [f Float]]", DeclarationError, "a.ks:1:2", "unknown derivation 'foo'"),
    ("[rev f]", DeclarationError, "a.ks:1:1", "'rev' is a derivation"),
    ("[f Float Float]", DeclarationError, "a.ks:1:1", "a structured name is [NAME TYPE]"),
])
def test_parse_errors(text: str, error: type[KsbindError], where: str, fragment: str) -> None:
    with pytest.raises(error) as e:
        StructuredName.parse(text, "a.ks")
    assert isinstance(e.value, DeclarationError) == (error not in (KsSyntaxError, KsTypeError))
    assert str(e.value.location) == where and fragment in e.value.message


def test_parse_errors_keep_each_callers_words() -> None:
    where = Location("m.yaml", 5, 11)
    with pytest.raises(BindingError) as e:
        parse_structured_name("[f Float] [g Float]", where)
    assert str(e.value) == ("m.yaml:5:11: expected one structured name such as [f (Vec Float)], "
                            "found '[f Float] [g Float]'")
    with pytest.raises(BindingError) as e:
        parse_structured_name("[f Flot]", where)
    assert e.value.location == where and e.value.message.startswith("bad function reference '[f Flot]': unknown type")
    with pytest.raises(ValueError, match=r"^expected a structured name such as \[f Float\], found 'f'$"):
        FILTERS["cpp_symbol"]("f")
    with pytest.raises(KsTypeError) as t:
        FILTERS["cpp_symbol"]("[f Flot]")
    assert str(t.value.location) == "<filter cpp_symbol>:1:4"
