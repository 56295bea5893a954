"""Reading def/edef/gdef forms: every spelling docs/knossos.md lists, comments, rules, gdefs, files."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import ksbind
from ksbind.errors import (
    DeclarationError,
    KsbindError,
    KsSyntaxError,
    KsTypeError,
    Location,
)
from ksbind.lang.types import parse_type

from .conftest import REPO


def one(text: str) -> ksbind.FunctionDecl:
    [d] = ksbind.parse_ks(text)
    return d


@pytest.mark.parametrize("text,name,arg,ret,params", [
    ("(def f Float (x : Float) x)", "[f Float]", "Float", "Float", ("x",)),
    ("(def f Float ((x : Float)) x)", "[f Float]", "Float", "Float", ("x",)),
    ("(def f Float ((a : Float) (b : Integer)) a)", "[f (Tuple Float Integer)]", "(Tuple Float Integer)",
     "Float", ("a", "b")),
    ("(def f (Vec Float) (t : Vec Float) t)", "[f (Tensor 1 Float)]", "(Tensor 1 Float)", "(Tensor 1 Float)",
     ("t",)),
    ("(def f Float (t : Tensor 2 Float) 0.0)", "[f (Tensor 2 Float)]", "(Tensor 2 Float)", "Float", ("t",)),
    ("(def f Float (t : (Vec Float)) 0.0)", "[f (Tensor 1 Float)]", "(Tensor 1 Float)", "Float", ("t",)),
    ("(def f Float (p : Tuple Float Integer) 0.0)", "[f (Tuple Float Integer)]", "(Tuple Float Integer)",
     "Float", ("p",)),
    ("(def main Integer () 0)", "[main (Tuple)]", "(Tuple)", "Integer", ()),
    ("(def [f Float] Float (x : Float) x)", "[f Float]", "Float", "Float", ("x",)),
    ("(def [f (Tuple Float Float)] Float ((a : Float) (b : Float)) a)", "[f (Tuple Float Float)]",
     "(Tuple Float Float)", "Float", ("a", "b")),
    ("(edef f Float (Float))", "[f Float]", "Float", "Float", ()),
    ("(edef f Float Float)", "[f Float]", "Float", "Float", ()),
    ("(edef f Float (Float Integer))", "[f (Tuple Float Integer)]", "(Tuple Float Integer)", "Float", ()),
    ("(edef f Float (Tuple Float Integer))", "[f (Tuple Float Integer)]", "(Tuple Float Integer)", "Float", ()),
    ("(edef f Float ())", "[f (Tuple)]", "(Tuple)", "Float", ()),
    ("(edef f Float (Tuple))", "[f (Tuple)]", "(Tuple)", "Float", ()),
    ("(edef f (Tuple) (Vec Float))", "[f (Tensor 1 Float)]", "(Tensor 1 Float)", "(Tuple)", ()),
    ("(edef f Float ((Vec Float) Integer))", "[f (Tuple (Tensor 1 Float) Integer)]",
     "(Tuple (Tensor 1 Float) Integer)", "Float", ()),
    ("(edef [f (Tuple Float)] Float (Tuple Float))", "[f (Tuple Float)]", "(Tuple Float)", "Float", ()),
    ("(edef [sufrev [f Float]] Float (Tuple Float Float))", "[sufrev [f Float]]", "(Tuple Float Float)",
     "Float", ()),
    ("(edef [D [f Float]] (LM Float Float) Float)", "[D [f Float]]", "Float", "(LM Float Float)", ()),
    ("(edef g (Lam Float Float) Integer)", "[g Integer]", "Integer", "(Lam Float Float)", ()),
])
def test_spellings(text: str, name: str, arg: str, ret: str, params: tuple[str, ...]) -> None:
    d = one(text)
    assert str(d.name) == name
    assert d.arg_type == parse_type(arg) and d.return_type == parse_type(ret)
    assert d.param_names == params
    assert d.origin == text[1:text.index(" ")]


def test_comments_rules_and_file_order() -> None:
    text = """; header comment
