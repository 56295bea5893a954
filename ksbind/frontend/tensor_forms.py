"""The ks forms of tensor-shaped library functions: sizes, reductions over one dim, ``cat``,
``stack``, ``matmul``, ``transpose`` and ``prod``, each a ``build``, ``sumbuild`` or ``fold``
over index variables the translation names.

They ask the translation that uses them (translate.py's Translator) only for what the
``Builder`` protocol lists: fresh names, let-bound variables, a value as a ks expression, errors
at the user's line.
"""
from __future__ import annotations

import ast
from typing import Protocol

from ksbind.frontend.ir import Expr, Get, If, Lam, Let, Lit, Tup, Var, call, lit_float, lit_int
from ksbind.frontend.source import FrontendError
from ksbind.frontend.values import Comprehension, PyList, PyTuple, Value
from ksbind.lang.types import BOOL, FLOAT, INTEGER, ScalarType, TensorType, TupleType


class FoldNoter(Protocol):
    def note_fold(self) -> None:
        """A fold was written (its vjp can only be ksc's rev)."""
        ...


class Builder(Protocol):
    """What the forms ask of the translation (translate.py's Translator)."""

    @property
    def program(self) -> FoldNoter: ...

    def fresh(self, hint: str) -> str: ...

    def bind(self, value: Expr, hint: str = "t") -> Var: ...

    def simple(self, value: Expr, hint: str = "t") -> Expr: ...

    def error(self, message: str, node: ast.AST | None = None) -> FrontendError: ...

    def materialize(self, value: Value) -> Expr: ...


def to_float(x: Expr) -> Expr:
    """An Integer as a Float (a literal converted now); any other value as it is."""
    if x.type == FLOAT:
        return x
    if x.type == INTEGER:
        if isinstance(x, Lit):
            return lit_float(float(x.value))
        return call("to_float", FLOAT, x)
    return x


def prod(vec: Expr, tr: Builder) -> Expr:
    """The product of a vector's elements: a fold (ks has no product)."""
    pair = Var(tr.fresh("acc_x"), TupleType((FLOAT, FLOAT)))
    tr.program.note_fold()
    body = call("mul", FLOAT, Get(1, pair), Get(2, pair))
    return call("fold", FLOAT, Lam(pair, body), lit_float(1.0), vec)


def size_of(tr: Builder, tensor: Expr, i: int) -> Expr:
    t = tensor.type
    if not isinstance(t, TensorType):
        raise tr.error(f"the size of a ks {t}")
    if i < 0:
        i += t.rank
    if not 0 <= i < t.rank:
        raise tr.error(f"dimension {i} of a rank-{t.rank} tensor")
    size = call("size", INTEGER if t.rank == 1 else TupleType((INTEGER,) * t.rank), tr.simple(tensor, "x"))
    return size if t.rank == 1 else Get(i + 1, size)


def element_count(tr: Builder, x: Var, t: TensorType) -> Expr:
    count: Expr = size_of(tr, x, 0)
    for d in range(1, t.rank):
        count = call("mul", INTEGER, count, size_of(tr, x, d))
    return count


def reduce_dim(tr: Builder, op: str, x: Var, t: TensorType, dim: int) -> Expr:
    if t.rank != 2:
        raise tr.error("a reduction over one dim of a tensor of rank above 2")
    d = dim % 2
    keep = Var(tr.fresh("i"), INTEGER)
    over = Var(tr.fresh("k"), INTEGER)
    where = Tup((over, keep)) if d == 0 else Tup((keep, over))
    element = call("index", FLOAT, where, x)
    if op == "prod":
        vec = call("build", TensorType(1, FLOAT), size_of(tr, x, d), Lam(over, element))
        inner = prod(vec, tr)
    else:
        inner = call("sumbuild", FLOAT, size_of(tr, x, d), Lam(over, element))
        if op == "mean":
            inner = call("div", FLOAT, inner, to_float(size_of(tr, x, d)))
    return call("build", TensorType(1, FLOAT), size_of(tr, x, 1 - d), Lam(keep, inner))


