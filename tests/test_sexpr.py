"""The s-expression reader: nodes, positions, comments, strings, and its errors."""
from __future__ import annotations

import gc
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksbind.errors import KsbindError, KsSyntaxError, Location
from ksbind.lang.sexpr import MAX_DEPTH, Atom, SList, gc_paused, parse_sexprs


def test_lists_atoms_and_positions() -> None:
    [form] = parse_sexprs("(edef [f Float]\n  Float Float)", "x.ks")
    assert isinstance(form, SList) and form.bracket == "(" and form.loc == Location("x.ks", 1, 1)
    head, name, ret, arg = form.items
    assert head == Atom("edef", Location("x.ks", 1, 2))
    assert isinstance(name, SList) and name.bracket == "[" and name.loc == Location("x.ks", 1, 7)
    assert ret.loc == Location("x.ks", 2, 3) and arg.loc == Location("x.ks", 2, 9)
    assert str(form) == "(edef [f Float] Float Float)"


def test_comments_are_skipped_and_block_comments_nest() -> None:
    text = """; line comment (not a form
#| outer #| inner ) |# still comment ] |#
(a) ; trailing
#|| odd |#
(b #| inside |# c)"""
    forms = parse_sexprs(text)
    assert [str(f) for f in forms] == ["(a)", "(b c)"]
    assert forms[1].loc.line == 5


def test_strings_keep_escapes_and_brackets() -> None:
    [form] = parse_sexprs(r'(rule "a (b] \"q\" \\ \n" x)')
    assert isinstance(form, SList)
    s = form.items[1]
    assert isinstance(s, Atom) and s.is_string and s.text == 'a (b] "q" \\ \n'
    assert str(parse_sexprs(str(form))[0]) == str(form)


def test_empty_text_has_no_forms() -> None:
    assert parse_sexprs("") == [] and parse_sexprs("  ; only a comment\n #| and |# ") == []


@pytest.mark.parametrize("text,line,column,fragment", [
    ("(a b", 1, 1, "unbalanced '('"),
    ("(a\n [b c)", 2, 6, "')' closes the '[' opened at line 2, column 2"),
    ("(a))", 1, 4, "unexpected ')'"),
    ("]", 1, 1, "unexpected ']'"),
    ('(a "abc)', 1, 4, "unterminated string"),
    ('"abc\ndef"', 1, 1, "unterminated string"),
    ("(a) #| never closed", 1, 5, "unterminated '#|'"),
    ("#| #| |#", 1, 1, "unterminated '#|'"),
])
def test_syntax_errors(text: str, line: int, column: int, fragment: str) -> None:
    with pytest.raises(KsSyntaxError) as info:
        parse_sexprs(text, "bad.ks")
    assert info.value.location == Location("bad.ks", line, column)
    assert fragment in info.value.message


def test_nesting_limit() -> None:
    ok = "(" * MAX_DEPTH + ")" * MAX_DEPTH
    assert len(parse_sexprs(ok)) == 1
    with pytest.raises(KsSyntaxError, match="nested more than"):
        parse_sexprs("(" * 10_000 + ")" * 10_000)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('()[]";#| \nab\\')), max_size=60))
def test_bracket_soup_never_crashes(text: str) -> None:
    try:
        forms = parse_sexprs(text)
    except KsbindError as e:
        assert isinstance(e, KsSyntaxError) and e.location is not None and e.location.line is not None
    else:
        # What parsed prints back to text that parses to the same structure.
        assert [str(f) for f in parse_sexprs(" ".join(str(f) for f in forms))] == [str(f) for f in forms]


def test_gc_paused_pauses_only_a_lone_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector is the process's: paused while reading only when no other Python thread is alive."""
    assert gc.isenabled()
    # This session may have threads of its own alive (the session modules' build pools):
    # the lone-thread case is what active_count says.
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the outer one re-enables it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()

    monkeypatch.undo()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        with gc_paused():
            assert gc.isenabled()  # another thread is alive: its garbage must not wait on ours
        assert gc.isenabled()
    finally:
        release.set()
        other.join()
