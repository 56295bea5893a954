"""One Python function, at one signature, into one typed ks def.

The translation walks the function's ``ast`` with an environment of Python
names to *values* (values.py): a typed ks expression (``ir.Expr``), a Python constant
known while translating (``Static``: a literal, a module, a function, a
module-level number), a tuple or list of values, a tensor's shape, or an
elementwise tensor not yet made (``Elementwise``). Elementwise tensor code
(``torch.sin(t) * t``) stays a scalar expression over the elements of its
input tensors until a reduction, a return or a call needs the tensor; then it
becomes one call of a zip helper, a loop over the input tensors whose
derivatives ``program.py`` writes out element by element, so a chain of
elementwise operations is one loop, as a fused kernel would be.

Statements become ``let``s; an ``if`` becomes a ks ``if`` (its branches'
assignments joined into a tuple, or the rest of the function repeated in each
branch when a branch returns); a ``for`` over ``range`` accumulating into
names becomes a ``fold``; ``sum(e for i in range(n))`` a ``sumbuild`` and a
comprehension a ``build``. Anything else is a FrontendError at the user's
``file:line:col`` (``source.PythonSource.error``). The ks forms of tensor-shaped library
functions (``cat``, ``stack``, ``matmul``, one-dim reductions...) are tensor_forms.py's.
"""
from __future__ import annotations

import ast
import functools
import math
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Protocol

from ksbind.frontend import ir
from ksbind.frontend.ir import Def, Expr, Get, If, Lam, Let, Lit, Tup, Var, call, lit_float, lit_int
from ksbind.frontend.source import FrontendError, PythonSource
from ksbind.frontend.tensor_forms import (
    concatenate,
    element_count,
    matmul,
    prod,
    reduce_dim,
    size_of,
    stack,
    to_float,
    transpose,
)
from ksbind.frontend.values import (
    Comprehension,
    Elementwise,
    Method,
    PyList,
    PyTuple,
    RangeValue,
    Shape,
    Static,
    StaticCallable,
    Undefined,
    Value,
    is_number,
)
from ksbind.frontend.vocabulary import METHODS, UNARY, operation_of
from ksbind.lang.types import BOOL, FLOAT, INTEGER, KsType, ScalarType, TensorType, TupleType


class Program(Protocol):
    """What a translation asks of the program it is part of (``program.py``)."""

    use_helpers: bool  # elementwise loops as zip helpers (else inline builds: ksc's rev, for folds)

    def function(self, fn: Callable[..., Any], params: tuple[KsType, ...], caller: PythonSource,
                 node: ast.AST) -> tuple[str, KsType]:
        """The ks def of another Python function at these parameter types: its name and result type."""
        ...

    def zip_helper(self, tensors: tuple[Var, ...], elements: tuple[Var, ...], scalars: tuple[Var, ...],
                   body: Expr) -> str:
        """A def applying ``body`` (over ``elements`` and ``scalars``) to equally shaped tensors."""
        ...

    def sum_zip_helper(self, tensors: tuple[Var, ...], elements: tuple[Var, ...], scalars: tuple[Var, ...],
                       body: Expr) -> str:
        """A def returning the sum of ``body`` over the elements of equally shaped tensors."""
        ...

    def note_fold(self) -> None:
        """A fold was written (its vjp can only be ksc's rev)."""
        ...


#: Names ks code must not use for variables (ksc's keywords and primitives).
RESERVED = frozenset("""let if lam tuple build sumbuild map fold index size sum assert def edef gdef true false
    add sub mul div neg exp log sin cos tanh sqrt erf pow max abs lt gt lte gte eq and or not to_float
    ts_add ts_scale ts_dot ts_neg constVec deltaVec print Vec Tensor Tuple Float Integer Bool String Lam LM
    rule dup elim""".split())

_ARITH = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
          ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and", ast.BitOr: "or"}
_COMPARE = {ast.Lt: "lt", ast.Gt: "gt", ast.LtE: "lte", ast.GtE: "gte", ast.Eq: "eq", ast.NotEq: "ne"}
_PY_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "lt": lambda a, b: a < b, "gt": lambda a, b: a > b, "lte": lambda a, b: a <= b, "gte": lambda a, b: a >= b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