def concatenate(tr: Builder, parts_value: Value, dim: int) -> Expr:
    parts = tensor_parts(tr, parts_value, "cat")
    first = parts[0].type
    if not isinstance(first, TensorType) or any(p.type != first for p in parts):
        raise tr.error("cat joins tensors of one rank and element type")
    rank = first.rank
    d = dim % rank
    result = parts[0]
    for p in parts[1:]:
        result = cat2(tr, tr.bind(result, "cat"), tr.bind(p, "cat"), first, d)
    return result


def cat2(tr: Builder, a: Var, b: Var, t: TensorType, d: int) -> Expr:
    na = tr.simple(size_of(tr, a, d), "n")
    if t.rank == 1:
        i = Var(tr.fresh("i"), INTEGER)
        body = If(call("lt", BOOL, i, na), call("index", t.element, i, a),
                  call("index", t.element, call("sub", INTEGER, i, na), b))
        return call("build", t, call("add", INTEGER, na, size_of(tr, b, 0)), Lam(i, body))
    if t.rank != 2:
        raise tr.error("cat of tensors of rank above 2")
    ij = Var(tr.fresh("ij"), TupleType((INTEGER, INTEGER)))
    i, j = Var(tr.fresh("i"), INTEGER), Var(tr.fresh("j"), INTEGER)
    shifted = Tup((call("sub", INTEGER, i, na), j)) if d == 0 else Tup((i, call("sub", INTEGER, j, na)))
    own = i if d == 0 else j
    pick = If(call("lt", BOOL, own, na), call("index", t.element, Tup((i, j)), a),
              call("index", t.element, shifted, b))
    other = size_of(tr, a, 1 - d)
    total = call("add", INTEGER, na, size_of(tr, b, d))
    shape = Tup((total, other)) if d == 0 else Tup((other, total))
    return call("build", t, shape, Lam(ij, Let((((i.name, j.name), ij),), pick)))


def tensor_parts(tr: Builder, value: Value, what: str) -> list[Expr]:
    if isinstance(value, PyList | PyTuple):
        if not value.items:
            raise tr.error(f"{what} of no tensors")
        return [tr.materialize(i) for i in value.items]
    raise tr.error(f"{what} takes a list or tuple of tensors written in the call")


def stack(tr: Builder, value: Value, dim: int) -> Expr:
    if dim != 0:
        raise tr.error("stack along a dim other than 0")
    if isinstance(value, Comprehension):
        body_t = value.body.type
        if isinstance(body_t, ScalarType):
            return call("build", TensorType(1, body_t), value.count, Lam(value.index, value.body))
        if isinstance(body_t, TensorType) and body_t.rank == 1:
            rows = tr.bind(call("build", TensorType(1, body_t), value.count, Lam(value.index, value.body)),
                             "rows")
            return rows_to_matrix(tr, rows, body_t)
        raise tr.error(f"stack of a comprehension of ks {body_t}")
    items = [tr.materialize(i) for i in tensor_parts(tr, value, "stack")]
    t = items[0].type
    if any(i.type != t for i in items):
        items = [to_float(i) for i in items]
        t = items[0].type
        if any(i.type != t for i in items):
            raise tr.error("stack of values of different ks types")
    if isinstance(t, ScalarType):
        vars_ = [tr.simple(i, "v") for i in items]
        k = Var(tr.fresh("i"), INTEGER)
        body: Expr = vars_[-1]
        for n in range(len(vars_) - 2, -1, -1):
            body = If(call("eq", BOOL, k, lit_int(n)), vars_[n], body)
        return call("build", TensorType(1, t), lit_int(len(vars_)), Lam(k, body))
    if isinstance(t, TensorType) and t.rank == 1:
        vs = [tr.bind(i, "row") for i in items]
        ij = Var(tr.fresh("ij"), TupleType((INTEGER, INTEGER)))
        i, j = Var(tr.fresh("i"), INTEGER), Var(tr.fresh("j"), INTEGER)
        pick: Expr = call("index", t.element, j, vs[-1])
        for n in range(len(vs) - 2, -1, -1):
            pick = If(call("eq", BOOL, i, lit_int(n)), call("index", t.element, j, vs[n]), pick)
        shape = Tup((lit_int(len(vs)), size_of(tr, vs[0], 0)))
        return call("build", TensorType(2, t.element), shape, Lam(ij, Let((((i.name, j.name), ij),), pick)))
    raise tr.error(f"stack of ks {t}")


