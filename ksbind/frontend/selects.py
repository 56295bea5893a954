"""A scalar function's conditionals as selects: the forward kernel of ``mode="elementwise"``.

ksc writes a ks ``if`` as a C++ ``if`` statement, nested when the Python was an
``if``/``elif``/``else`` chain. g++ vectorises such a loop by computing every
branch under a mask, but the masks of nested statements cost it extra compares
and ands: relu3 over 1M floats took 125 us at one thread against a 85 us
``memcpy`` (C++ on this machine, the torch build's flags), and 90 us when each
``if`` was a call of ``ksb_select`` (below) on values computed before it, which
g++ turns into one blend per conditional. Both forms compute the same values, bit
for bit: each branch is the same arithmetic, only evaluated whether or not it is
taken.

Evaluating a branch not taken is only harmless for code that cannot fail or
trap, so the rewrite applies to a function whose whole body is scalar Float
and Bool arithmetic, comparisons and the prelude's math functions (no Integer
arithmetic: an Integer division by zero would crash, no ``index``, no calls
of other functions, no loops). The gradient must not come from the select form:
ksc's reverse pass of a branch not taken multiplies its zero gradient by the
branch's partial derivatives, which are infinite where they overflow (relu3's
x**3 has the partial x*x, infinite below -1.8e19), and 0 * inf is NaN where the
Python gives 0. So
the function keeps its own def, from which ksc derives the vjp, and the select
form is a second def whose vjp is written as a call of it (program.py).
"""
from __future__ import annotations

import dataclasses

from ksbind.frontend.ir import Call, Def, Expr, Get, If, Let, Lit, Tup, Var
from ksbind.lang.types import BOOL, FLOAT, KsType

#: The select every rewritten ``if`` calls: a function, so that ksc evaluates its arguments
#: before the call (ksc's optimiser moves a single-use ``let`` back into the branch it is used in).
SELECT = "ksb_select"

#: The prelude's functions that cannot fail on Floats and Bools (IEEE arithmetic gives inf and NaN;
#: the torch build has -fno-trapping-math and -fno-math-errno).
_SAFE_CALLS = frozenset(
    "add sub mul div neg lt gt lte gte eq ne and or not sin cos exp log sqrt tanh erf pow".split())
_SCALARS: tuple[KsType, ...] = (FLOAT, BOOL)


def select_def() -> Def:
    """``(def ksb_select Float ((c : Bool) (a : Float) (b : Float)) (if c a b))``."""
    c, a, b = Var("c", BOOL), Var("a", FLOAT), Var("b", FLOAT)
    return Def(SELECT, (c, a, b), If(c, a, b))


def eager_safe(e: Expr) -> bool:
    """Whether ``e`` may be evaluated when its value is not used: Float and Bool arithmetic only."""
    if isinstance(e, (Lit, Var)):
        return e.type in _SCALARS
    if isinstance(e, Call):
        return (isinstance(e.fn, str) and (e.fn in _SAFE_CALLS or e.fn == SELECT) and e.type in _SCALARS
                and all(eager_safe(a) for a in e.args))
    if isinstance(e, (Let, If, Tup, Get)):
        return all(eager_safe(c) for c in e.children())
    return False


def select_form(body: Expr) -> Expr | None:
    """``body`` with every Float ``if`` a call of ksb_select, or None when it has no such ``if``
    or is not eager-safe as a whole (see the module's docstring)."""
    if not eager_safe(body) or not any(isinstance(e, If) and e.type == FLOAT for e in body.walk()):
        return None
    return _rewrite(body)


def _rewrite(e: Expr) -> Expr:
    if isinstance(e, If):
        cond, then, other = _rewrite(e.cond), _rewrite(e.then), _rewrite(e.other)
        if e.type == FLOAT:
            return Call(SELECT, (cond, then, other), FLOAT)
        return If(cond, then, other)
    if isinstance(e, Call):
        return dataclasses.replace(e, args=tuple(_rewrite(a) for a in e.args))
    if isinstance(e, Let):
        return Let(tuple((names, _rewrite(v)) for names, v in e.binds), _rewrite(e.body))
    if isinstance(e, Tup):
        return Tup(tuple(_rewrite(i) for i in e.items))
    if isinstance(e, Get):
        return Get(e.index, _rewrite(e.tup))
    return e


__all__ = ["SELECT", "select_def", "eager_safe", "select_form"]
