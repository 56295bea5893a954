"""ksbind.compile's front end without ksc: what each construct translates to, the signatures
calls are keyed by, and the errors for Python it does not read (at the user's file:line:col)."""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import ksbind
from ksbind.frontend.program import translate_program
from ksbind.frontend.signature import Signature, SignatureError, signature_of
from ksbind.frontend.source import FrontendError
from ksbind.frontend.vocabulary import CONSTRUCTS, construct_rows, operation_of
from ksbind.lang.reader import scan_ks_text
from ksbind.lang.types import FLOAT, INTEGER, parse_type
from tests import frontend_functions as ff

REPO = Path(__file__).resolve().parent.parent
V1, M2 = parse_type("(Vec Float)"), parse_type("(Tensor 2 Float)")


def ks_of(fn: Any, *params: Any, mode: str = "plain") -> str:
    t = translate_program(fn, Signature(tuple(params), mode))  # type: ignore[arg-type]
    scan_ks_text(t.ks_text, "<test>")  # ksbind's own reader takes every form the front end writes
    return t.ks_text


def test_sqrl_is_one_loop_with_the_branch_inside() -> None:
    text = ks_of(ff.sqrl, M2)
    # -0.125 * x, x ** 2, sin(t) * t and the mean's sum: one loop over x, adding up as it goes
    assert text.count("(def ksb_sumzip") == 1 and "(def ksb_zip" not in text, text
    assert re.search(r"\(def ksb_ew1 Float\s+\(\(x_i : Float\) \(c : Bool\)\)", text), text  # the branch's Bool inside
    assert "(sum x)" in text and "(map" not in text  # torch.sum(x) of x itself stays ks's sum
    flat = " ".join(text.split())
    assert "(def ksb_sumzip1 Float ((a1 : (Tensor 2 Float)) (s1 : Bool)) (sumbuild (size a1)" in flat
    # the mean divides by x's element count (not a made tensor's), and each element's gradient is the sum's
    assert "(s (ksb_sumzip1 x c))) (div s (to_float (mul (get$1$2 (size x)) (get$2$2 (size x)))))" in flat
    assert re.search(r"\(def \[sufrevpass \[ksb_sumzip1 [^]]*\]\] \(Tuple \(Tensor 2 Float\) \(Tuple\)\) "
                     r"\(\(dr : Float\)", flat), flat
    # its derivatives loop once per value of the branch's Bool: no branch left inside the loop
    assert "(if s1 (tuple (build (size a1)" in flat and "(tuple (index ix a1) true) dr)" in flat, flat
    assert "(tuple (index ix a1) false) dr)" in flat and "(index ix a1) s1) dr)" not in flat


def test_a_zip_and_a_sum_of_the_same_elementwise_code_share_one_kernel() -> None:
    text = " ".join(ks_of(ff.sum_and_values, M2, FLOAT).split())
    # sin(x) * a summed and returned: one kernel, two helpers; x * x * a averaged: a second kernel
    assert text.count("(def ksb_ew") == 2 and "(def ksb_zip1 " in text and "(def ksb_sumzip1 " in text, text
    assert "(def ksb_sumzip2 Float" in text and "(def ksb_zip2 " not in text
    # the scalar's gradient adds up every element's, each given the sum's one gradient dr
    assert re.search(r"\(sumbuild \(size a1\) \(lam \(ix : \(Tuple Integer Integer\)\) \(get\$2\$2 "
                     r"\(\[sufrev \[ksb_ew2 [^]]*\]\] \(tuple \(index ix a1\) s1\) dr\)\)\)\)", text), text


def test_two_tensor_elementwise_code_gets_a_zip_helper_with_written_derivatives() -> None:
    text = ks_of(ff.where_max, V1, V1)
    for derived in ("suffwdpass", "sufrevpass", "rev"):
        assert re.search(rf"\(def \[{derived} \[ksb_zip1 ", text), derived
    assert "[fwd [ksb_zip1" not in text  # ksc derives it (and the [D ksb_zip1] a caller's fwd needs)
    assert re.search(r"\(assert\s+\(eq \(size a2\) \(size a1\)\)", text)  # shapes must agree: no broadcasting