class Translator:
    """Translates one Python function at one signature (``translate()`` gives its Def)."""

    def __init__(self, src: PythonSource, params: Sequence[KsType], program: Program, def_name: str) -> None:
        self.src, self.program, self.def_name = src, program, def_name
        self.params = tuple(params)
        self.used: set[str] = set()
        self.lets: list[tuple[str | tuple[str, ...], Expr]] = []
        self.element_vars: dict[str, Var] = {}
        self._node: ast.AST = src.tree

    # -- entry

    def translate(self) -> Def:
        tree = self.src.tree
        args = tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error("parameters are plain positional names (no *args, **kwargs or keyword-only ones)",
                             tree)
        if args.defaults:
            raise self.error("parameters have no default values: every argument is given at the call", tree)
        names = [a.arg for a in args.args]
        if len(names) != len(self.params):
            raise self.error(f"{self.src.name} takes {len(names)} arguments; it was called with {len(self.params)}",
                             tree)
        env: dict[str, Value] = {}
        ks_params = []
        for n, t in zip(names, self.params):
            v = Var(self.fresh(n), t)
            ks_params.append(v)
            env[n] = v
        body = self.block(lambda: self.statements(list(tree.body), env))
        return Def(self.def_name, tuple(ks_params), body)

    # -- names, errors, lets

    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint).strip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        if base in RESERVED:
            base += "_v"
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def error(self, message: str, node: ast.AST | None = None) -> FrontendError:
        return self.src.error(message, node if node is not None else self._node)

    def bind(self, value: Expr, hint: str = "t") -> Var:
        """``value`` as a variable of the current block (a let before what follows)."""
        if isinstance(value, Var):
            return value
        v = Var(self.fresh(hint), value.type)
        self.lets.append((v.name, value))
        return v

    def simple(self, value: Expr, hint: str = "t") -> Expr:
        return value if ir.is_simple(value) else self.bind(value, hint)

    def block(self, make: Callable[[], Expr]) -> Expr:
        """``make()``'s expression after the lets it adds (a block of its own)."""
        saved, self.lets = self.lets, []
        try:
            result = make()
            return ir.let(self.lets, result)
        finally:
            self.lets = saved

    @contextmanager
    def at(self, node: ast.AST) -> Iterator[None]:
        saved, self._node = self._node, node
        try:
            yield
        finally:
            self._node = saved

    # -- statements

    def statements(self, stmts: list[ast.stmt], env: dict[str, Value]) -> Expr:
        """The value the function returns after ``stmts`` (each path must end in a return)."""
        for k, s in enumerate(stmts):
            with self.at(s):
                if isinstance(s, ast.Return):
                    if s.value is None:
                        raise self.error("a bare return: the function must return a value", s)
                    return self.materialize(self.expr(s.value, env))
                if isinstance(s, ast.If):
                    rest = stmts[k + 1:]
                    decided = self.static_condition(s.test, env)
                    if decided is not None:
                        return self.statements(list(s.body if decided else s.orelse) + rest, env)
                    if _returns(s):
                        cond = self.condition(s.test, env)
                        then = self.block(functools.partial(self.statements, list(s.body) + rest, dict(env)))
                        other = self.block(functools.partial(self.statements, list(s.orelse) + rest, dict(env)))
                        return self.joined_if(cond, then, other, s)
                    self.if_statement(s, env)
                    continue
                if _returns(s):
                    raise self.error(f"a return inside a {type(s).__name__.lower()} statement", s)
                self.statement(s, env)
        raise self.error(f"{self.src.name} can end without returning a value: every path must return one",
                         stmts[-1] if stmts else self.src.tree)

    def statement(self, s: ast.stmt, env: dict[str, Value]) -> None:
        """A statement that does not return: it changes ``env`` (and adds lets)."""
        if isinstance(s, ast.Assign):
            value = self.expr(s.value, env)
            for target in s.targets:
                self.assign(target, value, env)
        elif isinstance(s, ast.AnnAssign):
            if s.value is None:
                raise self.error("an annotation without a value", s)
            self.assign(s.target, self.expr(s.value, env), env)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise self.error("augmented assignment to something other than a name (a list or tensor "
                                 "changed in place has no ks form)", s)
            current = self.lookup(s.target.id, env, s.target)
            self.assign(s.target, self.binary(_op_name(s.op, s, self), current, self.expr(s.value, env)), env)
        elif isinstance(s, ast.If):
            self.if_statement(s, env)
        elif isinstance(s, ast.For):
            self.for_loop(s, env)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            pass  # a docstring
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Expr):
            raise self.error(f"an expression statement ({_describe_call(s.value)}): ks has no side effects, "
                             "so its value would be lost (print, a list's append and other calls for their effect "
                             "are not translated)", s)
        else:
            raise self.error(f"{_statement_name(s)} is not translated", s)

    def assign(self, target: ast.expr, value: Value, env: dict[str, Value]) -> None:
        with self.at(target):
            if isinstance(target, ast.Name):
                env[target.id] = self.named(value, target.id)
            elif isinstance(target, ast.Tuple | ast.List):
                items = self.unpack(value, len(target.elts))
                for t, v in zip(target.elts, items):
                    self.assign(t, v, env)
            elif isinstance(target, ast.Subscript):
                raise self.error("assignment into an element (x[i] = ...): ks values are never changed in place; "
                                 "build a new tensor (a comprehension, torch.where)", target)
            else:
                raise self.error(f"assignment to {type(target).__name__}", target)

    def named(self, value: Value, name: str) -> Value:
        """``value`` given a name: a computed expression is let-bound once, an elementwise
        tensor names its element expression (so uses do not repeat it)."""
        if isinstance(value, Expr):
            return self.simple(value, name)
        if isinstance(value, Elementwise):
            if ir.is_simple(value.body):
                return value
            e = Var(self.fresh(name + "_e"), value.body.type)
            return replace(value, binds=(*value.binds, (e.name, value.body)), body=e)
        return value

    def unpack(self, value: Value, n: int) -> tuple[Value, ...]:
        if isinstance(value, PyTuple | PyList):
            items = value.items
        elif isinstance(value, Static) and isinstance(value.value, tuple):
            items = tuple(Static(v) for v in value.value)
        elif isinstance(value, Shape):
            items = tuple(size_of(self, value.of, i) for i in range(ir.tensor_rank(value.of.type)))
        elif isinstance(value, Expr) and isinstance(value.type, TupleType):
            v = self.bind(value, "tup")
            items = tuple(Get(i + 1, v) for i in range(len(value.type.elements)))
        else:
            raise self.error(f"cannot take {self.describe(value)} apart into {n} names")
        if len(items) != n:
            raise self.error(f"{n} names for {len(items)} values")
        return items

    # -- if

    def static_condition(self, test: ast.expr, env: dict[str, Value]) -> bool | None:
        """The test's truth when it is known while translating (a constant, a shape's rank)."""
        saved = list(self.lets)
        value = self.expr(test, env)
        if isinstance(value, Static) and isinstance(value.value, bool | int | float):
            self.lets[:] = saved
            return bool(value.value)
        self.lets[:] = saved
        return None

    def condition(self, test: ast.expr, env: dict[str, Value]) -> Expr:
        value = self.expr(test, env)
        with self.at(test):
            if self.is_tensor(value):
                raise self.error("an if on a tensor's elements: a condition is one bool (a 0-dim tensor's value "
                                 "is one); for a choice per element use torch.where, or compile the function of "
                                 "floats with mode='elementwise'")
            c = self.scalar(value)
            if c.type != BOOL:
                raise self.error(f"a condition must be a comparison or a bool; this one is a ks {c.type} "
                                 "(Python's truthiness of numbers and tensors is not translated: write x != 0)")
            return self.simple(c, "c")

    def joined_if(self, cond: Expr, then: Expr, other: Expr, node: ast.AST) -> Expr:
        then, other = self.same_type(then, other, node, "the two branches return")
        return If(cond, then, other)

    def same_type(self, a: Expr, b: Expr, node: ast.AST, what: str) -> tuple[Expr, Expr]:
        if a.type == b.type:
            return a, b
        if {a.type, b.type} == {FLOAT, INTEGER}:
            return to_float(a), to_float(b)
        raise self.error(f"{what} values of different ks types, {a.type} and {b.type}: ks needs one type", node)

    def if_statement(self, s: ast.If, env: dict[str, Value]) -> None:
        decided = self.static_condition(s.test, env)
        if decided is not None:
            for st in s.body if decided else s.orelse:
                with self.at(st):
                    self.statement(st, env)
            return
        cond = self.condition(s.test, env)
        branches = []
        for body in (s.body, s.orelse):
            saved, self.lets = self.lets, []
            benv = dict(env)
            for st in body:
                with self.at(st):
                    self.statement(st, benv)
            branches.append((self.lets, benv))
            self.lets = saved
        (lets_t, env_t), (lets_e, env_e) = branches
        changed = [n for n in dict.fromkeys([*env_t, *env_e])
                   if env_t.get(n) is not env.get(n) or env_e.get(n) is not env.get(n)]
        joined: list[str] = []
        for n in changed:
            a, b = env_t.get(n), env_e.get(n)
            if a is None or b is None or isinstance(a, Undefined) or isinstance(b, Undefined):
                env[n] = Undefined(f"{n!r} is assigned in only one branch of the if at line "
                                   f"{self.src.location(s).line}")
            elif isinstance(a, Static) and isinstance(b, Static) and a.value == b.value:
                env[n] = a
            elif (isinstance(a, Elementwise) or isinstance(b, Elementwise)) and not lets_t and not lets_e \
                    and self.is_tensor(a) and self.is_tensor(b) and self.rank_of(a) == self.rank_of(b):
                # both branches elementwise: one loop choosing per element (the condition is one Bool)
                env[n] = self.named(self.where(cond, a, b), n)
            else:
                joined.append(n)
        if not joined:
            return
        pairs = []
        for lets, benv in ((lets_t, env_t), (lets_e, env_e)):
            saved, self.lets = self.lets, list(lets)
            values = [self.materialize(benv[n]) for n in joined]
            pairs.append((self.lets, values))
            self.lets = saved
        (lt, vt), (le, ve) = pairs
        fixed_t, fixed_e = [], []
        for n, a, b in zip(joined, vt, ve):
            a, b = self.same_type(a, b, s, f"{n!r} is given")
            fixed_t.append(a)
            fixed_e.append(b)
        if len(joined) == 1:
            v = self.bind(If(cond, ir.let(lt, fixed_t[0]), ir.let(le, fixed_e[0])), joined[0])
            env[joined[0]] = v
            return
        names = tuple(self.fresh(n) for n in joined)
        both = If(cond, ir.let(lt, Tup(tuple(fixed_t))), ir.let(le, Tup(tuple(fixed_e))))
        self.lets.append((names, both))
        for n, ks_name, value in zip(joined, names, fixed_t):
            env[n] = Var(ks_name, value.type)

    # -- for loops (fold)

    def for_loop(self, s: ast.For, env: dict[str, Value]) -> None:
        if s.orelse:
            raise self.error("a for loop with an else clause", s)
        for node in ast.walk(s):
            if isinstance(node, ast.Break | ast.Continue):
                raise self.error(f"{type(node).__name__.lower()} in a loop: a fold runs every iteration", node)
        if not isinstance(s.target, ast.Name):
            raise self.error("a for loop's variable must be one name", s.target)
        target = s.target.id
        count, element_of = self.loop_source(s.iter, env)
        assigned = list(dict.fromkeys(n.id for n in ast.walk(ast.Module(body=s.body, type_ignores=[]))
                                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)))
        state_names = [n for n in assigned if n in env and not isinstance(env[n], Undefined)]
        if not state_names:
            raise self.error("a for loop that changes no name defined before it computes nothing "
                             "(ks has no side effects)", s)
        initial = [self.materialize(env[n]) for n in state_names]
        types_ = [v.type for v in initial]
        for _attempt in range(2):
            acc = Var(self.fresh("acc"), TupleType(tuple(types_)) if len(types_) > 1 else types_[0])
            item = Var(self.fresh(s.target.id), INTEGER if element_of is None else element_of[1])
            pair = Var(self.fresh("acc_" + s.target.id), TupleType((acc.type, item.type)))
            state_vars = [Var(self.fresh(n), t) for n, t in zip(state_names, types_)]

            def body(state_vars: list[Var] = state_vars, item: Var = item, acc: Var = acc) -> Expr:
                benv = dict(env)
                for n, v in zip(state_names, state_vars):
                    benv[n] = v
                if len(state_vars) > 1:
                    self.lets.append((tuple(v.name for v in state_vars), acc))
                benv[target] = item
                for st in s.body:
                    with self.at(st):
                        self.statement(st, benv)
                values = [self.materialize(benv[n]) for n in state_names]
                return values[0] if len(values) == 1 else Tup(tuple(values))

            inner = self.block(body)
            result_types = list(inner.type.elements) if len(types_) > 1 and isinstance(inner.type, TupleType) \
                else [inner.type]
            if result_types == types_:
                break
            promoted = [FLOAT if {a, b} == {FLOAT, INTEGER} else a for a, b in zip(types_, result_types)]
            if promoted == types_ or any(a != b and {a, b} != {FLOAT, INTEGER} for a, b in zip(types_, result_types)):
                raise self.error(f"the loop changes the ks type of {', '.join(state_names)} "
                                 f"from {', '.join(map(str, types_))} to {', '.join(map(str, result_types))}", s)
            types_ = promoted
            initial = [to_float(v) if t == FLOAT else v for v, t in zip(initial, types_)]
        else:
            raise self.error("the loop's state has no single ks type", s)
        state = state_vars[0].name if len(state_vars) == 1 else acc.name
        lam_body: Expr = Let(((state, Get(1, pair)), (item.name, Get(2, pair))), inner)
        init = initial[0] if len(initial) == 1 else Tup(tuple(initial))
        source = self.loop_vector(count, element_of)
        self.program.note_fold()
        folded = call("fold", acc.type, Lam(pair, lam_body), init, source)
        if len(state_names) == 1:
            env[state_names[0]] = self.bind(folded, state_names[0])
        else:
            names = tuple(self.fresh(n) for n in state_names)
            self.lets.append((names, folded))
            for n, k, t in zip(state_names, names, types_):
                env[n] = Var(k, t)
        for n in assigned:
            if n not in state_names:
                env[n] = Undefined(f"{n!r} is first assigned inside the for loop at line "
                                   f"{self.src.location(s).line}, and a loop may run no iteration")

    def loop_source(self, it: ast.expr, env: dict[str, Value]) -> tuple[Expr, tuple[Var, KsType] | None]:
        """What a loop or comprehension runs over: (count, None) for a range (the index is the item),
        (count, (vector, element type)) for a 1-d tensor."""
        value = self.expr(it, env)
        if isinstance(value, RangeValue):
            return value.count, None
        with self.at(it):
            tensor = self.materialize(value)
            if isinstance(tensor.type, TensorType) and tensor.type.rank == 1:
                v = self.bind(tensor, "xs")
                return call("size", INTEGER, v), (v, tensor.type.element)
            raise self.error(f"a loop runs over range(...) or a 1-d tensor, not {self.describe(value)}")

    def loop_vector(self, count: Expr, element_of: tuple[Var, KsType] | None) -> Expr:
        if element_of is not None:
            return element_of[0]
        k = Var(self.fresh("k"), INTEGER)
        return call("build", TensorType(1, INTEGER), count, Lam(k, k))

    # -- expressions

    def lookup(self, name: str, env: dict[str, Value], node: ast.AST) -> Value:
        if name in env:
            value = env[name]
            if isinstance(value, Undefined):
                raise self.error(f"{name!r} may be undefined here: {value.why}", node)
            return value
        found, obj = self.src.lookup(name)
        if not found:
            raise self.error(f"name {name!r} is not defined", node)
        return Static(obj)

    def expr(self, node: ast.expr, env: dict[str, Value]) -> Value:
        with self.at(node):
            return self._expr(node, env)

    def _expr(self, node: ast.expr, env: dict[str, Value]) -> Value:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool | int | float) or node.value is None or isinstance(node.value, str):
                return Static(node.value)
            raise self.error(f"the constant {node.value!r}")
        if isinstance(node, ast.Name):
            return self.lookup(node.id, env, node)
        if isinstance(node, ast.BinOp):
            return self.binary(_op_name(node.op, node, self), self.expr(node.left, env), self.expr(node.right, env))
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand, env)
            if isinstance(node.op, ast.USub):
                return self.unary("neg", operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not | ast.Invert):
                return self.logical_not(operand)
            raise self.error(f"the operator {type(node.op).__name__}")
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            values = [self.expr(v, env) for v in node.values]
            result = values[0]
            for v in values[1:]:
                result = self.binary(op, result, v)
            return result
        if isinstance(node, ast.Compare):
            return self.compare(node, env)
        if isinstance(node, ast.IfExp):
            return self.if_expression(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.expr(node.value, env), node.attr)
        if isinstance(node, ast.Subscript):
            return self.subscript(self.expr(node.value, env), node.slice, env)
        if isinstance(node, ast.Tuple):
            return PyTuple(tuple(self.expr(e, env) for e in node.elts))
        if isinstance(node, ast.List):
            return PyList(tuple(self.expr(e, env) for e in node.elts))
        if isinstance(node, ast.ListComp | ast.GeneratorExp):
            return self.comprehension(node, env)
        if isinstance(node, ast.NamedExpr):
            raise self.error("an assignment expression (:=)")
        raise self.error(f"{_expression_name(node)} is not translated")

    def compare(self, node: ast.Compare, env: dict[str, Value]) -> Value:
        left = self.expr(node.left, env)
        result: Value | None = None
        for op, right_node in zip(node.ops, node.comparators):
            kind = _COMPARE.get(type(op))
            if kind is None:
                raise self.error(f"the comparison {type(op).__name__} (is, in: Python object identity and "
                                 "membership have no ks form)", node)
            right = self.expr(right_node, env)
            if len(node.ops) > 1 and isinstance(right, Expr):
                right = self.simple(right, "c")
            this = self.binary(kind, left, right)
            result = this if result is None else self.binary("and", result, this)
            left = right
        assert result is not None
        return result

    def if_expression(self, node: ast.IfExp, env: dict[str, Value]) -> Value:
        decided = self.static_condition(node.test, env)
        if decided is not None:
            return self.expr(node.body if decided else node.orelse, env)
        cond_value = self.expr(node.test, env)
        if isinstance(cond_value, Elementwise):
            return self.where(cond_value, self.expr(node.body, env), self.expr(node.orelse, env))
        cond = self.condition(node.test, env)
        then = self.block(lambda: self.materialize(self.expr(node.body, env)))
        other = self.block(lambda: self.materialize(self.expr(node.orelse, env)))
        return self.joined_if(cond, then, other, node)

    # -- turning values into ks expressions

    def materialize(self, value: Value) -> Expr:
        """``value`` as a ks expression (an elementwise tensor made, constants as literals)."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, Static):
            v = value.value
            if isinstance(v, bool):
                return ir.lit_bool(v)
            if isinstance(v, int):
                if not -2**31 <= v < 2**31:
                    raise self.error(f"the integer {v} does not fit ks's 32-bit Integer")
                return lit_int(v)
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise self.error(f"{v!r} has no ks literal (ks Float literals are finite)")
                return lit_float(v)
            raise self.error(f"{self.describe(value)} is not a ks value")
        if isinstance(value, Elementwise):
            return self.make_elementwise(value)
        if isinstance(value, PyTuple):
            # each item its own let: ksc's reverse pass of a tuple whose items share a variable
            # three or more times calls a dup$3 its runtime does not define
            return Tup(tuple(self.simple(self.materialize(i), "r") for i in value.items))
        if isinstance(value, PyList):
            return stack(self, value, 0)
        if isinstance(value, Comprehension):
            return call("build", TensorType(1, value.body.type), value.count, Lam(value.index, value.body))
        if isinstance(value, Shape):
            n = ir.tensor_rank(value.of.type)
            return Tup(tuple(self.materialize(size_of(self, value.of, i)) for i in range(n)))
        if isinstance(value, RangeValue):
            raise self.error("a range is read only by for loops and comprehensions")
        raise self.error(f"{self.describe(value)} is not a ks value")

    def scalar(self, value: Value) -> Expr:
        e = self.materialize(value)
        if not isinstance(e.type, ScalarType):
            raise self.error(f"expected a number or a bool here, found a ks {e.type}")
        return e

    def make_elementwise(self, ew: Elementwise) -> Expr:
        body = ir.let(ew.binds, ew.body)
        result = TensorType(ew.rank, body.type)
        if not self.program.use_helpers:  # ksc's rev (a fold's vjp) goes through build and index, not a helper
            first = ew.leaves[0][1]
            rank = ew.rank
            ix = Var(self.fresh("ix"), INTEGER if rank == 1 else TupleType((INTEGER,) * rank))
            picked = tuple((e.name, call("index", e.type, ix, t)) for e, t in ew.leaves)
            size_t = ix.type
            built: Expr = call("build", result, call("size", size_t, first), Lam(ix, Let(picked, body)))
            for _e, t in ew.leaves[1:]:
                built = call("assert", result, call("eq", BOOL, call("size", size_t, t),
                                                     call("size", size_t, first)), built)
            return built
        tensors, elements, scalars, body = self.zip_parts(ew)
        helper = self.program.zip_helper(tensors, elements, scalars, body)
        return self.bind(call(helper, result, *tensors, *scalars), "z")

    def zip_parts(self, ew: Elementwise) -> tuple[tuple[Var, ...], tuple[Var, ...], tuple[Var, ...], Expr]:
        """A zip helper's inputs: the tensors, their elements' names, the scalars the body reads, the body."""
        body = ir.let(ew.binds, ew.body)
        elements = tuple(e for e, _ in ew.leaves)
        tensors = tuple(t for _, t in ew.leaves)
        taken = {e.name for e in elements}
        scalars = tuple(v for n, v in body.free_vars().items() if n not in taken)
        return tensors, elements, scalars, body

    def as_elementwise(self, value: Value) -> Elementwise:
        if isinstance(value, Elementwise):
            return value
        tensor = self.materialize(value)
        assert isinstance(tensor.type, TensorType)
        t = self.bind(tensor, "x")
        e = self.element_vars.get(t.name)
        if e is None:  # one element name per tensor, so two uses of it share one loop input
            e = self.element_vars[t.name] = Var(self.fresh(t.name + "_i"), tensor.type.element)
        return Elementwise(tensor.type.rank, ((e, t),), (), e)

    def is_tensor(self, value: Value) -> bool:
        if isinstance(value, Elementwise | Comprehension | PyList):
            return True
        return isinstance(value, Expr) and isinstance(value.type, TensorType)

    def lift(self, values: Sequence[Value], rule: Callable[..., Expr]) -> Value:
        """``rule`` over scalars, or element by element when any value is a tensor."""
        if not any(self.is_tensor(v) for v in values):
            return rule(*(self.scalar(v) for v in values))
        rank = None
        leaves: dict[str, tuple[Var, Var]] = {}
        binds: dict[str, Expr] = {}
        bodies: list[Expr] = []
        for v in values:
            if self.is_tensor(v):
                ew = self.as_elementwise(v)
                if rank is not None and ew.rank != rank:
                    raise self.error(f"elementwise operation on tensors of ranks {rank} and {ew.rank}: "
                                     "broadcasting across ranks is not translated (make the ranks equal)")
                rank = ew.rank
                for element, tensor in ew.leaves:
                    if tensor.name in leaves and leaves[tensor.name][0] != element:
                        raise AssertionError("one tensor with two element names")
                    leaves.setdefault(tensor.name, (element, tensor))
                for name, e in ew.binds:
                    binds.setdefault(name, e)
                bodies.append(ew.body)
            else:
                bodies.append(self.simple(self.scalar(v), "s"))
        assert rank is not None
        bodies = [b if ir.is_simple(b) else self._inner(binds, b) for b in bodies]
        return Elementwise(rank, tuple(leaves.values()), tuple(binds.items()), rule(*bodies))

    def _inner(self, binds: dict[str, Expr], body: Expr) -> Var:
        v = Var(self.fresh("e"), body.type)
        binds[v.name] = body
        return v

    # -- operators

    def unary(self, op: str, value: Value) -> Value:
        if isinstance(value, Static) and is_number(value.value) and op == "neg":
            return Static(-value.value)
        rule = UNARY[op][0]

        def scalar_rule(x: Expr) -> Expr:
            if x.type == INTEGER:
                if op == "neg":
                    return call("neg", INTEGER, x)
                if op == "abs":
                    return If(call("lt", BOOL, x, lit_int(0)), call("neg", INTEGER, x), x)
                x = to_float(x)
            if x.type != FLOAT:
                raise self.error(f"{op} of a ks {x.type}")
            return rule(self.simple(x, "u") if not ir.is_simple(x) else x)

        if not self.is_tensor(value):
            return scalar_rule(self.simple(self.scalar(value), "u"))
        return self.lift([value], scalar_rule)

    def logical_not(self, value: Value) -> Value:
        if isinstance(value, Static):
            return Static(not value.value)
        return self.lift([value], lambda x: call("not", BOOL, self._bool(x)))

    def _bool(self, x: Expr) -> Expr:
        if x.type != BOOL:
            raise self.error(f"and/or/not take bools (comparisons); found a ks {x.type}")
        return x

    def binary(self, op: str, a: Value, b: Value) -> Value:
        if isinstance(a, Static) and isinstance(b, Static) and is_number(a.value) and is_number(b.value):
            return self.fold_constants(op, a.value, b.value)
        if op == "matmul":
            return matmul(self, a, b)
        if op == "pow":
            return self.power(a, b)
        if isinstance(a, Static) and isinstance(a.value, tuple) or isinstance(b, Static) and isinstance(
                b.value, tuple) or isinstance(a, PyTuple) or isinstance(b, PyTuple):
            raise self.error(f"{op} of tuples")
        return self.lift([a, b], lambda x, y: self.scalar_binary(op, x, y))

    def fold_constants(self, op: str, a: Any, b: Any) -> Static:
        try:
            if op in _PY_COMPARE:
                return Static(_PY_COMPARE[op](a, b))
            py = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
                  "floordiv": lambda: a // b, "mod": lambda: a % b, "pow": lambda: a ** b,
                  "and": lambda: a and b, "or": lambda: a or b}
            return Static(py[op]())
        except ZeroDivisionError:
            raise self.error("division by zero in constants") from None
        except KeyError:
            raise self.error(f"{op} of constants") from None

    def scalar_binary(self, op: str, x: Expr, y: Expr) -> Expr:
        if op in ("and", "or"):
            return call(op, BOOL, self._bool(x), self._bool(y))
        if x.type == BOOL or y.type == BOOL:
            if op in ("eq", "ne") and x.type == y.type:
                same = call("eq", BOOL, x, y)
                return same if op == "eq" else call("not", BOOL, same)
            if op == "mul":  # a mask times a value (torch promotes the bool)
                if x.type == BOOL:
                    x, y = y, x
                return If(y, x, _zero(x.type))
            raise self.error(f"{op} of a bool: arithmetic on bools is not translated (use torch.where)")
        if op == "div":
            x, y = to_float(x), to_float(y)
        elif x.type != y.type:
            if {x.type, y.type} != {FLOAT, INTEGER}:
                raise self.error(f"{op} of a ks {x.type} and a ks {y.type}")
            x, y = to_float(x), to_float(y)
        t = x.type
        if op in ("lt", "gt", "lte", "gte", "eq"):
            return call(op, BOOL, x, y)
        if op == "ne":
            return call("not", BOOL, call("eq", BOOL, x, y))
        if op in ("add", "sub", "mul", "div"):
            return call(op, t, x, y)
        if op in ("floordiv", "mod"):
            if t != INTEGER:
                raise self.error(f"{'//' if op == 'floordiv' else '%'} of Floats: ks's prelude has no floor "
                                 "for Floats (only Integer // and % are translated)")
            return _floor_div_mod(op, x, y, self)
        raise self.error(f"the operator {op}")

    def power(self, a: Value, b: Value) -> Value:
        if isinstance(b, Static) and is_number(b.value) and not isinstance(b.value, bool):
            n = b.value
            if isinstance(n, float) and n.is_integer():
                n = int(n)
            if isinstance(n, int):
                return self.lift([a], lambda x: _int_power(x, n, self))
            if n == 0.5:
                return self.unary("sqrt", a)
            return self.lift([a], lambda x: self._exp_log_power(x, lit_float(float(n))))
        return self.lift([a, b], self._dynamic_power)

    def _dynamic_power(self, x: Expr, y: Expr) -> Expr:
        if y.type == INTEGER and x.type == FLOAT:
            return call("pow", FLOAT, x, y)
        return self._exp_log_power(x, y)

    def _exp_log_power(self, x: Expr, y: Expr) -> Expr:
        x, y = to_float(x), to_float(y)
        return call("exp", FLOAT, call("mul", FLOAT, y, call("log", FLOAT, x)))

    # -- calls

    def call(self, node: ast.Call, env: dict[str, Value]) -> Value:
        for k in node.keywords:
            if k.arg is None:
                raise self.error("**kwargs in a call", node)
        callee = self.expr(node.func, env)
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error("*args in a call", node)
        op_name: str | None
        if isinstance(callee, Method):
            op_name = METHODS.get(callee.name)
            if op_name is None:
                raise self.error(f"the tensor method .{callee.name}() is not in the table")
            return self.operation(op_name, node, [callee.obj, *(self.expr(a, env) for a in node.args)],
                                  self.keywords(node, env), method=True)
        if not isinstance(callee, Static):
            raise self.error(f"calling {self.describe(callee)}")
        fn = callee.value
        if isinstance(fn, StaticCallable):
            args = [self.expr(a, env) for a in node.args]
            if not all(isinstance(a, Static) for a in args):
                raise self.error("a tensor constant's size() of a value known only at run time", node)
            return Static(fn.call(*(a.value for a in args)))  # type: ignore[union-attr]
        if fn is range:
            return self.range_value([self.expr(a, env) for a in node.args], node)
        if fn is sum and node.args and isinstance(node.args[0], ast.GeneratorExp | ast.ListComp):
            return self.generator_sum(node.args[0], env)
        if fn is len:
            if len(node.args) != 1:
                raise self.error("len() of one value")
            return self.length(self.expr(node.args[0], env))
        if fn is float or fn is int or fn is bool:
            if len(node.args) != 1:
                raise self.error(f"{fn.__name__}() of one value")
            return self.convert(fn.__name__, self.expr(node.args[0], env))
        op_name = operation_of(fn)
        if op_name is not None:
            return self.operation(op_name, node, [self.expr(a, env) for a in node.args], self.keywords(node, env))
        if fn is print:
            raise self.error("print: ks code has no output (print the result in Python)")
        wrapped = getattr(fn, "__ksbind_python__", None)
        if wrapped is not None:
            fn = wrapped
        if isinstance(fn, types.FunctionType):
            return self.user_call(fn, [self.expr(a, env) for a in node.args], node)
        if _is_tensor_factory(fn):
            return self.tensor_constant(fn, node, env)
        raise self.error(f"a call of {_name_of(fn)}, which is not in the table of translated functions")

    def keywords(self, node: ast.Call, env: dict[str, Value]) -> dict[str, Value]:
        return {k.arg: self.expr(k.value, env) for k in node.keywords if k.arg is not None}

    def user_call(self, fn: Callable[..., Any], args: list[Value], node: ast.Call) -> Value:
        if node.keywords:
            raise self.error("keyword arguments to a translated function (pass them by position)", node)
        exprs = [self.materialize(a) for a in args]
        name, result = self.program.function(fn, tuple(e.type for e in exprs), self.src, node)
        return call(name, result, *exprs)

    def operation(self, op: str, node: ast.Call, args: list[Value], kw: dict[str, Value],
                  method: bool = False) -> Value:
        dim = kw.pop("dim", kw.pop("axis", None))
        for k in ("keepdim", "keepdims"):
            if k in kw and not (isinstance(kw[k], Static) and kw[k].value is False):  # type: ignore[union-attr]
                raise self.error(f"{k}=True is not translated", node)
            kw.pop(k, None)
        if kw:
            raise self.error(f"the keyword argument {next(iter(kw))}= of {op}", node)
        if op in UNARY:
            self._arity(op, args, 1, node)
            return self.unary(op, args[0])
        if op in ("maximum", "minimum"):
            if len(args) != 2 or dim is not None:
                raise self.error(f"{'max' if op == 'maximum' else 'min'} of two values is translated; as a "
                                 "reduction (one tensor, or a dim) it is not", node)
            cmp = "gt" if op == "maximum" else "lt"
            return self.lift(args, lambda x, y: self._pick(cmp, x, y))
        if op == "pow":
            self._arity(op, args, 2, node)
            return self.power(args[0], args[1])
        if op == "where":
            self._arity(op, args, 3, node)
            return self.where(*args)
        if op in ("sum", "mean", "prod"):
            if len(args) == 2 and dim is None:
                dim = args.pop()
            self._arity(op, args, 1, node)
            return self.reduce(op, args[0], self.static_int(dim, "dim") if dim is not None else None)
        if op in ("cat", "stack"):
            if len(args) == 2 and dim is None:
                dim = args.pop()
            self._arity(op, args, 1, node)
            d = self.static_int(dim, "dim") if dim is not None else 0
            return concatenate(self, args[0], d) if op == "cat" else stack(self, args[0], d)
        if op in ("matmul", "dot"):
            self._arity(op, args, 2, node)
            return matmul(self, args[0], args[1])
        if op == "transpose":
            if len(args) == 3:
                dims = {self.static_int(args[1], "dim"), self.static_int(args[2], "dim")}
                if dims not in ({0, 1}, {0, -1}, {-2, 1}, {-2, -1}):
                    raise self.error("transpose of dims other than the two of a matrix", node)
                args = args[:1]
            self._arity(op, args, 1, node)
            return transpose(self, args[0])
        if op == "size":
            if len(args) == 2:
                return size_of(self, self.materialize(args[0]), self.static_int(args[1], "dim"))
            self._arity(op, args, 1, node)
            return self.shape(args[0])
        if op in ("float", "int"):
            self._arity(op, args, 1, node)
            return self.convert(op, args[0])
        raise self.error(f"{op} is not translated here")

    def _arity(self, op: str, args: list[Value], n: int, node: ast.AST) -> None:
        if len(args) != n:
            raise self.error(f"{op} takes {n} argument{'s' if n != 1 else ''} here; found {len(args)}", node)

    def _pick(self, cmp: str, x: Expr, y: Expr) -> Expr:
        if x.type != y.type:
            x, y = to_float(x), to_float(y)
        return If(call(cmp, BOOL, x, y), x, y)

    def static_int(self, value: Value | None, what: str) -> int:
        if isinstance(value, Static) and isinstance(value.value, int) and not isinstance(value.value, bool):
            return value.value
        raise self.error(f"{what} must be an integer known while translating (a literal or a module-level constant)")

    def convert(self, kind: str, value: Value) -> Value:
        if isinstance(value, Static) and is_number(value.value):
            return Static(float(value.value) if kind == "float" else int(value.value))
        x = self.scalar(value)
        if kind == "float":
            return to_float(x)
        if kind == "int":
            if x.type == INTEGER:
                return x
            raise self.error("int() of a Float: ks's prelude has no conversion from Float to Integer")
        if x.type != BOOL:
            raise self.error(f"bool() of a ks {x.type}: write a comparison")
        return x

    def length(self, value: Value) -> Value:
        if isinstance(value, PyTuple | PyList):
            return Static(len(value.items))
        if isinstance(value, Shape):
            return Static(ir.tensor_rank(value.of.type))
        if isinstance(value, Static) and hasattr(value.value, "__len__"):
            return Static(len(value.value))
        tensor = self.materialize(value)
        if not isinstance(tensor.type, TensorType):
            raise self.error(f"len() of a ks {tensor.type}")
        return size_of(self, tensor, 0)

    # -- tensors

    def attribute(self, value: Value, attr: str) -> Value:
        if isinstance(value, Static) and isinstance(value.value, list):
            if attr in ("shape", "size", "ndim", "dim"):
                shape = _static_shape(value.value)
                if attr == "shape":
                    return Static(shape)
                if attr == "ndim":
                    return Static(len(shape))
                return Static(StaticCallable(lambda *d: shape[d[0]] if d else shape) if attr == "size"
                              else StaticCallable(lambda: len(shape)))
            raise self.error(f"the attribute .{attr} of a tensor constant")
        if isinstance(value, Static):
            try:
                return Static(getattr(value.value, attr))
            except AttributeError:
                raise self.error(f"{_name_of(value.value)} has no attribute {attr!r}") from None
        if self.is_tensor(value):
            if attr == "shape":
                return self.shape(value)
            if attr == "ndim":
                return Static(self.rank_of(value))
            if attr == "T":
                return transpose(self, value)
            if attr in ("real",):
                return value
            return Method(value, attr)
        if isinstance(value, Expr) and isinstance(value.type, ScalarType):
            if attr in ("item", "float", "int", "sum", "mean") or attr in UNARY:
                return Method(value, attr)
        raise self.error(f"the attribute .{attr} of {self.describe(value)}")

    def rank_of(self, value: Value) -> int:
        if isinstance(value, Elementwise):
            return value.rank
        return ir.tensor_rank(self.materialize(value).type)

    def shape(self, value: Value) -> Shape:
        tensor = self.materialize(value)
        if not isinstance(tensor.type, TensorType):
            raise self.error(f"the shape of a ks {tensor.type}")
        return Shape(self.bind(tensor, "x") if not isinstance(value, Elementwise) else self.bind(tensor, "x"))

    def subscript(self, value: Value, index: ast.expr, env: dict[str, Value]) -> Value:
        if isinstance(index, ast.Slice) or (isinstance(index, ast.Tuple) and any(
                isinstance(e, ast.Slice) for e in index.elts)):
            raise self.error("slices (x[a:b], x[:, j]) are not translated: index single elements, or build "
                             "the part with a comprehension")
        if isinstance(value, Shape):
            return size_of(self, value.of, self.static_int(self.expr(index, env), "a shape's index"))
        items = [self.expr(e, env) for e in index.elts] if isinstance(index, ast.Tuple) else [self.expr(index, env)]
        if isinstance(value, PyTuple | PyList):
            k = self.static_int(items[0], "a tuple's index") if len(items) == 1 else None
            if k is None or not -len(value.items) <= k < len(value.items):
                raise self.error("a tuple or list index out of range")
            return value.items[k]
        if isinstance(value, Static) and isinstance(value.value, tuple | list):
            return Static(value.value[self.static_int(items[0], "a tuple's index")])
        tensor = self.materialize(value)
        if isinstance(tensor.type, TupleType):
            k = self.static_int(items[0], "a tuple's index")
            n = len(tensor.type.elements)
            if not -n <= k < n:
                raise self.error("a tuple index out of range")
            return Get(k % n + 1, tensor)
        if not isinstance(tensor.type, TensorType):
            raise self.error(f"indexing a ks {tensor.type}")
        t = self.bind(tensor, "x")
        rank = tensor.type.rank
        if len(items) > rank:
            raise self.error(f"{len(items)} indices into a rank-{rank} tensor")
        idx = [self._index(i, t, d) for d, i in enumerate(items)]
        if len(idx) == rank:
            where = idx[0] if rank == 1 else Tup(tuple(idx))
            return call("index", tensor.type.element, where, t)
        if rank == 2 and len(idx) == 1:  # a row
            j = Var(self.fresh("j"), INTEGER)
            row = call("index", tensor.type.element, Tup((idx[0], j)), t)
            return call("build", TensorType(1, tensor.type.element), size_of(self, t, 1), Lam(j, row))
        raise self.error(f"{len(items)} indices into a rank-{rank} tensor (index every dimension, or a matrix's row)")

    def _index(self, value: Value, tensor: Var, dim: int) -> Expr:
        if isinstance(value, Static) and isinstance(value.value, int) and value.value < 0:
            return self.simple(call("sub", INTEGER, size_of(self, tensor, dim), lit_int(-value.value)), "i")
        i = self.scalar(value)
        if i.type != INTEGER:
            raise self.error(f"an index must be an Integer; found a ks {i.type}")
        return self.simple(i, "i")

    def where(self, cond: Value, a: Value, b: Value) -> Value:
        def rule(c: Expr, x: Expr, y: Expr) -> Expr:
            if x.type != y.type:
                x, y = to_float(x), to_float(y)
            return If(self._bool(c), x, y)
        return self.lift([cond, a, b], rule)

    def reduce(self, op: str, value: Value, dim: int | None) -> Value:
        if isinstance(value, Comprehension) and op == "sum" and dim is None:
            return call("sumbuild", value.body.type, value.count, Lam(value.index, value.body))
        if (isinstance(value, Elementwise) and dim is None and op in ("sum", "mean") and self.program.use_helpers
                and value.body.type == FLOAT and not _is_bare(value)):
            # the sum of elementwise code: one loop adding the elements up, no tensor made
            tensors, elements, scalars, body = self.zip_parts(value)
            total: Expr = self.bind(call(self.program.sum_zip_helper(tensors, elements, scalars, body), FLOAT,
                                         *tensors, *scalars), "s")
            if op == "sum":
                return total
            first = tensors[0]
            assert isinstance(first.type, TensorType)
            return call("div", FLOAT, total, to_float(element_count(self, first, first.type)))
        tensor = self.materialize(value)
        t = tensor.type
        if not isinstance(t, TensorType):
            return tensor  # a sum of one number is the number
        if t.element != FLOAT:
            raise self.error(f"{op} of a tensor of {t.element}: reductions are translated over Floats")
        x = self.bind(tensor, "x")
        if dim is not None and t.rank > 1:
            return reduce_dim(self, op, x, t, dim)
        if dim is not None and dim not in (0, -1):
            raise self.error(f"dim {dim} of a rank-1 tensor")
        if op == "prod":
            if t.rank != 1:
                raise self.error("prod of a tensor of rank above 1 (reduce each dim in turn)")
            return prod(x, self)
        total = call("sum", FLOAT, x)
        if op == "sum":
            return total
        count = element_count(self, x, t)
        return call("div", FLOAT, total, to_float(count))

    def tensor_constant(self, fn: Any, node: ast.Call, env: dict[str, Value]) -> Value:
        if len(node.args) != 1 or node.keywords:
            raise self.error("torch.tensor(...) of one list written in the call, without keywords", node)
        value = self.expr(node.args[0], env)
        return value if isinstance(value, PyList | Comprehension) else Static(_static_nested(value, self))

    # -- ranges and comprehensions

    def range_value(self, args: list[Value], node: ast.AST) -> Value:
        if not 1 <= len(args) <= 3:
            raise self.error("range() of one to three values", node)
        if len(args) == 1:
            start: Expr = lit_int(0)
            stop = self.integer(args[0])
            step = 1
        else:
            start, stop = self.integer(args[0]), self.integer(args[1])
            step = self.static_int(args[2], "range's step") if len(args) == 3 else 1
            if step <= 0:
                raise self.error("range's step must be a positive literal", node)
        span = stop if isinstance(start, Lit) and start.value == 0 else call("sub", INTEGER, stop, start)
        if step != 1:
            span = call("div", INTEGER, call("add", INTEGER, span, lit_int(step - 1)), lit_int(step))
        count = self.simple(If(call("gt", BOOL, span, lit_int(0)), span, lit_int(0))
                            if not (isinstance(start, Lit) and start.value == 0 and step == 1) else span, "n")
        return RangeValue(count, self.simple(start, "start"), step)

    def integer(self, value: Value) -> Expr:
        e = self.scalar(value)
        if e.type != INTEGER:
            raise self.error(f"range() of a ks {e.type}: it takes Integers")
        return e

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp, env: dict[str, Value]) -> Comprehension:
        if len(node.generators) != 1:
            raise self.error("a comprehension with more than one for (nest two comprehensions instead)", node)
        g = node.generators[0]
        if g.ifs or g.is_async:
            raise self.error("a comprehension with an if filter (its length would depend on the data)", node)
        if not isinstance(g.target, ast.Name):
            raise self.error("a comprehension's variable must be one name", g.target)
        it = self.expr(g.iter, env)
        k = Var(self.fresh("i"), INTEGER)
        target = g.target.id

        def body() -> Expr:
            benv = dict(env)
            if isinstance(it, RangeValue):
                benv[target] = it.at(k)
            else:
                benv[target] = self._element_of(it, k)
            return self.materialize(self.expr(node.elt, benv))

        count = it.count if isinstance(it, RangeValue) else self._count_of(it)
        return Comprehension(count, k, self.block(body))

    def _count_of(self, it: Value) -> Expr:
        tensor = self.materialize(it)
        if not isinstance(tensor.type, TensorType) or tensor.type.rank != 1:
            raise self.error(f"a comprehension runs over range(...) or a 1-d tensor, not {self.describe(it)}")
        return size_of(self, self.bind(tensor, "xs"), 0)

    def _element_of(self, it: Value, k: Var) -> Expr:
        tensor = self.materialize(it)
        assert isinstance(tensor.type, TensorType)
        return call("index", tensor.type.element, k, self.simple(tensor, "xs"))

    def generator_sum(self, node: ast.GeneratorExp | ast.ListComp, env: dict[str, Value]) -> Expr:
        comp = self.comprehension(node, env)
        t = comp.body.type
        if t == INTEGER or t == FLOAT or isinstance(t, TensorType):
            return call("sumbuild", t, comp.count, Lam(comp.index, comp.body))
        raise self.error(f"sum of ks {t} values")

    # -- messages

    def describe(self, value: Value) -> str:
        if isinstance(value, Expr):
            return f"a ks {value.type}"
        if isinstance(value, Static):
            return _name_of(value.value)
        if isinstance(value, Elementwise):
            return f"a ks {value.type}"
        return {PyTuple: "a tuple", PyList: "a list", Comprehension: "a comprehension", Shape: "a shape",
                Method: "a method", RangeValue: "a range"}.get(type(value), type(value).__name__)


# ------------------------------------------------------------------ small rules


def _is_bare(ew: Elementwise) -> bool:
    """A tensor's own elements, nothing computed (its sum is ks's ``sum``)."""
    return not ew.binds and len(ew.leaves) == 1 and ew.body == ew.leaves[0][0]




def _zero(t: KsType) -> Expr:
    return lit_float(0.0) if t == FLOAT else lit_int(0)


def _int_power(x: Expr, n: int, t: Translator) -> Expr:
    if x.type == INTEGER and n >= 0:
        if n > 8:
            raise t.error("an Integer to a power above 8 (ks's prelude has no Integer pow)")
        result: Expr = lit_int(1)
        for _ in range(n):
            result = x if result == lit_int(1) else call("mul", INTEGER, result, x)
        return result
    x = to_float(x)
    if n == 0:
        return lit_float(1.0)
    magnitude = abs(n)
    if magnitude <= 4:
        result = x
        for _ in range(magnitude - 1):
            result = call("mul", FLOAT, result, x)
    else:
        result = call("pow", FLOAT, x, lit_int(magnitude))
    return result if n > 0 else call("div", FLOAT, lit_float(1.0), result)


def _floor_div_mod(op: str, x: Expr, y: Expr, t: Translator) -> Expr:
    """Python's // and % on Integers (they round toward minus infinity; ks's div truncates)."""
    y = t.simple(y, "d")
    q, r = Var(t.fresh("q"), INTEGER), Var(t.fresh("r"), INTEGER)
    # r != 0 and (r < 0) != (y < 0): step toward minus infinity
    adjust = call("and", BOOL, call("not", BOOL, call("eq", BOOL, r, lit_int(0))),
                  call("not", BOOL, call("eq", BOOL, call("lt", BOOL, r, lit_int(0)),
                                          call("lt", BOOL, y, lit_int(0)))))
    result = If(adjust, call("sub", INTEGER, q, lit_int(1)), q) if op == "floordiv" else If(
        adjust, call("add", INTEGER, r, y), r)
    return Let(((q.name, call("div", INTEGER, x, y)), (r.name, call("sub", INTEGER, x, call("mul", INTEGER, q, y)))),
               result)




#: Statements that hold no statement, so no return: most of a function, and walking each one's
#: expressions for a return was half of a long function's translation.
_SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass, ast.Assert, ast.Raise,
                      ast.Delete, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Break, ast.Continue)


def _returns(s: ast.stmt) -> bool:
    """Whether a return is anywhere in ``s``."""
    if isinstance(s, ast.Return):
        return True
    if isinstance(s, _SIMPLE_STATEMENTS):
        return False
    return any(isinstance(n, ast.Return) for n in ast.walk(s))


def _op_name(op: ast.operator, node: ast.AST, t: Translator) -> str:
    name = _ARITH.get(type(op))
    if name is None:
        raise t.error(f"the operator {type(op).__name__}", node)
    return name


def _statement_name(s: ast.stmt) -> str:
    names = {ast.While: "a while loop (its trip count depends on the data: write a for over range)",
             ast.With: "a with block", ast.Try: "try/except", ast.Raise: "raise", ast.Delete: "del",
             ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Import: "import", ast.ImportFrom: "import",
             ast.FunctionDef: "a nested def (define it at module level)", ast.ClassDef: "a class",
             ast.Assert: "assert"}
    return names.get(type(s), type(s).__name__)


def _expression_name(node: ast.expr) -> str:
    names = {ast.Lambda: "a lambda", ast.Dict: "a dict", ast.Set: "a set", ast.DictComp: "a dict comprehension",
             ast.SetComp: "a set comprehension", ast.JoinedStr: "an f-string", ast.Await: "await",
             ast.Yield: "yield", ast.Starred: "*unpacking"}
    return names.get(type(node), type(node).__name__)


def _describe_call(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return f"a call of {ast.unparse(node.func)}"
    return ast.unparse(node)[:40]


def _name_of(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(obj, types.ModuleType):
        return f"the module {obj.__name__}"
    if name:
        return f"{module}.{name}" if module and module != "builtins" else str(name)
    return repr(obj)[:40]


def _is_tensor_factory(fn: Any) -> bool:
    return getattr(fn, "__name__", None) in ("tensor", "asarray", "array") and getattr(
        fn, "__module__", "").split(".")[0] in ("torch", "jax", "numpy")


def _static_shape(nested: list[Any]) -> tuple[int, ...]:
    shape = []
    probe: Any = nested
    while isinstance(probe, list):
        shape.append(len(probe))
        probe = probe[0] if probe else None
    return tuple(shape)


def _static_nested(value: Value, t: Translator) -> Any:
    if isinstance(value, Static):
        return value.value
    if isinstance(value, PyList | PyTuple):
        return [_static_nested(v, t) for v in value.items]
    raise t.error("a tensor constant of values known only at run time (write torch.stack([...]))")
