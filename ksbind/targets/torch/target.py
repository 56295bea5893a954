"""The ``torch`` target: ks functions as PyTorch ops, on PyTorch's LibTorch stable ABI.

Every binding and every vjp is a dispatcher op, ``torch.ops.NS.NAME`` (NS: the module's
name, or the config's ``torch_library``), defined in C++ with ``STABLE_TORCH_LIBRARY``
and a schema, in a library that includes nothing of torch's full C++ API, of
libtorch_python, of pybind11 or of Python: one build runs on every torch from 2.10 on and
every CPython. The generated ``NAME.py`` loads it and gives each op, in Python
(ksbind/targets/torch/runtime/, ``install_stable``), a fake kernel, autograd from the vjp and a
batching rule. (Its files keep the ``torch_stable_`` prefix of the preview target it was.)

An op's arguments are leaves: the wrapper flattens tuples into their elements (the
schema has no tuple arguments) and re-nests tuple results from the op's tensors.

=====================================  ==========================================
ks type                                schema type of its leaf (C++ parameter)
=====================================  ==========================================
(Tensor N Float/Integer/Bool)          ``Tensor`` (viewed, no copy)
(Tensor 1 (Tensor M ... S))            ``Tensor``: one stacked tensor, rows viewed
Float                                  ``float`` (``Tensor``, 0-dim, in a binding with a vjp)
Integer / Bool                         ``int`` / ``bool``
(Tuple ...)                            its elements' leaves, in order
a type holding no scalar               no leaf (``()`` in Python)
=====================================  ==========================================

String arguments are ``str`` leaves. Results: tensors, scalars (0-dim tensors) and tuples
of them. Which types have a torch form at all, and each mode's rules, are
torch_values.py's.

A plain-mode binding whose values no schema can say (a string result, a tensor of tuples:
a list in Python) is **packed**: its op takes and returns ``Tensor[]``, each
value packed depth first into tensors (ksbind/torch_stable.h's ``Unpacker`` and ``pack``;
ksbind/targets/torch/runtime/packing.py packs and unpacks in the same order). It has no fake kernel, so
it is a plain function of the module, which torch.compile does not trace; generating it
is a KsbindWarning that names the binding and the type. Autograd and torch.func work on
it through the vjp, as on every binding. Elementwise and vmap bindings take tensors and
numbers only (torch_values.py's mode rules), so only plain bindings are packed. A plain
binding holding a tensor of tensors has packed ops beside its ops, for ragged values
(``RAGGED_PREFIX``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from ksbind.codegen.record_source import record_source
from ksbind.codegen.targets.common import Crossing, CrossingRole, EntryPoint, entry_points_for
from ksbind.codegen.targets.record import Target
from ksbind.errors import BindingError, warn
from ksbind.lang.identifiers import cpp_string
from ksbind.lang.model import FunctionDecl
from ksbind.lang.types import FLOAT, STRING, KsType, ScalarType, TensorType, TupleType
from ksbind.spec import Binding, Mode, ModuleOptions, TargetName
from ksbind.targets.torch import support_wiring, values

# The records the wrapper's BINDINGS table holds: the runtime's contract (typing alone: no torch).
from ksbind.targets.torch.runtime.contract import BindingRecord, FlatSpec, LeafRecord, PackRecord, ResultRecord

NAME: TargetName = "torch"
FILES = {"torch_stable_entries.h": "torch_stable_entries.h.j2",
         "torch_stable_entries.cpp": "torch_stable_entries.cpp.j2",
         "torch_stable_ops.cpp": "torch_stable_ops.cpp.j2", "{module}.py": "torch_stable_wrapper.py.j2",
         "{module}.pyi": "stub.pyi.j2"}
SINGLE_FILE = FILES
#: The op library is ``NAME + LIB_SUFFIX + ".so"``, beside the wrapper ``NAME.py``.
LIB_SUFFIX = "_torchops"
#: The oldest torch the library runs on, as the stable ABI spells it (-DTORCH_TARGET_VERSION):
#: major, minor and patch bytes, then zeros (0x0210... would mean 2.16).
TORCH_TARGET = (2, 10)
TORCH_TARGET_VERSION = f"0x{TORCH_TARGET[0]:02x}{TORCH_TARGET[1]:02x}000000000000"
DTYPES = {"Float": "float32", "Integer": "int32", "Bool": "bool"}


def lib_name(module_name: str) -> str:
    return module_name + LIB_SUFFIX


# ------------------------------------------------------------ what crosses

def unsupported_reason(t: KsType, role: Literal["param", "result"] = "param") -> str | None:
    """Why a value of type t is not (yet) expressed as op leaves (an argument's, or a result's),
    or None. A String argument is a ``str`` leaf; a result cannot be one (a fake kernel could
    not say what it is)."""
    if values.holds_no_scalar(t):
        return None
    for sub in t.walk():
        if isinstance(sub, ScalarType) and sub.name not in DTYPES and not (role == "param" and sub == STRING):
            what = "return" if role == "result" else "take"
            if sub is t:
                return f"a {t} result, which an op's schema cannot {what}"
            return f"{t} holds a {sub.name}, which an op's schema cannot {what}"
        crosses = values.is_scalar_tensor(sub) or values.is_nested_tensor(sub)
        if isinstance(sub, TensorType) and not crosses:
            return f"{sub} is a tensor of {sub.element}, a list in Python, which an op's schema cannot say"
    return None


def crossing(t: KsType, role: CrossingRole) -> Crossing:
    """Stubs and docs see the torch target's Python types; the kernels convert leaves themselves."""
    return Crossing(t.cpp, "", values.py_type(t, "param" if role == "param" else "result"))