def rows_to_matrix(tr: Builder, rows: Var, row_t: TensorType) -> Expr:
    n = tr.simple(call("size", INTEGER, rows), "n")
    width = If(call("gt", BOOL, n, lit_int(0)), call("size", INTEGER, call("index", row_t, lit_int(0), rows)),
               lit_int(0))
    ij = Var(tr.fresh("ij"), TupleType((INTEGER, INTEGER)))
    i, j = Var(tr.fresh("i"), INTEGER), Var(tr.fresh("j"), INTEGER)
    body = Let((((i.name, j.name), ij),), call("index", row_t.element, j, call("index", row_t, i, rows)))
    return call("build", TensorType(2, row_t.element), Tup((n, width)), Lam(ij, body))


def matmul(tr: Builder, a: Value, b: Value) -> Expr:
    x, y = tr.materialize(a), tr.materialize(b)
    tx, ty = x.type, y.type
    if not (isinstance(tx, TensorType) and isinstance(ty, TensorType) and tx.element == FLOAT == ty.element):
        raise tr.error(f"matmul of a ks {tx} and a ks {ty} (Float tensors of rank 1 or 2 are translated)")
    if tx.rank == 1 and ty.rank == 1:
        return call("ts_dot", FLOAT, x, y)
    if tx.rank == 2 and ty.rank == 1:
        return call("mul", TensorType(1, FLOAT), x, y)
    if tx.rank == 1 and ty.rank == 2:
        return call("mul", TensorType(1, FLOAT), transpose(tr, y), x)
    if tx.rank == 2 and ty.rank == 2:
        m, n = tr.bind(x, "a"), tr.bind(y, "b")
        ij = Var(tr.fresh("ij"), TupleType((INTEGER, INTEGER)))
        i, j, k = Var(tr.fresh("i"), INTEGER), Var(tr.fresh("j"), INTEGER), Var(tr.fresh("k"), INTEGER)
        term = call("mul", FLOAT, call("index", FLOAT, Tup((i, k)), m), call("index", FLOAT, Tup((k, j)), n))
        total = call("sumbuild", FLOAT, size_of(tr, m, 1), Lam(k, term))
        shape = Tup((size_of(tr, m, 0), size_of(tr, n, 1)))
        return call("build", TensorType(2, FLOAT), shape, Lam(ij, Let((((i.name, j.name), ij),), total)))
    raise tr.error(f"matmul of ranks {tx.rank} and {ty.rank}")


def transpose(tr: Builder, value: Value) -> Expr:
    x = tr.materialize(value)
    t = x.type
    if not isinstance(t, TensorType) or t.rank not in (1, 2):
        raise tr.error(f"the transpose of a ks {t}")
    if t.rank == 1:
        return x
    m = tr.bind(x, "m")
    ij = Var(tr.fresh("ij"), TupleType((INTEGER, INTEGER)))
    i, j = Var(tr.fresh("i"), INTEGER), Var(tr.fresh("j"), INTEGER)
    body = Let((((i.name, j.name), ij),), call("index", t.element, Tup((j, i)), m))
    return call("build", t, Tup((size_of(tr, m, 1), size_of(tr, m, 0))), Lam(ij, body))


__all__ = ["Builder", "FoldNoter", "to_float", "prod", "size_of", "element_count", "reduce_dim", "concatenate", "cat2",
           "tensor_parts", "stack", "rows_to_matrix", "matmul", "transpose"]
