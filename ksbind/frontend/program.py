"""Every def one compiled call reaches, callees first, as one ks text: the front end's record.

``translate_program`` translates the called function at its signature, and
through it every module-level Python function it calls (one ks def per
function and signature, as Knossos did), and writes the zip helpers that
elementwise code on several tensors needs: a scalar kernel that ksc
differentiates, and a tensor function over it whose reverse derivatives (``rev``,
``suffwdpass``, ``sufrevpass``) are written here, element by element (its ``fwd``
ksc derives from the ``build``, when a jvp asks for it).
ksc would otherwise derive them from ``build`` and ``index``, whose reverse
keeps a gradient of a whole tensor per element (docs/ks.md's fast vjps).
The written derivatives loop once per value of the kernel's Bool scalars
(``_UNSWITCHED_FLAGS``), so that no branch is left in a loop.
A sum or mean of elementwise code gets a sum-zip helper over the same kernel
instead: a ``sumbuild`` (no tensor made), whose written derivatives give every
element the sum's one gradient.

A ``mode="elementwise"`` function of scalar arithmetic with branches is bound
through its select form (ksbind/frontend/selects.py), whose vjp is written as
the function's own.

A function with a ``for`` loop is a ``fold``, whose vjp ksc derives only as
``rev``, and ``rev`` needs ``[D f]`` of every function it calls, which the
zip helpers do not define: such a program is translated again with each
elementwise loop an inline ``build`` over ``index`` (whose vjp is slower).

Why helpers rather than ksc's ``map`` even for one input tensor: ksc's
reverse of a ``map`` keeps a record per element in the forward pass and
accumulates the lambda's free variables' gradients element by element; the
helper's reverse recomputes each element from the inputs in one vectorisable
loop. vsqrl's forward+backward took three quarters of the time through the
helper (one process, both builds, interleaved).
"""
from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ksbind.frontend import ir
from ksbind.frontend.ir import Call, Def, Expr, Get, If, Lam, Let, Lit, Tup, Var, call
from ksbind.frontend.selects import SELECT, select_def, select_form
from ksbind.frontend.signature import Signature
from ksbind.frontend.source import FrontendError, PythonSource, read_function
from ksbind.frontend.translate import RESERVED, Translator
from ksbind.lang.model import StructuredName
from ksbind.lang.sexpr import Atom, Node, SList
from ksbind.lang.types import BOOL, FLOAT, INTEGER, KsType, TensorType, TupleType

#: Names of ksc's prelude a def must not take (an overload of them would change what the prelude's calls mean).
_PRELUDE_NAMES = RESERVED | frozenset("cosh lgamma imax bool_to_float transpose pi revpow mymul".split())



@dataclass(frozen=True)
class Translation:
    """What the front end hands the pipeline: ks text, the def to bind, and how."""

    ks_text: str
    entry: StructuredName
    signature: Signature
    result_type: KsType
    differentiable: bool  # a Float in and a Float out: bind its vjp
    python_name: str
    folds: bool  # a for loop became a fold: the vjp is ksc's rev (SUF-AD cannot derive a fold)
    files: tuple[str, ...] = ()  # the source file of each Python function translated (what the text depends on)