def _crossings(d: FunctionDecl) -> list[tuple[KsType, Literal["param", "result"]]]:
    return [*((t, "param") for t in d.params), (d.return_type, "result")]


def packed_reason(b: Binding) -> str | None:
    """Why the binding's op is packed (its values cross as ``Tensor[]``), or None."""
    for t, role in [c for d in b.decls for c in _crossings(d)]:
        reason = unsupported_reason(t, role)
        if reason:
            return reason
    return None


#: A plain binding with a tensor of tensors also has packed ops, ``_packed_NAME`` (and its vjp's):
#: eager calls take them for a list given as such an argument (ragged or not: no stacking copy)
#: and for such a result (a list when its rows differ in shape), as the torch target's values.
RAGGED_PREFIX = "_packed_"
#: The name of an elementwise binding's op of its value and partial derivatives (_partials_op).
PARTIALS_PREFIX = "_partials_"


def has_tensor_of_tensors(b: Binding) -> bool:
    """Whether b's values (or its vjp's) hold a tensor of tensors (stacked in a schema)."""
    return any(values.is_nested_tensor(sub) for d in b.decls for t, _ in _crossings(d) for sub in t.walk())


def check_binding(b: Binding) -> None:
    """The torch target's checks. Its modes' rules already keep elementwise and vmap bindings to
    tensors and numbers, so only plain bindings are ever packed."""
    values.check_binding(b)


# ------------------------------------------------------------ leaves

#: What one leaf is: a tensor viewed as a ks tensor, a stacked tensor of tensors, a 0-dim
#: tensor holding a differentiable Float, or a number.
LeafKind = Literal["tensor", "stacked", "zero_dim", "float", "int", "bool", "str", "packed"]
_SCHEMA = {"tensor": "Tensor", "stacked": "Tensor", "zero_dim": "Tensor", "float": "float", "int": "SymInt",
           "bool": "bool", "str": "str", "packed": "Tensor[]"}
_CPP = {"tensor": "torch::stable::Tensor", "stacked": "torch::stable::Tensor", "zero_dim": "torch::stable::Tensor",
        "float": "double", "int": "int64_t", "bool": "bool", "str": "std::string",
        "packed": "std::vector<torch::stable::Tensor>"}


