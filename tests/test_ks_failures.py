"""Errors about ks code and failures inside it, with the real ksc: messages that name the
binding, the ks function and what failed; load_ks errors located in the user's text; a
debug build's bounds checks; suggestions. One module per target and build, shared."""
from __future__ import annotations

import array
import dataclasses
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ksbind
from ksbind.errors import BindingError, ConfigError, KscError, KsSyntaxError
from tests.e2e_support import session_cache_dir
from tests.test_ksc import KSC, RUNTIME, needs_ksc

pytestmark = [needs_ksc]

TEXT = """\
(def vadd (Vec Float) ((a : Vec Float) (b : Vec Float)) (ts_add a b))
(def at10 Float (v : Vec Float) (index 10 v))
(def mv (Vec Float) ((m : Tensor 2 Float) (v : Vec Float))
  (let ((rows cols) (size m))
  (build rows (lam (i : Integer)
    (sumbuild cols (lam (j : Integer) (mul (index (tuple i j) m) (index j v))))))))
(def loss Float ((m : Tensor 2 Float) (v : Vec Float)) (sum (mv m v)))
"""
BINDINGS: list[Any] = ["vadd", "at10", {"name": "loss", "vjp": "loss_vjp"}]


def load(text: str = TEXT, **kw: Any) -> ModuleType:
    kw.setdefault("bindings", BINDINGS)
    return ksbind.load_ks(text, ksc=KSC, ksc_runtime=RUNTIME, cache_dir=session_cache_dir(), quiet=True, **kw)


@pytest.fixture(scope="module")
def on_python() -> ModuleType:
    return load(target="python")


@pytest.fixture(scope="module")
def on_ks() -> ModuleType:
    """The ks target's module is a debug build: one module fewer to compile, and failures are
    named in debug builds as in default ones."""
    return load(target="ks", debug=True, bindings=["vadd", "at10"])


def floats(target: str, values: list[float]) -> Any:
    return array.array("f", values) if target == "ks" else values


ASSERTION = ("vadd (ks function [vadd (Tuple (Tensor 1 Float) (Tensor 1 Float))]) "
             "failed an assertion in ks code: "
             "knossos.h:1192:Assert failed [a.size() == b.size()]")


@pytest.mark.parametrize("target", ["python", "ks"])
def test_a_ks_assertion_names_the_binding_the_function_and_the_condition(
        target: str, request: pytest.FixtureRequest, capfd: pytest.CaptureFixture[str]) -> None:
    m = request.getfixturevalue(f"on_{target}")
    capfd.readouterr()
    with pytest.raises(RuntimeError) as e:
        m.vadd(floats(target, [1, 2, 3]), floats(target, [1, 2]))
    assert str(e.value).startswith(ASSERTION), str(e.value)
    assert capfd.readouterr().err == ""  # ksc's runtime printed it too: now only with logging on
    m.logging(True)
    try:
        with pytest.raises(RuntimeError, match=re.escape(ASSERTION)):
            m.vadd(floats(target, [1, 2, 3]), floats(target, [1, 2]))
    finally:
        m.logging(False)
    assert "Assert failed [a.size() == b.size()]" in capfd.readouterr().err
    assert list(m.vadd(floats(target, [1, 2]), floats(target, [3, 4]))) == [4, 6]  # the module still works


def test_a_vjp_out_of_arena_says_why(on_python: ModuleType) -> None:
    m, n = on_python, 64
    matrix, v = [[1.0] * n for _ in range(n)], [1.0] * n
    assert m.loss(matrix, v) == n * n
    before = m.arena_bytes()
    m.set_arena_bytes(2_000_000)
    try:
        with pytest.raises(MemoryError) as e:
            m.loss_vjp(matrix, v, 1.0)
        text = str(e.value)
        assert text.startswith("loss_vjp (ks function [sufrev [loss (Tuple (Tensor 2 Float) (Tensor 1 Float))]]): "
                               "ks arena exhausted"), text
        assert "dense gradient" in text and "`index` inside a `build`" in text and "docs/ks.md#fast-vjps" in text
    finally:
        m.set_arena_bytes(before)
    assert m.loss_vjp([[1.0] * 4] * 4, [1.0] * 4, 1.0)[1] == [4.0] * 4