def test_a_returned_tuples_items_are_lets() -> None:
    # ksc's reverse pass of a tuple naming one variable in three items calls a dup$3 its runtime lacks
    text = " ".join(ks_of(ff.three_values, V1, FLOAT).split())
    assert text.endswith("(tuple z z_1 r r_1 r_2)))"), text  # the zips are lets too (z, z_1)


def test_relu3_in_elementwise_mode_is_a_scalar_def() -> None:
    t = translate_program(ff.relu3, Signature((FLOAT,), "elementwise"))
    assert str(t.entry) == "[ksb_fast_relu3 Float]" and t.result_type == FLOAT and t.differentiable
    assert "(mul 0.3333333333333333 (mul (mul x x) x))" in " ".join(t.ks_text.split())  # 1 / 3 * x ** 3, folded and unrolled


def test_elementwise_branches_are_selects_in_the_forward_and_ifs_in_the_vjp() -> None:
    t = translate_program(ff.relu3, Signature((FLOAT,), "elementwise"))
    scan_ks_text(t.ks_text, "<test>")
    flat = " ".join(t.ks_text.split())
    # the function as written, from which ksc derives the vjp: its branches are ifs
    assert "(def relu3 Float (x : Float) (let ((c (lt x 0.0))) (if c 0.0" in flat, flat
    assert all(f"(gdef {d} [relu3 Float])" in flat for d in ("suffwdpass", "sufrevpass", "sufrev"))
    # the forward kernel the binding calls: every branch computed, one chosen by a call of ksb_select
    assert "(def ksb_select Float ((c : Bool) (a : Float) (b : Float)) (if c a b))" in flat
    assert ("(def ksb_fast_relu3 Float (x : Float) (let ((c (lt x 0.0))) (ksb_select c 0.0 (let ((c_1 (lt x 1.0))) "
            "(ksb_select c_1 (mul 0.3333333333333333 (mul (mul x x) x)) (sub x 0.6666666666666666)))))") in flat
    # its vjp is the written function's
    assert ("(def [sufrev [ksb_fast_relu3 Float]] Float ((xt : Float) (dr : Float)) ([sufrev [relu3 Float]] xt dr))"
            in flat)
    two = " ".join(ks_of(ff.two_branches, FLOAT, FLOAT, mode="elementwise").split())
    assert ("(def [sufrev [ksb_fast_two_branches (Tuple Float Float)]] (Tuple Float Float) "
            "((xt : (Tuple Float Float)) (dr : Float)) ([sufrev [two_branches (Tuple Float Float)]] xt dr))") in two
    assert two.count("(ksb_select ") == 2 and two.count("(def ksb_select ") == 1
    # left as written: no branch (gelu), a branch calling another def, and any mode but elementwise
    for fn, mode in ((ff.gelu, "elementwise"), (ff.branch_calls_a_function, "elementwise"), (ff.relu3, "plain")):
        t = translate_program(fn, Signature((FLOAT,), mode))  # type: ignore[arg-type]
        assert "ksb_select" not in t.ks_text and str(t.entry) == f"[{fn.__name__} Float]", t.ks_text


def test_calls_become_defs_of_their_own() -> None:
    text = ks_of(ff.calls_helper, V1)
    assert "(def helper_square (Tensor 1 Float)" in text and "(def helper_square Float" in text
    assert text.index("(def helper_square") < text.index("(def calls_helper")  # callees first
    assert "sigmoid" in ks_of(ff.gelu_approx_sigmoid, FLOAT)
    assert "(def helper_square (Tensor 1 Float)" in ks_of(ff.calls_compiled, V1)  # a ksbind.compile function


def test_loops_are_folds_and_comprehensions_builds() -> None:
    t = translate_program(ff.accumulate, Signature((V1, INTEGER), "plain"))
    assert "(fold" in t.ks_text and t.folds and "ksb_zip" not in t.ks_text  # rev needs inline builds
    assert "(sumbuild" in ks_of(ff.generator_sum, V1)
    assert "(build" in ks_of(ff.comprehension, V1)