@dataclass(frozen=True)
class OpLeaf:
    """One argument of an op: its schema name, kind, and what autograd and vmap need of it."""

    name: str            # its schema and C++ name
    where: str           # its Python name in messages: x, or x[1][0] inside a tuple
    kind: LeafKind
    cpp_type: str        # the ks C++ type it becomes
    float_valued: bool   # it holds Floats: autograd gives it a gradient
    batched: bool = False  # vmap mode: mapped over its leading dimension
    rank: int = 0        # tensor, stacked: the tensor's rank
    written: str = ""    # a tensor the op writes into (the binding's mutates): its alias set, "a", "b"...

    @property
    def schema(self) -> str:
        alias = f"({self.written}!)" if self.written else ""
        return f"{_SCHEMA[self.kind]}{alias} {self.name}"

    @property
    def cpp(self) -> str:
        """Its C++ parameter's name (prefixed: a Python name may be a C++ keyword or a local's)."""
        return f"a_{self.name}"

    @property
    def cpp_param(self) -> str:
        return f"{_CPP[self.kind]} {self.cpp}"

    def plain(self) -> LeafRecord:
        return {"name": self.name, "where": self.where, "kind": self.kind, "float": self.float_valued,
                "batched": self.batched, "rank": self.rank}


def _leaves(t: KsType, name: str, where: str, out: list[OpLeaf], float_as_tensor: bool, batched: bool,
            written: str = "") -> str:
    """Append t's leaves to out; return the C++ that rebuilds the ks value from them. ``written``:
    t is a tensor of scalars the op writes into, in that alias set (viewed, never copied)."""
    if values.holds_no_scalar(t):
        return f"{t.cpp}{{}}"
    if isinstance(t, TupleType):
        parts = [_leaves(e, f"{name}_{i}", f"{where}[{i}]", out, float_as_tensor, batched)
                 for i, e in enumerate(t.elements)]
        return f"ks::make_Tuple({', '.join(parts)})"
    w = cpp_string(where)
    c = f"a_{name}"
    if isinstance(t, TensorType):
        kind: LeafKind = "tensor" if values.is_scalar_tensor(t) else "stacked"
        leaf = OpLeaf(name, where, kind, t.cpp, values.leaf_element(t) == "Float", batched,
                      values.stacked_rank(t) + (1 if batched else 0), written)
        out.append(leaf)
        if batched:
            return f"{c}_b.at(i)"
        if written:
            return f"tt::view_written<{t.cpp}>({c}, {w})"
        return f"tt::view<{t.cpp}>({c}, {w})" if kind == "tensor" else f"tt::stacked<{t.cpp}>(&g_alloc, {c}, {w})"
    assert isinstance(t, ScalarType)
    if batched:  # a vjp's dret of a scalar result, batched: a 1-d tensor
        out.append(OpLeaf(name, where, "tensor", t.cpp, t == FLOAT, True, 1))
        return f"{c}_b.at(i)"
    if t == FLOAT:
        kind = "zero_dim" if float_as_tensor else "float"
        out.append(OpLeaf(name, where, kind, t.cpp, True))
        return f"tt::zero_dim({c}, {w})" if float_as_tensor else f"tt::floating({c}, {w})"
    if t.name == "Integer":
        out.append(OpLeaf(name, where, "int", t.cpp, False))
        return f"tt::integer({c}, {w})"
    if t == STRING:  # ks::String is std::string: the leaf itself
        out.append(OpLeaf(name, where, "str", t.cpp, False))
        return c
    out.append(OpLeaf(name, where, "bool", t.cpp, False))
    return c


@dataclass(frozen=True)
class ResultTree:
    """How the wrapper re-nests an op's tensors: a leaf (a tensor; a number as a 0-dim one),
    ``()`` (no leaf), or a tuple."""

    kind: Literal["leaf", "empty", "tuple"]
    dtype: str = ""
    rank: int = -1       # leaf: its rank (-1: the broadcast shape's, elementwise)
    parts: tuple[ResultTree, ...] = ()

    def plain(self) -> ResultRecord:
        if self.kind == "leaf":
            return {"kind": "leaf", "dtype": self.dtype, "rank": self.rank}
        if self.kind == "tuple":
            return {"kind": "tuple", "parts": [p.plain() for p in self.parts]}
        return {"kind": "empty"}

    def count(self) -> int:
        return 1 if self.kind == "leaf" else sum(p.count() for p in self.parts)