#| a block comment #| nested (def hidden Float (x : Float) x) |# still inside |#
(def a Float (x : Float) x) ; trailing
(rule "a_zero" (x : Float) (a 0.0) 0.0)
(edef b Integer (Integer Integer))
#| (edef c Float Float) |#
(def c Bool () true)
"""
    assert [str(d.name) for d in ksbind.parse_ks(text)] == ["[a Float]", "[b (Tuple Integer Integer)]",
                                                           "[c (Tuple)]"]


def test_locations() -> None:
    decls = ksbind.parse_ks("\n  (edef f Float Float)\n(def g Float (x : Float) x)", "m.ks")
    assert [d.location for d in decls] == [Location("m.ks", 2, 3), Location("m.ks", 3, 1)]


@pytest.mark.parametrize("kind", ["fwd", "rev", "sufrev", "CL"])
def test_gdef_derives(kind: str) -> None:
    decls = ksbind.parse_ks(f"(def f (Vec Float) ((a : Float) (t : Vec Float)) t)\n(gdef {kind} [f (Tuple Float (Vec Float))])")
    base, derived = decls
    assert derived == base.derive(kind)
    assert derived.origin == "gdef" and derived.location == Location("<string>", 2, 1)


def test_gdef_before_its_def_and_stated_derivations_win() -> None:
    decls = ksbind.parse_ks("""
(gdef sufrev [f Float])
(edef f Float Float)
(edef [sufrev [f Float]] Float (Tuple Float Float))
(gdef sufrev [f Float])
""")
    assert [str(d.name) for d in decls] == ["[f Float]", "[sufrev [f Float]]"]
    assert decls[1].origin == "edef"


def test_gdef_of_gdef() -> None:
    decls = ksbind.parse_ks("(edef f Float Float)(gdef rev [f Float])(gdef fwd [rev [f Float]])")
    assert decls[-1].cpp_symbol == "fwd$rev$f$af"


@pytest.mark.parametrize("kind", ["suffwdpass", "sufrevpass", "shape"])
def test_gdef_needing_the_body_tells_to_use_the_kso(kind: str) -> None:
    with pytest.raises(DeclarationError, match=r"\.kso") as info:
        ksbind.parse_ks(f"(edef f Float Float)\n(gdef {kind} [f Float])", "m.ks")
    assert info.value.location == Location("m.ks", 2, 1)


def test_kso_states_body_dependent_signatures() -> None:
    # A .kso restates every generated function with its full type; nothing to derive.
    kso = """(def f Float (x : Float) x)
(def [suffwdpass [f Float]] (Tuple Float (Tuple)) (x : Float) (tuple x (tuple)))
(def [sufrevpass [f Float]] Float ((ddr : Float) (bog : (Tuple))) ddr)"""
    decls = ksbind.parse_ks(kso, "m.kso")
    assert [d.cpp_symbol for d in decls] == ["f$af", "suffwdpass$f$af", "sufrevpass$f$af"]
    assert decls[2].cpp_param_types == ["ks::Float", "ks::Tuple<>"]


def test_restated_declaration_is_kept_once() -> None:
    decls = ksbind.parse_ks("(edef f Float Float)\n(def f Float (x : Float) x)\n(edef f Float (Float))")
    assert len(decls) == 1
    assert decls[0].param_names == ("x",)  # the def's names are kept for keyword arguments


#: A small aten-style vocabulary: a plain name with ``::`` in it, and derivations of it written
#: as ksc allows in a def or edef, on the plain name (ksc finds [f S] from the argument type).
ATEN_STYLE = """\
(edef aten::foo (Vec Float) (Tuple (Vec Float) Integer))
(def [fwd aten::foo] (Vec Float) ((xi : Tuple (Vec Float) Integer) (dxi : Tuple (Vec Float) (Tuple)))
  (let ((dx _) dxi) dx))
(def [rev aten::foo] (Tuple (Vec Float) (Tuple)) ((xi : Tuple (Vec Float) Integer) (dr : Vec Float))
  (tuple dr (tuple)))