class ProgramBuilder:
    """Collects the defs of one translation (the ``Program`` a Translator asks)."""

    def __init__(self, use_helpers: bool) -> None:
        self.use_helpers = use_helpers
        self.folds = False
        self.items: list[Node] = []
        self.functions: dict[tuple[Any, tuple[KsType, ...]], tuple[str, KsType]] = {}
        self.in_progress: set[tuple[Any, tuple[KsType, ...]]] = set()
        self.names: set[str] = set()
        self.kernels: dict[str, Def] = {}  # the scalar kernel of each elementwise body
        self.helpers: dict[tuple[str, str], str] = {}

    def note_fold(self) -> None:
        self.folds = True

    def def_name(self, python_name: str) -> str:
        base = python_name if python_name not in _PRELUDE_NAMES else python_name + "_py"
        return base

    def translate(self, fn: Callable[..., Any], params: tuple[KsType, ...], src: PythonSource | None = None) -> Def:
        source = src or read_function(fn)
        key = (source.function, params)
        translator = Translator(source, params, self, self.def_name(source.name))
        self.in_progress.add(key)
        try:
            d = translator.translate()
        finally:
            self.in_progress.discard(key)
        self.functions[key] = (d.name, d.body.type)
        self.items.append(ir.def_node(d))
        return d

    def function(self, fn: Callable[..., Any], params: tuple[KsType, ...], caller: PythonSource,
                 node: ast.AST) -> tuple[str, KsType]:
        key = (fn, params)
        if key in self.functions:
            return self.functions[key]
        if key in self.in_progress:
            raise caller.error(f"a recursive call of {fn.__name__}: its result type would have to be known "
                               "before its body is read", node)
        try:
            src = read_function(fn)
        except FrontendError as e:
            raise FrontendError(f"{e.message}, called here", caller.location(node)) from None
        d = self.translate(fn, params, src)
        return d.name, d.body.type

    def zip_helper(self, tensors: tuple[Var, ...], elements: tuple[Var, ...], scalars: tuple[Var, ...],
                   body: Expr) -> str:
        return self._helper("zip", tensors, elements, scalars, body)

    def sum_zip_helper(self, tensors: tuple[Var, ...], elements: tuple[Var, ...], scalars: tuple[Var, ...],
                       body: Expr) -> str:
        return self._helper("sumzip", tensors, elements, scalars, body)

    def _helper(self, kind: str, tensors: tuple[Var, ...], elements: tuple[Var, ...], scalars: tuple[Var, ...],
                body: Expr) -> str:
        """The ``kind`` helper (``zip``: the tensor of ``body``'s values; ``sumzip``: their sum) over
        one scalar kernel def, written once per kernel and shared by both kinds."""
        params = (*elements, *scalars)
        kernel_text = str(ir.to_node(body)) + " ".join(f"{p.name}:{p.type}" for p in params) + str(
            [t.type for t in tensors])
        key = hashlib.sha256(kernel_text.encode()).hexdigest()[:12]
        if (kind, key) in self.helpers:
            return self.helpers[(kind, key)]
        if key not in self.kernels:
            n = len(self.kernels) + 1
            kernel = self.kernels[key] = Def(f"ksb_ew{n}", params, body)
            self.items.append(ir.def_node(kernel))
            for d in ("fwd", "rev", "suffwdpass", "sufrevpass", "sufrev"):
                self.items.append(_list(_atom("gdef"), _atom(d), _atom(str(kernel.structured_name))))
        kernel = self.kernels[key]
        name = f"ksb_{kind}{kernel.name.removeprefix('ksb_ew')}"
        self.helpers[(kind, key)] = name
        self.items.extend(_zip_defs(name, kernel, tensors, scalars, summed=kind == "sumzip"))
        return name

    def select_kernel(self, entry: Def, differentiable: bool) -> Def:
        """The def an elementwise binding calls: ``entry``, or its select form (ksbind/frontend/selects.py)
        with a written vjp that is ``entry``'s (which ksc derives)."""
        body = select_form(entry.body)
        if body is None or self.folds:
            return entry
        if differentiable:
            for d in ("suffwdpass", "sufrevpass", "sufrev"):
                self.items.append(_list(_atom("gdef"), _atom(d), _atom(str(entry.structured_name))))
        if SELECT not in self.names:
            self.names.add(SELECT)
            self.items.append(ir.def_node(select_def()))
        fast = Def(f"ksb_fast_{entry.name}", entry.params, body)
        self.items.append(ir.def_node(fast))
        if differentiable:
            xt = Var("xt", entry.arg_type)
            dr = Var("dr", FLOAT.tangent)
            vjp = Call(StructuredName.derived("sufrev", entry.structured_name), (xt, dr), entry.arg_type.tangent)
            self.items.append(_def(StructuredName.derived("sufrev", fast.structured_name), (xt, dr), vjp))
        return fast

    def text(self) -> str:
        return "\n\n".join(ir.pretty(i) for i in self.items) + "\n"