def result_tree(t: KsType, mode: Mode) -> ResultTree:
    if values.holds_no_scalar(t):
        return ResultTree("empty")
    if isinstance(t, TupleType):
        return ResultTree("tuple", parts=tuple(result_tree(e, mode) for e in t.elements))
    dtype = DTYPES[values.leaf_element(t)]
    if mode == "elementwise":
        return ResultTree("leaf", dtype, -1)
    return ResultTree("leaf", dtype, values.stacked_rank(t) + (1 if mode == "vmap" else 0))


def _schema_result(n: int) -> str:
    if n == 0:
        return "Tensor[]"
    return "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"


@dataclass(frozen=True)
class KsArg:
    """One argument of the ks call: its C++ name, and the C++ making it from the leaves
    (none for an elementwise lambda's parameter); batched: made per vmap step."""

    name: str
    expr: str
    batched: bool


@dataclass(frozen=True)
class OpEntry:
    """One op (a binding or its vjp) as the templates print it: a plain op's kernel (in
    torch_stable_ops.cpp) calls ``NAME_ks``, defined beside the ks code
    (torch_stable_entries.cpp); an elementwise or vmap op's kernel is there whole, so the ks
    function inlines into its loop."""

    name: str            # the op's name (and the kernel's)
    symbol: str          # the ks function's C++ symbol
    mode: Mode
    leaves: tuple[OpLeaf, ...]
    ks_args: tuple[KsArg, ...]  # each ks argument, rebuilt from the leaves
    result: ResultTree
    result_cpp: str      # the ks function's C++ result type
    call: str            # the ks call with `alloc` (elementwise, vmap: the loops'), or NAME_ks's (plain:
    #                      through ksbind::opaque, so the ks function is not inlined into NAME_ks)
    call_site: str
    ks_params: tuple[str, ...] = ()  # the ks function's C++ parameter types
    entry_args: tuple[str, ...] = ()  # plain: NAME_ks's arguments after the allocator
    packed: bool = False  # its values cross packed, as one Tensor[] each way
    internal: bool = False  # called only by ksbind's runtime: registered once, with no _direct_ twin
    DERIVED: ClassVar[tuple[str, ...]] = ("schema", "param_list", "direct_schema", "py_names", "addresses",
                                          "float_params", "batch_sizes", "step_elements", "return_cpp",
                                          "declaration", "entry_declaration", "entry_call")

    @property
    def loops(self) -> bool:
        return self.mode != "plain"

    @property
    def dispatch_key(self) -> str:
        """Where its kernel is registered: CPU, or for an op with no tensor argument (the
        dispatcher then has no device to go by) CompositeExplicitAutograd, as the support ops."""
        if self.packed:  # the list may be empty; the kernel checks each tensor's device itself
            return "CompositeExplicitAutograd"
        return "CPU" if any(x.kind in ("tensor", "stacked", "zero_dim") for x in self.leaves) \
            else "CompositeExplicitAutograd"

    @cached_property
    def return_cpp(self) -> str:
        """What the kernel returns: one tensor, a tuple of them, or an empty list."""
        n = self.result.count()
        if n == 0 or self.packed:
            return "std::vector<torch::stable::Tensor>"
        return "torch::stable::Tensor" if n == 1 else "std::tuple<" + ", ".join(["torch::stable::Tensor"] * n) + ">"

    @cached_property
    def declaration(self) -> str:
        """The kernel's C++ signature."""
        return f"{self.return_cpp} {self.name}_kernel({self.param_list})"

    @cached_property
    def entry_declaration(self) -> str:
        """``NAME_ks``: the ks call beside the ks code, over ks values only (plain ops)."""
        params = "".join(f", {t} p{i}" for i, t in enumerate(self.ks_params))
        return f"{self.result_cpp} {self.name}_ks(ks::allocator* alloc{params})"

    @cached_property
    def entry_call(self) -> str:
        """Plain: ``NAME_ks`` called with ``&g_alloc`` and the ks arguments."""
        return f"ke::{self.name}_ks({', '.join(['&g_alloc', *self.entry_args])})"

    @cached_property
    def schema(self) -> str:
        result = "Tensor[]" if self.packed else _schema_result(self.result.count())
        return f"{self.name}({', '.join(x.schema for x in self.leaves)}) -> {result}"

    @cached_property
    def direct_schema(self) -> str:
        """The same kernel without autograd or batching rule: what a call that needs neither runs."""
        return "_direct_" + self.schema

    @cached_property
    def param_list(self) -> str:
        return ", ".join(x.cpp_param for x in self.leaves)

    @cached_property
    def py_names(self) -> str:
        return ", ".join(cpp_string(x.where) for x in self.leaves)

    @cached_property
    def addresses(self) -> str:
        return ", ".join(f"&{x.cpp}" for x in self.leaves)

    @cached_property
    def float_params(self) -> str:
        """The elementwise lambda's parameters after its allocator."""
        return "".join(f", ks::Float {a.name}" for a in self.ks_args)

    @cached_property
    def batch_sizes(self) -> str:
        return ", ".join(f"{{ {x.cpp}_b.batch, {cpp_string(x.where)} }}" for x in self.leaves if x.batched)

    @cached_property
    def step_elements(self) -> str:
        return ", ".join(f"{x.cpp}_b.step_elements()" for x in self.leaves if x.batched)


