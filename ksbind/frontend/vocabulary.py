"""The construct table: which Python functions and methods ksbind.compile reads, and the ks each becomes.

One table serves the translation (a callee is looked up here by identity) and
docs/frontend.md (``construct_rows`` prints it; a test checks the page agrees).
Scalar forms are written once, over ks Floats (each rule is given a name or a
literal, so it may repeat its argument); the translation lifts them over
tensors element by element.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ksbind.frontend.ir import Expr, If, call, lit_float
from ksbind.lang.types import BOOL, FLOAT

ScalarRule = Callable[[Expr], Expr]


def _f(name: str) -> ScalarRule:
    return lambda x: call(name, FLOAT, x)


def _neg(x: Expr) -> Expr:
    return call("neg", FLOAT, x)


#: Unary Float -> Float functions: name -> (rule, the ks it becomes).
UNARY: dict[str, tuple[ScalarRule, str]] = {
    "sin": (_f("sin"), "(sin x)"),
    "cos": (_f("cos"), "(cos x)"),
    "tan": (lambda x: call("div", FLOAT, call("sin", FLOAT, x), call("cos", FLOAT, x)), "(div (sin x) (cos x))"),
    "exp": (_f("exp"), "(exp x)"),
    "expm1": (lambda x: call("sub", FLOAT, call("exp", FLOAT, x), lit_float(1.0)), "(sub (exp x) 1.0)"),
    "log": (_f("log"), "(log x)"),
    "log1p": (lambda x: call("log", FLOAT, call("add", FLOAT, lit_float(1.0), x)), "(log (add 1.0 x))"),
    "sqrt": (_f("sqrt"), "(sqrt x)"),
    "rsqrt": (lambda x: call("div", FLOAT, lit_float(1.0), call("sqrt", FLOAT, x)), "(div 1.0 (sqrt x))"),
    "tanh": (_f("tanh"), "(tanh x)"),
    "sinh": (lambda x: call("mul", FLOAT, lit_float(0.5), call("sub", FLOAT, call("exp", FLOAT, x),
                                                              call("exp", FLOAT, _neg(x)))),
             "(mul 0.5 (sub (exp x) (exp (neg x))))"),
    "cosh": (lambda x: call("mul", FLOAT, lit_float(0.5), call("add", FLOAT, call("exp", FLOAT, x),
                                                              call("exp", FLOAT, _neg(x)))),
             "(mul 0.5 (add (exp x) (exp (neg x))))"),
    "sigmoid": (lambda x: call("div", FLOAT, lit_float(1.0), call("add", FLOAT, lit_float(1.0),
                                                                    call("exp", FLOAT, _neg(x)))),
                "(div 1.0 (add 1.0 (exp (neg x))))"),
    "erf": (_f("erf"), "(erf x)"),
    # the prelude's abs has no SUF passes (ksc could derive no sufrev through it)
    "abs": (lambda x: If(call("lt", BOOL, x, lit_float(0.0)), _neg(x), x), "(if (lt x 0.0) (neg x) x)"),
    "relu": (lambda x: If(call("gt", BOOL, x, lit_float(0.0)), x, lit_float(0.0)), "(if (gt x 0.0) x 0.0)"),
    "square": (lambda x: call("mul", FLOAT, x, x), "(mul x x)"),
    "neg": (_neg, "(neg x)"),
}


@dataclass(frozen=True)
class Construct:
    """One row of the table: an operation, its Python spellings, the ks it becomes, and a note."""

    op: str
    spellings: tuple[str, ...]
    ks: str
    note: str = ""


def _unary_row(name: str, extra: tuple[str, ...] = ()) -> Construct:
    spellings = (f"math.{name}", f"torch.{name}", f"Tensor.{name}", f"jax.numpy.{name}", *extra)
    return Construct(name, spellings, UNARY[name][1])


CONSTRUCTS: tuple[Construct, ...] = (
    _unary_row("sin"), _unary_row("cos"), _unary_row("tan"), _unary_row("exp"), _unary_row("expm1"),
    _unary_row("log"), _unary_row("log1p"), _unary_row("sqrt"), Construct("rsqrt", ("torch.rsqrt", "Tensor.rsqrt"),
                                                                           UNARY["rsqrt"][1]),
    _unary_row("tanh"), _unary_row("sinh"), _unary_row("cosh"),
    Construct("sigmoid", ("torch.sigmoid", "Tensor.sigmoid", "torch.nn.functional.sigmoid", "jax.nn.sigmoid"),
              UNARY["sigmoid"][1]),
    Construct("erf", ("math.erf", "torch.erf", "Tensor.erf", "torch.special.erf", "jax.scipy.special.erf",
                      "jax.lax.erf"), UNARY["erf"][1]),
    Construct("abs", ("abs", "math.fabs", "torch.abs", "Tensor.abs", "jax.numpy.abs"), UNARY["abs"][1]),
    Construct("relu", ("torch.relu", "Tensor.relu", "torch.nn.functional.relu", "jax.nn.relu"), UNARY["relu"][1]),
    Construct("square", ("torch.square", "Tensor.square", "jax.numpy.square"), UNARY["square"][1]),
    Construct("neg", ("torch.neg", "Tensor.neg", "jax.numpy.negative"), UNARY["neg"][1]),
    Construct("pow", ("pow", "math.pow", "torch.pow", "Tensor.pow", "jax.numpy.power"),
              "x ** n: (mul x x), (pow x n) for an integer n; (sqrt x) for 0.5; (exp (mul y (log x))) otherwise",
              "a float exponent needs x > 0, as exp/log compute it"),
    Construct("maximum", ("max", "torch.maximum", "torch.max", "Tensor.maximum", "jax.numpy.maximum"),
              "(if (gt a b) a b)", "of two values (torch.max(a, b)); not a reduction"),
    Construct("minimum", ("min", "torch.minimum", "torch.min", "Tensor.minimum", "jax.numpy.minimum"),
              "(if (lt a b) a b)", "of two values; not a reduction"),
    Construct("where", ("torch.where", "jax.numpy.where"), "(if c a b) per element"),
    Construct("sum", ("sum", "torch.sum", "Tensor.sum", "jax.numpy.sum"),
              "(sum t); over a dim: (build ... (sumbuild ...)); sum(e for i in range(n)): (sumbuild n (lam i e))",
              "dim=/axis= a literal int"),
    Construct("mean", ("torch.mean", "Tensor.mean", "jax.numpy.mean"),
              "(div (sum t) (to_float n)); over a dim as sum"),
    Construct("prod", ("math.prod", "torch.prod", "Tensor.prod", "jax.numpy.prod"),
              "(fold (lam (acc_x ...) (mul acc x)) 1.0 t)", "its vjp is ksc's rev (a fold)"),
    Construct("cat", ("torch.cat", "torch.concat", "jax.numpy.concatenate"),
              "(build (size) (lam i (if (lt i n1) (index i a) (index (sub i n1) b))))", "along a literal dim"),
    Construct("stack", ("torch.stack", "jax.numpy.stack"),
              "(build n (lam i ...)) of a comprehension or a list", "along dim 0"),
    Construct("matmul", ("@", "torch.matmul", "Tensor.matmul", "torch.mm", "Tensor.mm", "torch.mv", "Tensor.mv",
                         "jax.numpy.matmul"),
              "matrix @ vector: the prelude's (mul M v); vector @ vector: (ts_dot a b); "
              "matrix @ matrix: (build (tuple r c) (lam ij (sumbuild k ...)))"),
    Construct("dot", ("torch.dot", "Tensor.dot", "jax.numpy.dot", "jax.numpy.vdot"), "(ts_dot a b)"),
    Construct("transpose", ("torch.t", "Tensor.t", "Tensor.T", "torch.transpose", "Tensor.transpose",
                            "jax.numpy.transpose"),
              "(build (tuple c r) (lam ij (index (tuple j i) m)))", "rank 2"),
    Construct("size", ("len", "Tensor.shape", "Tensor.size", "jax.numpy.shape"),
              "(size t), (get$I$N (size t))", "len(x), x.shape[i], x.size(i); x.ndim and len(x.shape) are constants"),
    Construct("index", ("x[i]", "x[i, j]"), "(index i x), (index (tuple i j) x); a row x[i]: (build c (lam j ...))",
              "negative indices count from the end"),
    Construct("float", ("float", "Tensor.item", "Tensor.float"), "(to_float i) for an Integer; a Float as it is"),
    Construct("int", ("int",), "an Integer as it is", "int() of a Float has no ks form"),
    Construct("range", ("range",), "(build n (lam (i : Integer) ...)) in loops and comprehensions",
              "range(n), range(a, b), range(a, b, step) with a literal positive step"),
)

#: Python spelling -> operation name, where the spelling names a function (not a method or an operator).
_BY_SPELLING: dict[str, str] = {s: c.op for c in CONSTRUCTS for s in c.spellings}
#: Tensor method name -> operation name.
METHODS: dict[str, str] = {s.removeprefix("Tensor."): c.op for c in CONSTRUCTS for s in c.spellings
                           if s.startswith("Tensor.")}
METHODS.update({"sum": "sum", "mean": "mean", "prod": "prod", "max": "maximum", "min": "minimum"})

#: Per process: id() of each torch, math and jax.numpy function -> its operation, filled once
#: those modules are imported (the modules do not change under a running process).
_identity: dict[int, str] = {}
_identity_modules: frozenset[str] = frozenset()


def operation_of(obj: Any) -> str | None:
    """The table's operation for a Python callable, by identity (``torch.sin`` and a
    ``from math import sin``'s ``sin`` alike); None when the table has none."""
    global _identity, _identity_modules
    loaded = frozenset(m for m in ("math", "builtins", "torch", "torch.nn.functional", "torch.special", "jax.numpy",
                                   "jax.nn", "jax.scipy.special", "jax.lax", "numpy") if m in sys.modules)
    if loaded != _identity_modules:
        _identity = dict(_spelled_objects())
        _identity_modules = loaded
    return _identity.get(id(obj))


def _spelled_objects() -> Iterator[tuple[int, str]]:
    for spelling, op in _BY_SPELLING.items():
        if spelling.startswith("Tensor.") or not spelling.replace(".", "").isidentifier():
            continue
        module_name, _, attribute = spelling.rpartition(".")
        module = sys.modules.get(module_name or "builtins")
        obj = getattr(module, attribute, None) if module is not None else None
        if obj is not None:
            yield id(obj), op


def construct_rows() -> list[tuple[str, str, str]]:
    """The table as docs/frontend.md prints it: (Python, ks, note) per operation."""
    return [(", ".join(f"`{s}`" for s in c.spellings), f"`{c.ks}`" if c.ks.startswith("(") else c.ks, c.note)
            for c in CONSTRUCTS]