def translate_program(fn: Callable[..., Any], signature: Signature) -> Translation:
    """``fn`` at ``signature``, with everything it calls, as ks text."""
    src = read_function(fn)
    for use_helpers in (True, False):
        program = ProgramBuilder(use_helpers)
        entry = program.translate(fn, signature.params, src)
        if not (program.folds and use_helpers):
            break
    result = entry.body.type
    differentiable = _has_float(entry.arg_type) and _has_float(result)
    if signature.mode == "elementwise":
        if result != FLOAT:
            raise src.error(f"mode='elementwise' compiles a function returning one float; {src.name} returns a "
                            f"ks {result}")
        entry = program.select_kernel(entry, differentiable)
    files = tuple(dict.fromkeys(f.__code__.co_filename for f, _ in program.functions if hasattr(f, "__code__")))
    return Translation(program.text(), entry.structured_name, signature, result, differentiable, src.name,
                       program.folds, files)


def _has_float(t: KsType) -> bool:
    return t.contains(lambda x: x == FLOAT)


# ------------------------------------------------------------------ the zip helpers' derivatives


def _atom(text: str) -> Atom:
    return Atom(text, ir._HERE)


def _list(*items: Node) -> SList:
    return SList(tuple(items), "(", ir._HERE)


def _param_list(params: Sequence[Var]) -> Node:
    if len(params) == 1:
        return _list(_atom(params[0].name), _atom(":"), _atom(str(params[0].type)))
    return _list(*(_list(_atom(p.name), _atom(":"), _atom(str(p.type))) for p in params))


def _def(name: str | StructuredName, params: Sequence[Var], body: Expr) -> SList:
    return _list(_atom("def"), _atom(str(name)), _atom(str(body.type)), _param_list(params), ir.to_node(body))


def _tuple_or_one(items: Sequence[Expr]) -> Expr:
    return items[0] if len(items) == 1 else Tup(tuple(items))


#: How many of a kernel's Bool scalars the written derivatives unswitch (2**N loops). ksc's
#: reverse pass of a branch on a Bool puts each branch's calls (sin's derivative, say) in an
#: ``if`` of its own, which g++ does not vectorise (scalar sinf and cosf per element, vsqrl's
#: backward); a loop whose Bool is a literal has no branch left once the kernel is inlined.
_UNSWITCHED_FLAGS = 2