def _op_entry(e: EntryPoint, b: Binding, result_type: KsType, packed: bool = False, prefix: str = "") -> OpEntry:
    """The op of entry point e; ``prefix``: a second, packed op of it (its name prefixed; a failure's
    message still names the binding)."""
    leaves: list[OpLeaf] = []
    args: list[KsArg] = []
    # With a derivative, a Float crosses as a 0-dim tensor, which can carry a gradient or a tangent.
    float_as_tensor = (b.vjp_decl is not None or b.jvp_decl is not None) and b.mode == "plain"
    if packed:
        leaves.append(OpLeaf("leaves", "leaves", "packed", "", False))
    for i, p in enumerate(e.params):
        if packed:  # read from the one list, in order (ksbind/torch_stable.h's Unpacker)
            args.append(KsArg(f"k{i}", f"packed_in.next<{p.ks_type.cpp}>({cpp_string(p.py_name)})", False))
            continue
        is_dret = e.is_vjp and i == len(e.params) - 1
        # A jvp's tangents: forward AD hands them over as tensors (0-dim for a Float argument).
        is_tangent = e.is_jvp and i >= len(e.params) // 2
        if b.mode == "elementwise":
            leaves.append(OpLeaf(p.py_name, p.py_name, "tensor", "ks::Float", True, False, -1))
            args.append(KsArg(f"v{i}", "", False))  # the elementwise lambda's parameter
            continue
        batched = b.mode == "vmap" and (values.is_scalar_tensor(p.ks_type) or is_dret)
        # Arguments the binding writes into get alias sets a, b, c... in the order mutates names them.
        written = (chr(ord("a") + b.mutates.index(p.py_name))
                   if p.py_name in b.mutates and not (e.is_vjp or e.is_jvp) else "")
        # A vjp's dret: autograd hands it over as tensors (0-dim for a Float result).
        expr = _leaves(p.ks_type, p.py_name, p.py_name, leaves, float_as_tensor or is_dret or is_tangent, batched,
                       written)
        args.append(KsArg(f"k{i}", expr, batched))
    names = [a.name for a in args]
    # The ks call's arguments, as the entry point packs them (a vjp: the primal's as one Tuple).
    if e.is_vjp:
        primal_args, dret = names[:-1], names[-1]
        primal = primal_args[0] if len(primal_args) == 1 else f"ks::make_Tuple({', '.join(primal_args)})"
        names = [primal, dret]
    elif e.is_jvp:  # [fwd F]: the primal's arguments as one Tuple, then their tangents as one
        n = len(names) // 2
        names = [part[0] if n == 1 else f"ks::make_Tuple({', '.join(part)})" for part in (names[:n], names[n:])]
    decl = b.vjp_decl if e.is_vjp else b.jvp_decl if e.is_jvp else b.decl
    assert decl is not None
    ks_params = tuple(t.cpp for t in decl.params)
    if b.mode == "plain":
        # Through a pointer g++ cannot see through (ksbind/opaque_call.h): the ks function is then
        # compiled once, not a second time inlined into NAME_ks. The exact pointer type picks the
        # ks function among C++ overloads of its name.
        pointer = f"{result_type.cpp}(*)({', '.join(['ks::allocator*', *ks_params])})"
        target = f"ksbind::opaque<{pointer}>(&ks::{e.symbol})"
        call = f"{target}({', '.join(['alloc', *(f'p{i}' for i in range(len(ks_params)))])})"
    else:
        call = f"ks::{e.symbol}({', '.join(['alloc', *names])})"
    name = prefix + e.name
    tree = ResultTree("empty") if packed else result_tree(result_type, b.mode)
    return OpEntry(name, e.symbol, b.mode, tuple(leaves), tuple(args), tree,
                   result_type.cpp, call, e.call_site_as(name), ks_params, tuple(names), packed)