def test_knossos_front_end_cases_translate() -> None:
    assert "(if" in ks_of(ff.bar, INTEGER, FLOAT)
    text = " ".join(ks_of(ff.far, M2, M2).split())
    assert "(build (tuple" in text  # torch.cat along dim 1


@pytest.mark.parametrize("fn,params", [
    (ff.arithmetic, (FLOAT, FLOAT)), (ff.integers, (INTEGER, INTEGER)), (ff.comparisons, (FLOAT, FLOAT)),
    (ff.branch_reassign, (FLOAT, INTEGER)), (ff.math_calls, (FLOAT,)), (ff.tensor_calls, (M2,)),
    (ff.reductions, (M2,)), (ff.matrix_ops, (M2, V1)), (ff.shapes_and_indexing, (M2,)),
    (ff.loop_over_tensor, (V1,)), (ff.stacked, (V1, V1)), (ff.gelu, (FLOAT,)),
])
def test_every_construct_translates(fn: Any, params: tuple[Any, ...]) -> None:
    ks_of(fn, *params)


def _line_of(fn: Any, needle: str) -> tuple[int, int]:
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if needle in line:
            return first + k, line.index(needle) + 1
    raise AssertionError(needle)


@pytest.mark.parametrize("fn,params,needle,words", [
    (ff.uses_while, (FLOAT,), "while x", "while loop"),
    (ff.uses_print, (FLOAT,), "print(x)", "print"),
    (ff.mutates_list, (FLOAT,), "out.append", "for their effect"),
    (ff.assigns_element, (V1,), "x[0]", "in place"),
    (ff.slices, (V1,), "x[1:]", "slices"),
    (ff.unknown_call, (FLOAT,), "math.gamma", "math.gamma"),
    (ff.truthiness, (FLOAT,), "if x:", "truthiness"),
])
def test_refused_python_is_located_in_the_users_file(fn: Any, params: tuple[Any, ...], needle: str,
                                                     words: str) -> None:
    with pytest.raises(FrontendError) as info:
        translate_program(fn, Signature(params, "plain"))
    e = info.value
    assert isinstance(e, ksbind.KsbindError)
    assert e.location is not None and e.location.file == ff.__file__
    line, column = _line_of(fn, needle)
    assert e.location.line == line, str(e)
    assert e.location.column is not None and abs(e.location.column - column) <= 4, str(e)
    assert words in e.message and "docs/frontend.md" in e.message


def test_a_path_without_return_is_refused() -> None:
    with pytest.raises(FrontendError, match="every path must return"):
        translate_program(ff.no_return, Signature((FLOAT,), "plain"))


def test_unreadable_functions_are_refused() -> None:
    with pytest.raises(FrontendError, match="not a Python function"):
        translate_program(len, Signature((FLOAT,), "plain"))
    with pytest.raises(FrontendError, match="lambda"):
        translate_program(lambda x: x, Signature((FLOAT,), "plain"))
    namespace: dict[str, Any] = {}
    exec("def typed_at_a_prompt(x):\n    return x\n", namespace)  # no file to read it from
    with pytest.raises(FrontendError, match="cannot be read"):
        translate_program(namespace["typed_at_a_prompt"], Signature((FLOAT,), "plain"))


BLOCKS = '''
import functools


@functools.lru_cache(
    maxsize=None)
def decorated(x: float) -> float:
    y = x + 1.0

    # a comment between statements
    return y * 2.0
def one_line(x: float) -> float: return x * 3.0


def continued(x: float) -> float:
    y = (x +
1.0)
    return y


def documented(x: float) -> float:
    """A docstring with a line
at column 0."""
    return x


def outer() -> object:
    def inner(x: float) -> float:
        if x < 0.0:
            return -x
        return x
    return inner
'''