def _zip_defs(name: str, kernel: Def, tensors: tuple[Var, ...], scalars: tuple[Var, ...],
              summed: bool = False) -> list[SList]:
    """The tensor function over ``kernel`` and its rev, suffwdpass and sufrevpass; ``summed``: the
    sum of that tensor instead, a ``sumbuild`` (no tensor made; the torch target's sumbuild of
    Floats vectorises), whose derivatives hand every element the one gradient of the sum."""
    rank = ir.tensor_rank(tensors[0].type)
    index_type: KsType = INTEGER if rank == 1 else TupleType((INTEGER,) * rank)
    size_type = index_type
    ts = tuple(Var(f"a{i + 1}", t.type) for i, t in enumerate(tensors))
    ss = tuple(Var(f"s{i + 1}", s.type) for i, s in enumerate(scalars))
    params = (*ts, *ss)
    arg_type: KsType = params[0].type if len(params) == 1 else TupleType(tuple(p.type for p in params))
    kernel_arg = kernel.arg_type
    result_t: KsType = kernel.body.type if summed else TensorType(rank, kernel.body.type)
    structured = StructuredName.base(name, arg_type)
    ix = Var("ix", index_type)
    size = call("size", size_type, ts[0])

    def elements(at: Var) -> list[Expr]:
        return [call("index", t.type.element, at, t) for t in ts]  # type: ignore[attr-defined]

    def kernel_call(at: Var) -> Expr:
        return Call(kernel.name, (*elements(at), *ss), kernel.body.type)

    body: Expr = call("sumbuild" if summed else "build", result_t, size, Lam(ix, kernel_call(ix)))
    for t in ts[1:]:  # equal shapes, or a RuntimeError (no broadcasting)
        body = call("assert", result_t, call("eq", BOOL, call("size", size_type, t), size), body)
    defs = [_def(name, params, body)]

    # suffwdpass: the value, and the arguments for the reverse pass
    bog = _tuple_or_one(params)
    defs.append(_def(StructuredName.derived("suffwdpass", structured), params,
                     Tup((Call(name, params, result_t), bog))))

    def gradients(derived: str, d: Var) -> Expr:
        """Each argument's gradient, from the kernel's ``derived`` (sufrev or rev) per element, in
        one loop per value of the kernel's Bool scalars (_UNSWITCHED_FLAGS)."""
        flags = [s for s in ss if s.type == BOOL][:_UNSWITCHED_FLAGS]

        def fixed(values: dict[str, bool]) -> Expr:
            scalars = [Lit(values[s.name], BOOL) if s.name in values else s for s in ss]
            return gradients_with(derived, d, scalars)

        def split(i: int, values: dict[str, bool]) -> Expr:
            if i == len(flags):
                return fixed(values)
            f = flags[i]
            return If(f, split(i + 1, {**values, f.name: True}), split(i + 1, {**values, f.name: False}))

        return split(0, {})

    def gradients_with(derived: str, d: Var, scalars: Sequence[Expr]) -> Expr:
        kernel_d = StructuredName.derived(derived, kernel.structured_name)
        k_params = len(kernel.params)

        def per_element(at: Var) -> Expr:
            arg = _tuple_or_one([*elements(at), *scalars])
            d_element = d if summed else call("index", kernel.body.type.tangent, at, d)
            return Call(kernel_d, (arg, d_element), kernel_arg.tangent)

        grads: list[Expr] = []
        for i, t in enumerate(ts):
            at = Var("ix", index_type)
            g = per_element(at)
            if k_params > 1:
                g = Get(i + 1, g)
            grads.append(call("build", TensorType(rank, t.type.element.tangent), size, Lam(at, g)))  # type: ignore
        for j, s in enumerate(ss):
            if s.type != FLOAT:
                grads.append(Tup(()))
                continue
            at = Var("ix", index_type)
            g = Get(len(ts) + j + 1, per_element(at))
            grads.append(call("sumbuild", FLOAT, size, Lam(at, g)))
        return _tuple_or_one(grads)

    dr = Var("dr", result_t.tangent)
    bog_var = Var("bog", bog.type)
    unpack: Expr = gradients("sufrev", dr)
    if len(params) > 1:
        unpack = Let(((tuple(p.name for p in params), bog_var),), unpack)
    else:
        unpack = Let(((params[0].name, bog_var),), unpack)
    defs.append(_def(StructuredName.derived("sufrevpass", structured), (dr, bog_var), unpack))

    # rev: ((arguments) , dr) -> the arguments' gradients
    xt = Var("xt", arg_type)
    rev_body: Expr = gradients("rev", dr)
    rev_body = Let(((tuple(p.name for p in params) if len(params) > 1 else params[0].name, xt),), rev_body)
    defs.append(_def(StructuredName.derived("rev", structured), (xt, dr), rev_body))

    # No fwd is written: ksc's forward mode of a caller needs [D ksb_zipN], which only ksc's own
    # gdef of fwd makes (from the build, as the planner asks when a binding has a jvp).
    return defs


__all__ = ["Translation", "translate_program", "ProgramBuilder"]