def _partials_op(primal: OpEntry, entry: EntryPoint, vjp: EntryPoint, b: Binding) -> OpEntry:
    """An elementwise binding's value and partial derivatives in one loop: the ks function and its
    vjp at dret = 1 (the vjp is linear in dret, so the gradient is dret times each partial),
    computed from the same element, so g++ computes what the two share once (gelu: its erf).
    Autograd's backward is then one multiply per argument, where the vjp op would compute the
    function's maths again (ksbind/targets/torch/runtime/autograd.py's partials_function)."""
    args = [a.name for a in primal.ks_args]
    point = args[0] if len(args) == 1 else f"ks::make_Tuple({', '.join(args)})"
    call = f"ksbind::torch_stable::with_partials({primal.call}, ks::{vjp.symbol}(alloc, {point}, 1.0f))"
    name = PARTIALS_PREFIX + b.name
    result = ResultTree("tuple", parts=tuple(ResultTree("leaf", "float32", -1) for _ in range(len(args) + 1)))
    return replace(primal, name=name, result=result, call=call, call_site=entry.call_site_as(name), internal=True)


def pack_spec(t: KsType) -> object:
    """How a value of type t packs into tensors (ksbind/torch_stable.h's order): "none"; "f",
    "i", "b", "s" (a number, a string); ["t", rank, dtype] (a tensor of scalars); ["v", inner]
    (a rank-1 tensor of anything else: a list in Python); ["tuple", [parts]]."""
    if values.holds_no_scalar(t):
        return "none"
    if isinstance(t, TupleType):
        return ["tuple", [pack_spec(e) for e in t.elements]]
    if isinstance(t, TensorType):
        if isinstance(t.element, ScalarType):
            return ["t", t.rank, DTYPES[t.element.name]]
        return ["v", pack_spec(t.element)]
    assert isinstance(t, ScalarType)
    return {"Float": "f", "Integer": "i", "Bool": "b", "String": "s"}[t.name]


def _packed(b: Binding) -> PackRecord:
    """Pack specs of the binding's arguments and result, and of its vjp's: the vjp function takes
    the binding's arguments one by one (the ks vjp, one Tuple of them), then dret."""
    vjp = b.vjp_decl
    params = [pack_spec(t) for t in b.decl.params]
    return {"params": params, "result": pack_spec(b.decl.return_type),
            "vjp_params": [*params, pack_spec(vjp.params[-1])] if vjp else [],
            "vjp_result": pack_spec(vjp.return_type) if vjp else None}


def _flat_spec(t: KsType) -> object:
    """How the wrapper flattens a Python value of ks type t: "leaf", "empty", or a list of parts."""
    if values.holds_no_scalar(t):
        return "empty"
    if isinstance(t, TupleType):
        return [_flat_spec(e) for e in t.elements]
    return "leaf"