def test_a_defs_lines_are_found_by_indentation_as_the_tokenizer_finds_them(tmp_path: Path) -> None:
    """read_function finds a def's lines by their indentation (inspect's tokenizer is slow); where a
    line of the def sits at its indentation (a continuation, a docstring's line), the cut text does
    not parse and the tokenizer finds them: the same tree and first line as inspect's either way."""
    import ast
    import importlib.util
    import textwrap

    from ksbind.frontend.source import read_function

    path = tmp_path / "blocks.py"
    path.write_text(BLOCKS)
    spec = importlib.util.spec_from_file_location("ksbind_test_blocks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for fn in (module.decorated.__wrapped__, module.one_line, module.continued, module.documented,
               module.outer()):
        lines, first = inspect.getsourcelines(fn)
        expected = ast.parse(textwrap.dedent("".join(lines))).body[0]
        read = read_function(fn)
        assert ast.dump(read.tree) == ast.dump(expected), fn.__name__
        assert read.first_line == first, fn.__name__


def test_signatures_from_arguments() -> None:
    sig = signature_of([torch.zeros(3, 4), 1.0, 2, True, torch.tensor(1.5)], list("abcde"), "plain", "f")
    assert [str(p) for p in sig.params] == ["(Tensor 2 Float)", "Float", "Integer", "Bool", "Float"]
    assert [str(p) for p in signature_of([torch.zeros(5, 2, 3)], ["x"], "vmap", "f").params] == ["(Tensor 2 Float)"]
    assert signature_of([torch.zeros(7)], ["x"], "elementwise", "f").params == (FLOAT,)
    assert [str(p) for p in signature_of([[[1.0, 2.0]]], ["x"], "plain", "f").params] == ["(Tensor 2 Float)"]
    with pytest.raises(SignatureError, match="float64.*x.float()"):
        signature_of([torch.zeros(2, dtype=torch.float64)], ["x"], "plain", "f")
    with pytest.raises(SignatureError, match="int64.*x.int()"):
        signature_of([torch.zeros(2, dtype=torch.int64)], ["x"], "plain", "f")
    with pytest.raises(SignatureError, match="str"):
        signature_of(["text"], ["x"], "plain", "f")


def test_the_table_resolves_python_objects_by_identity() -> None:
    import math

    assert operation_of(math.sin) == "sin" and operation_of(torch.sin) == "sin"
    assert operation_of(torch.nn.functional.relu) == "relu" and operation_of(abs) == "abs"
    assert operation_of(print) is None


def test_docs_print_the_table() -> None:
    page = (REPO / "docs" / "frontend.md").read_text()
    for python, ks, _note in construct_rows():
        assert f"| {python} | {ks} |" in page, python
    assert len(construct_rows()) == len(CONSTRUCTS)


def test_compile_checks_its_options_before_reading_anything() -> None:
    with pytest.raises(ksbind.KsbindError, match="target"):
        ksbind.compile(ff.relu3, target="nonsense")  # type: ignore[call-overload]
    with pytest.raises(ksbind.KsbindError, match="mode must be one of"):
        ksbind.compile(ff.relu3, mode="rowwise")  # type: ignore[call-overload]
    compiled = ksbind.compile(ff.relu3, mode="elementwise")
    assert compiled.__wrapped__ is ff.relu3 and compiled.__name__ == "relu3" and compiled.ks is None


def test_a_let_of_two_names_is_not_read_as_a_tuple_pattern() -> None:
    """(let ((a x) (b y)) ...) is ks's tuple pattern (a x) bound to a call of b: the front end
    nests such lets."""
    from ksbind.frontend.ir import Let, Var, to_node

    a, x, b, y = (Var(n, FLOAT) for n in "axby")
    assert str(to_node(Let((("a", x), ("b", y)), b))) == "(let ((a x)) (let ((b y)) b))"


def test_an_if_on_a_tensor_says_what_to_write_instead() -> None:
    with pytest.raises(FrontendError, match="torch.where.*mode='elementwise'"):
        translate_program(ff.relu3, Signature((V1,), "plain"))