(edef [shape aten::foo] Integer (Tuple (Vec Float) Integer))
(edef [shape [rev aten::foo]] (Tuple (Vec (Tuple)) (Tuple)) (Tuple (Tuple (Vec Float) Integer) (Vec Float)))
(def [suffwdpass aten::bar] (Tuple Float Float) (x : Float) (tuple x x))
(edef [D aten::bar] (LM Float Float) (Float))
"""


def test_plain_derivations_of_aten_style_names() -> None:
    """``(def [rev aten::foo] ...)``: the structured name [rev [aten::foo S]] with S the first of
    the (S, dret) argument; ``[shape [rev aten::foo]]`` read from the outside in; ``:`` mangled
    to ``$8`` as ksc does (its .cpp calls ``rev$aten$8$8mul$aT2fT2f``)."""
    from ksbind.lang.reader import scan_ks

    source = scan_ks(ATEN_STYLE, "aten_style.ks")
    got = [(str(d.name), d.cpp_symbol, d.origin) for d in source.decls]
    foo = "[aten::foo (Tuple (Tensor 1 Float) Integer)]"
    assert got == [
        (foo, "aten$8$8foo$aT1fi", "edef"),
        (f"[fwd {foo}]", "fwd$aten$8$8foo$aT1fi", "def"),
        (f"[rev {foo}]", "rev$aten$8$8foo$aT1fi", "def"),
        (f"[shape {foo}]", "shape$aten$8$8foo$aT1fi", "edef"),
        (f"[shape [rev {foo}]]", "shape$rev$aten$8$8foo$aT1fi", "edef"),
        ("[suffwdpass [aten::bar Float]]", "suffwdpass$aten$8$8bar$af", "def"),
        ("[D [aten::bar Float]]", "D$aten$8$8bar$af", "edef"),
    ]
    assert [d.param_names for d in source.decls][1:3] == [("xi", "dxi"), ("xi", "dr")]
    # each derivation is the one the primal's signature derives (same argument and result)
    primal = source.decls[0]
    for kind, decl in (("fwd", source.decls[1]), ("rev", source.decls[2])):
        derived = primal.derive(kind)
        assert (derived.name, derived.arg_type, derived.return_type) == (decl.name, decl.arg_type,
                                                                         decl.return_type)
    # the same forms written with full structured names read to the same declarations
    full = ATEN_STYLE.replace("[shape [rev aten::foo]]", f"[shape [rev {foo}]]")
    for kind in ("fwd", "rev", "shape"):
        full = full.replace(f"[{kind} aten::foo]", f"[{kind} {foo}]")
    assert [d.name for d in scan_ks(full).decls] == [d.name for d in source.decls]


@pytest.mark.parametrize("text,fragment", [
    # sufrevpass's argument does not say its primal's (ksc cannot tell it either)
    ("(edef [sufrevpass aten::foo] Float (Tuple Float Float))", "argument type cannot be told"),
    # rev's argument is a pair (S, dret): a single Float is not one, at any depth
    ("(edef [rev aten::foo] Float Float)", "argument type cannot be told"),
    ("(edef [shape [rev aten::foo]] Float Float)", "argument type cannot be told"),
])
def test_plain_derivations_that_say_no_primal(text: str, fragment: str) -> None:
    with pytest.raises(DeclarationError, match=fragment):
        ksbind.parse_ks(text, "bad.ks")


@pytest.mark.parametrize("text,error,fragment,line,column", [
    ("(edef f Float Float)\n(edef f Integer Float)", DeclarationError, "different signature", 2, 1),
    ("(gdef sufrev [g Float])", DeclarationError, r"no def or edef of \[g Float\]", 1, 1),
    ("(gdef grad [g Float])", DeclarationError, "unknown derivation", 1, 7),
    ("(gdef sufrev g)", DeclarationError, "structured name", 1, 14),
    ("(defn f Float (x : Float) x)", DeclarationError, "did you mean 'def'", 1, 2),
    ("(edef f Float)", DeclarationError, "edef takes 3 parts", 1, 1),
    ("(def f Float (x : Float))", DeclarationError, "def takes 4 parts", 1, 1),
    ("(def f Float (x Float) x)", DeclarationError, "expected a parameter", 1, 15),
    ("(def f Float ((x : Float) (x : Integer)) x)", DeclarationError, "appears twice", 1, 27),
    ("(def f Float (x :) x)", DeclarationError, "no type after ':'", 1, 14),
    ("(edef [f Float] Float Integer)", DeclarationError, "the name says Float", 1, 7),
    ("(edef fwd Float Float)", DeclarationError, "is a derivation", 1, 7),
    ("(edef [sufrev f] Float Float)", DeclarationError, "is a derivation", 1, 7),
    ("(edef [blah [f Float]] Float Float)", DeclarationError, "unknown derivation 'blah'", 1, 8),
    ("(edef [f] Float Float)", DeclarationError, "structured name is", 1, 7),
    ('(edef "f" Float Float)', DeclarationError, "expected a function name", 1, 7),
    ("(edef f Flot Float)", KsTypeError, "did you mean 'Float'", 1, 9),
    ("(edef f Float (Tensor 2))", KsTypeError, "Tensor takes 2 arguments", 1, 15),
    ("(edef f Float (Vec Float Float))", KsTypeError, "Vec takes 1 argument", 1, 15),
    ("(edef f Float (Tensor 0 Float))", KsTypeError, "between 1 and", 1, 23),
    ("(edef f Float Float", KsSyntaxError, "unbalanced", 1, 1),
    ("edef", DeclarationError, "expected a top-level form", 1, 1),
])
def test_errors(text: str, error: type[KsbindError], fragment: str, line: int, column: int) -> None:
    with pytest.raises(error, match=fragment) as info:
        ksbind.parse_ks(text, "bad.ks")
    assert info.value.location == Location("bad.ks", line, column)
    assert str(info.value).startswith(f"bad.ks:{line}:{column}: ")


def test_read_ks_file_and_the_bundled_example() -> None:
    decls = ksbind.read_ks(REPO / "examples" / "relu3" / "relu3.ks")
    assert [d.cpp_symbol for d in decls] == ["relu3$af", "sufrev$relu3$af", "vrelu3$aT1f", "sufrev$vrelu3$aT1f"]
    assert decls[0].location is not None and decls[0].location.file.endswith("relu3.ks")


def test_read_ks_errors(tmp_path: Path) -> None:
    with pytest.raises(KsbindError, match="not found"):
        ksbind.read_ks(tmp_path / "missing.ks")
    with pytest.raises(KsbindError, match="directory"):
        ksbind.read_ks(tmp_path)
    bad = tmp_path / "latin1.ks"
    bad.write_bytes(b"(edef f Float Float)\n; caf\xe9\n")
    with pytest.raises(KsbindError, match="not valid UTF-8") as info:
        ksbind.read_ks(bad)
    assert info.value.location == Location(str(bad), 2, 6)
    fifo = tmp_path / "pipe.ks"
    os.mkfifo(fifo)
    with pytest.raises(KsbindError, match="not a regular file"):  # and never blocks on open
        ksbind.read_ks(fifo)


def test_a_scanned_text_is_scanned_once_and_a_changed_prelude_again(tmp_path: Path) -> None:
    """ksc's prelude is scanned by the ksc step and the resolver: once per text, and again when
    the file changes (its names are read from the file every time, not remembered by path)."""
    from ksbind.ksc.planner import prelude_names
    from ksbind.lang.reader import scan_ks_text

    text = "(edef foo Float (Float))\n"
    assert scan_ks_text(text, "p.ks") is scan_ks_text(text, "p.ks")
    prelude = tmp_path / "prelude.ks"
    prelude.write_text(text)
    assert prelude_names(prelude) == {"foo"}
    prelude.write_text("(edef bar Float (Float))\n(def baz Float (x : Float) x)\n")
    assert prelude_names(prelude) == {"bar", "baz"}