def extra_context(bindings: Sequence[Binding], options: ModuleOptions) -> dict[str, Any]:
    for b in bindings:
        check_binding(b)
    by_name = {e.name: e for e in entry_points_for(list(bindings), crossing)}
    ops: list[OpEntry] = []
    records: list[BindingRecord] = []
    for b in bindings:
        if b.release_gil == "never":
            warn(f"{b.location}: binding {b.name!r}: release_gil: never has no effect on the torch target: its "
                 f"calls are torch ops, and torch's dispatcher releases the GIL for every op call")
        reason = packed_reason(b)
        values.check_mutates(b, [(p.py_name, p.ks_type) for p in by_name[b.name].params],
                             bool(reason) or has_tensor_of_tensors(b))
        if reason:
            warn(f"{b.location}: binding {b.name!r} ({b.decl.name}) is not an op with a schema: {reason}; it is a "
                 f"plain function over an op of packed tensors (no fake kernel: torch.compile does not trace it, and "
                 f"its values are converted on each call)")
        primal = _op_entry(by_name[b.name], b, b.decl.return_type, bool(reason))
        ops.append(primal)
        vjp = None
        if b.vjp_name and b.vjp_decl:
            vjp = _op_entry(by_name[b.vjp_name], b, b.vjp_decl.return_type, bool(reason))
            ops.append(vjp)
        partials = None
        if vjp is not None and b.mode == "elementwise" and b.vjp_name:
            partials = _partials_op(primal, by_name[b.name], by_name[b.vjp_name], b)
            ops.append(partials)
        jvp = None
        if b.jvp_name and b.jvp_decl:
            if reason:
                raise BindingError(f"binding {b.name!r} ({b.decl.name}): jvp: needs an op with a schema, and this "
                                   f"binding's values cross packed ({reason}); bind it without jvp:", b.location)
            jvp = _op_entry(by_name[b.jvp_name], b, b.jvp_decl.return_type)
            ops.append(jvp)
        ragged = not reason and b.mode == "plain" and has_tensor_of_tensors(b)
        if ragged:
            ops.append(_op_entry(by_name[b.name], b, b.decl.return_type, True, RAGGED_PREFIX))
            if b.vjp_name and b.vjp_decl:
                ops.append(_op_entry(by_name[b.vjp_name], b, b.vjp_decl.return_type, True, RAGGED_PREFIX))
        records.append(_binding_record(b, by_name, primal, vjp, jvp, partials, _packed(b) if reason else None,
                                       _packed(b) if ragged else None))
    _check_op_names(bindings, ops)
    moded = {name: values.moded_entry(e, b.mode)
             for b in bindings for name, e in by_name.items() if name in (b.name, b.vjp_name, b.jvp_name)}
    namespace = options.torch_library or library_namespace(options)
    return {
        "entry_points": list(moded.values()),
        "stable_ops": ops,
        "stable_loops": any(op.loops for op in ops),
        "stable_bindings": records,
        "stable_bindings_literal": record_source(records, list[BindingRecord], "_runtime."),
        "stable_namespace": namespace,
        "stable_lib": lib_name(options.name),
        # Standalone (a wheel): the library named as Python names an extension module (the build
        # backends give it an extension suffix: .abi3.so), and the runtime's copy beside the wrapper.
        "stable_lib_suffixes": "True" if options.standalone else "False",
        "torch_runtime_import": values.runtime_import(options),
        "stable_min_torch": ".".join(map(str, TORCH_TARGET)),
    }