def test_a_debug_build_checks_indexing_and_names_the_binding(
        on_python: ModuleType, on_ks: ModuleType, capfd: pytest.CaptureFixture[str]) -> None:
    on_python.at10([1.0, 2.0, 3.0])  # a default build does not check: it reads past the tensor
    capfd.readouterr()
    with pytest.raises(RuntimeError) as e:
        on_ks.at10(array.array("f", [1.0, 2.0, 3.0]))
    assert str(e.value) == ("at10 (ks function [at10 (Tensor 1 Float)]) failed a check of the ks runtime: "
                            "Accessing element 10 of tensor of size 3")
    assert capfd.readouterr().err == ""
    assert on_ks.at10(array.array("f", range(11))) == 10.0


def test_load_ks_errors_are_located_in_the_users_text() -> None:
    with pytest.raises(KscError) as e:
        load("(def g Float (x : Float) x)\n\n(def f Float (x : Float)\n   (mul 2.0 (add x 1)))", bindings=None)
    text = str(e.value)
    assert text.startswith("<load_ks text>:4:13: ksc: Not in scope: userCall: [add (Tuple Float Integer)] "
                           "(in the definition of f): no add takes (Float, Integer): a Float and an Integer "
                           "added"), text
    assert "write 1.0 for 1" in text and "(to_float n)" in text and "cache" not in text
    with pytest.raises(KscError, match=r"^<load_ks text>:1:33: ksc: Not in scope: local var/tld: y "):
        load("(def f Float (x : Float) (add x y))", bindings=None)
    with pytest.raises(KsSyntaxError, match=r"^<load_ks text>:1:1: unbalanced '\('"):
        load("(def f Float (x : Float) (add x 1.0)\n", bindings=None)


def test_a_binding_at_a_wrong_type_suggests_the_declared_type() -> None:
    with pytest.raises(BindingError, match=re.escape(
            "no function [vadd (Tensor 1 Float)] is declared (did you mean '[vadd (Tuple (Tensor 1 Float) (Tensor 1 Float))]'? "
            "vadd is declared at that type only)")):
        load(bindings=[{"name": "v", "function": "[vadd (Vec Float)]"}])


def test_a_misspelled_binding_key_gets_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'vpj' in binding .* \(did you mean 'vjp'\?\)"):
        load(bindings=[{"name": "loss", "vpj": "loss_vjp"}])


def test_debug_builds_have_their_own_cache_keys(tmp_path: Path) -> None:
    from ksbind.backend.native import cache_key, compile_plan
    from ksbind.backend.toolchain import DEBUG_DIR, ks_include_dirs
    from ksbind.spec import ModuleSpec

    (tmp_path / "m.cpp").write_text("int f() { return 1; }\n")
    spec = ModuleSpec(name="m", config_path=tmp_path / "m.yaml", cpp=(tmp_path / "m.cpp",), output=tmp_path)
    debug = dataclasses.replace(spec, debug=True)
    plan, debug_plan = compile_plan(spec, []), compile_plan(debug, [])
    assert cache_key(plan, "ks") != cache_key(debug_plan, "ks")
    assert debug_plan.flags[-4:] == ("-O0", "-g", "-DKS_BOUNDS_CHECK", "-UNDEBUG")  # last: -O0 wins over -O2
    assert ks_include_dirs(debug)[0] == DEBUG_DIR and DEBUG_DIR not in ks_include_dirs(spec)


@pytest.mark.parametrize("target", ["python", "ks"])
def test_a_bad_call_shows_the_signature_and_the_types_not_the_tensors(
        target: str, request: pytest.FixtureRequest) -> None:
    m = request.getfixturevalue(f"on_{target}")
    big = floats(target, [float(i) for i in range(2000)])
    with pytest.raises(TypeError) as e:
        m.vadd(big, big, big)
    text = str(e.value)
    assert len(text) < 600 and "1999" not in text, text  # pybind11's message held every element
    assert "vadd(" in text and "incompatible function arguments" in text
    given = "array.array of 'f', shape (2000,)" if target == "ks" else "list, list, list"
    assert given in text, text