def _binding_record(b: Binding, by_name: dict[str, EntryPoint], primal: OpEntry, vjp: OpEntry | None,
                    jvp: OpEntry | None, partials: OpEntry | None, packed: PackRecord | None,
                    ragged: PackRecord | None) -> BindingRecord:
    """What ksbind/targets/torch/runtime's install_stable needs to define one binding: the runtime's
    own record, which the wrapper's ``BINDINGS`` table is written as. ``packed``: a packed binding's
    packing (see pack_spec); ``ragged``: the same for a binding with packed ops beside its ops
    (RAGGED_PREFIX)."""
    e = by_name[b.name]

    def spec(entry: EntryPoint) -> list[FlatSpec]:
        """Per argument: how it flattens into leaves (see _flat_spec)."""
        return ["leaf" if b.mode == "elementwise" else _flat_spec(p.ks_type) for p in entry.params]

    record = BindingRecord(
        name=b.name, mode=b.mode, params=[p.py_name for p in e.params], spec=spec(e),
        leaves=[x.plain() for x in primal.leaves], result=primal.result.plain(), vjp=b.vjp_name,
        vjp_leaves=[x.plain() for x in vjp.leaves] if vjp else [], vjp_result=vjp.result.plain() if vjp else None,
        # the vjp's arguments (the binding's, then dret)
        vjp_spec=spec(by_name[b.vjp_name]) if b.vjp_name else [], doc=e.signature, packed=packed, ragged=ragged)
    # The optional keys only when the binding has them: every other binding's table entry is as before.
    if b.mutates:  # the arguments its op writes into (their leaves' indices follow)
        record["mutates"] = list(b.mutates)
    if jvp is not None and b.jvp_name:  # its jvp's op ([fwd F]): the binding's arguments, then their tangents
        record["jvp"] = b.jvp_name
        record["jvp_leaves"] = [x.plain() for x in jvp.leaves]
        record["jvp_result"] = jvp.result.plain()
        record["jvp_spec"] = spec(by_name[b.jvp_name])
        # the tangents' argument names, as the jvp's entry point has them
        record["jvp_params"] = [p.py_name for p in by_name[b.jvp_name].params[len(e.params):]]
    if partials is not None:  # elementwise with a vjp: its _partials_op
        record["partials"] = partials.name
    return record


def _check_op_names(bindings: Sequence[Binding], ops: Sequence[OpEntry]) -> None:
    """The ops ksbind names itself (an elementwise binding's PARTIALS_PREFIX op, a list-taking
    binding's RAGGED_PREFIX ones) taken by a binding's name are said, not left to torch's
    registration error."""
    ours = {op.name for op in ops if op.internal or op.name.startswith(RAGGED_PREFIX)}
    for b in bindings:
        for name in (b.name, b.vjp_name, b.jvp_name):
            if name in ours:
                raise BindingError(f"binding {b.name!r}: the name {name!r} is one ksbind gives an op of its own "
                                   f"({PARTIALS_PREFIX}NAME: an elementwise binding's partial derivatives; "
                                   f"{RAGGED_PREFIX}NAME: a binding's packed ops); rename it", b.location)


def library_namespace(options: ModuleOptions) -> str:
    """The ops' namespace without ``torch_library``: the module's name, or in a wheel its full
    import name (``pkg.m`` -> ``pkg_m``): namespaces are process-wide, and two packages may
    each have a module ``m``."""
    if options.standalone and options.package:
        return f"{options.package}.{options.name}".replace(".", "_")
    return options.name


def crossing_problem(d: FunctionDecl) -> str | None:
    """Why default bindings skip d: a value no torch form holds (a packed op takes the rest)."""
    for t, _ in _crossings(d):
        reason = values.unsupported_reason(t)
        if reason:
            return reason
    return None


#: The package's folder: its templates/ and include/ (C++ headers) go into the record.
HERE = Path(__file__).parent

TARGET = Target(
    name=NAME, files=FILES, single_file=SINGLE_FILE, crossing=crossing, extra_context=extra_context,
    build="ksbind.targets.torch.build:TORCH", tensors="torch.Tensor", release_gil_always=True,
    stub_imports=("import torch",),
    torch_library=True, compiled_name=lib_name, crossing_problem=crossing_problem, cpu_kernels=True,
    runtime_copy="{module}" + values.RUNTIME_SUFFIX, runtime_source="targets/torch/runtime",
    templates=HERE / "templates", include_dirs=(HERE / "include",), written_ahead=support_wiring.written_ahead,
    # The library includes nothing of Python: one file for every CPython (a wheel tagged abi3).
    limited_api=(3, 10),
)

__all__ = ["NAME", "TARGET", "FILES", "LIB_SUFFIX", "TORCH_TARGET", "TORCH_TARGET_VERSION", "OpLeaf", "OpEntry",
           "PARTIALS_PREFIX", "RAGGED_PREFIX", "ResultTree", "check_binding",
           "has_tensor_of_tensors", "crossing", "extra_context", "lib_name",
           "pack_spec", "packed_reason", "unsupported_reason"]
