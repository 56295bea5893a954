"""The ``torch`` target: torch.Tensor in and out.

Tensor arguments are viewed, not copied, when CPU, contiguous and of the
matching dtype (Float: float32, Integer: int32, Bool: bool); tensor results
are copied out of the arena once. Other ks values cross as Python scalars and
tuples: the entry point takes and returns plain C++ values (``at::Tensor``,
``std::tuple``, scalars) that pybind11 converts in the module's translation
unit, so the entry points themselves compile against ATen's core headers only.

Modes (per binding): ``plain`` calls the function once; ``elementwise`` maps
a scalar ``Float -> Float`` (or ``(Float, Float) -> Float``) function over
every element of float32 tensors of any (broadcast) shape; ``vmap`` maps a
function over the leading dimension of its tensor arguments. Signatures that
do not fit a mode are a BindingError at generation time.

The generated Python wrapper (``NAME.py``) adds autograd from each vjp and,
with ``torch_library``, registers torch.ops; it reads the plain values built
by ``extra_context`` here (see ksbind/torch_runtime.py).
"""
from __future__ import annotations

import pprint
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, ClassVar, Literal, cast

from ksbind.codegen.targets.common import Crossing, CrossingRole, EntryPoint, entry_points_for, runtime_copy_import
from ksbind.codegen.targets.ks import SCALAR_PY
from ksbind.codegen.targets.record import Target
from ksbind.errors import BindingError, warn
from ksbind.lang.identifiers import cpp_string
from ksbind.lang.types import (
    FLOAT,
    KsType,
    ScalarType,
    TensorType,
    TupleType,
)
from ksbind.spec import TENSOR_ELEMENTS, Binding, Mode, ModuleOptions, TargetName

NAME: TargetName = "torch"
# "{module}" in a file name is replaced by the module's name: NAME.py (the wrapper
# users import) and NAME.pyi (its stub) sit next to the extension NAME_ext.
FILES = {"entry_points.h": "torch_entry_points.h.j2", "entry_points.cpp": "torch_entry_points.cpp.j2",
         "module.cpp": "torch_module.cpp.j2", "{module}.py": "torch_wrapper.py.j2"}
SINGLE_FILE = {"module.cpp": "torch_single_file.cpp.j2", "{module}.py": "torch_wrapper.py.j2"}
FILES["{module}.pyi"] = SINGLE_FILE["{module}.pyi"] = "stub.pyi.j2"  # the typed stub, named after the module
#: The compiled extension is ``NAME + EXT_SUFFIX``; ``NAME.py`` wraps it.
EXT_SUFFIX = "_ext"
TORCH_DTYPES = {"Float": "float32", "Integer": "int32", "Bool": "bool"}
SCHEMA_SCALARS = {"Float": "float", "Integer": "int", "Bool": "bool", "String": "str"}
ENTRY_SCALARS = {"Float": "ks::Float", "Integer": "ks::Integer", "Bool": "ks::Bool", "String": "ks::String"}


def ext_name(module_name: str) -> str:
    return module_name + EXT_SUFFIX


#: A standalone module's copy of ksbind/torch_runtime.py, beside it: NAME + this.
RUNTIME_SUFFIX = "_ksbind_runtime"


def runtime_module_name(module_name: str) -> str:
    return module_name + RUNTIME_SUFFIX


def wrapper_imports(options: ModuleOptions) -> dict[str, str]:
    """How the generated wrapper imports its runtime support and its extension:
    from ksbind and by top-level name in ksbind's cache; standalone (a wheel),
    from its own copy of the runtime beside it and the extension by its full name."""
    ext = ext_name(options.name)
    if not options.standalone:
        return {"torch_runtime_import": "from ksbind import torch_runtime as _runtime", "ext_import": ext}
    return {"torch_runtime_import": runtime_copy_import(options, runtime_module_name(options.name)),
            "ext_import": f"{options.package}.{ext}" if options.package else ext}


# ------------------------------------------------------------ crossing rules
#
#   (Tensor N S), S Float/Integer/Bool     at::Tensor (a view of the caller's tensor)
#   (Tensor 1 (Tensor M ... S))            Nested<...>: one stacked tensor (rows viewed) or a list
#   (Tensor 1 X), X any other element      std::vector<X's entry type> (a list)
#   Float/Integer/Bool argument            ScalarArg<...>: a Python number or a 0-dim tensor
#   Float/Integer/Bool result              a 0-dim tensor, as torch.sum returns
#   a type holding no scalar at all        std::tuple<> (the tangent of discrete values: ``()``)
#   (Tuple ...)                            std::tuple of the elements' entry types

#: An entry point's side of a crossing: what it takes (a parameter) or returns (a result or gradients).
TorchSide = Literal["param", "result"]


def is_scalar_tensor(t: KsType) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element, ScalarType) and t.element.name in TENSOR_ELEMENTS


def is_nested_tensor(t: KsType) -> bool:
    """(Tensor 1 (Tensor M ... S)): a tensor of tensors, stackable into one tensor."""
    return (isinstance(t, TensorType) and t.rank == 1 and isinstance(t.element, TensorType)
            and (is_scalar_tensor(t.element) or is_nested_tensor(t.element)))


def stacked_rank(t: KsType) -> int:
    """The rank of the one tensor a (nested) tensor of scalars stacks into."""
    return t.rank + stacked_rank(t.element) if isinstance(t, TensorType) else 0


def leaf_element(t: KsType) -> str:
    while isinstance(t, TensorType):
        t = t.element
    return cast(ScalarType, t).name


def holds_no_scalar(t: KsType) -> bool:
    """Types built of tuples and tensors only: the tangents of discrete values (``()``)."""
    return not t.contains(lambda x: isinstance(x, ScalarType))


def unsupported_reason(t: KsType) -> str | None:
    """Why a value of type t cannot cross the torch boundary, or None."""
    if holds_no_scalar(t):
        return None
    for sub in t.walk():
        if not isinstance(sub, TensorType) or is_scalar_tensor(sub):
            continue
        if isinstance(sub.element, ScalarType):  # Tensor of String
            return (f"{sub} is a tensor of {sub.element}; torch tensors cannot hold it "
                    f"(use the python target for string tensors)")
        if sub.rank != 1:
            return (f"{sub} is a rank-{sub.rank} tensor of {sub.element}; the torch target takes tensors of "
                    f"tensors or tuples as rank-1 (lists, or one stacked tensor); use the python target")
    return None


def py_type(t: KsType, role: TorchSide = "param") -> str:
    if holds_no_scalar(t):
        return "tuple[()]"
    if isinstance(t, ScalarType):
        if t.name in TENSOR_ELEMENTS:
            return f"{SCALAR_PY[t.name]} | torch.Tensor" if role == "param" else "torch.Tensor"
        return SCALAR_PY[t.name]
    if is_nested_tensor(t):
        inner = py_type(t.element, role)  # type: ignore[attr-defined]
        return f"torch.Tensor | Sequence[{inner}]" if role == "param" else f"torch.Tensor | list[{inner}]"
    if isinstance(t, TensorType) and not is_scalar_tensor(t):
        inner = py_type(t.element, role)
        return f"Sequence[{inner}]" if role == "param" else f"list[{inner}]"
    if isinstance(t, TensorType):
        return "torch.Tensor"
    if isinstance(t, TupleType):
        return "tuple[" + (", ".join(py_type(e, role) for e in t.elements) or "()") + "]"
    return "object"


def entry_type(t: KsType, role: TorchSide = "param") -> str:
    """The C++ type an entry point takes (role "param") or returns for t (pybind11 converts it)."""
    if holds_no_scalar(t):
        return "std::tuple<>"
    if is_scalar_tensor(t):
        return "at::Tensor"
    if is_nested_tensor(t):
        return f"ksbind::torch_target::Nested<{entry_type(t.element, role)}>"  # type: ignore[attr-defined]
    if isinstance(t, TensorType):
        return f"std::vector<{entry_type(t.element, role)}>"
    if isinstance(t, TupleType):
        return "std::tuple<" + ", ".join(entry_type(e, role) for e in t.elements) + ">"
    if isinstance(t, ScalarType) and t.name in TENSOR_ELEMENTS:
        return f"ksbind::torch_target::ScalarArg<{ENTRY_SCALARS[t.name]}>" if role == "param" else "at::Tensor"
    if isinstance(t, ScalarType):
        return ENTRY_SCALARS[t.name]
    return t.cpp


def _converts(t: KsType) -> bool:
    """Whether the value needs a torch converter (anything but strings and their tuples)."""
    return holds_no_scalar(t) or t.contains(
        lambda x: isinstance(x, TensorType) or (isinstance(x, ScalarType) and x.name in TENSOR_ELEMENTS))


def crossing(t: KsType, role: CrossingRole) -> Crossing:
    side: TorchSide = "param" if role == "param" else "result"
    if not _converts(t):
        return Crossing(t.cpp, "", py_type(t, side))  # strings and their tuples: pybind11 converts them
    if side == "param":
        return Crossing(entry_type(t, side), f"ksbind::torch_target::from_torch<{t.cpp}>", py_type(t, side))
    return Crossing(entry_type(t, side), "ksbind::torch_target::to_torch", py_type(t, side))


# ------------------------------------------------------------ mode checks

def _fail(b: Binding, message: str) -> None:
    raise BindingError(f"binding {b.name!r} ({b.decl.name}): {message}", b.location)


def check_binding(b: Binding) -> None:
    """Every way a binding can fail to fit the torch target or its mode."""
    d = b.decl
    for t in list(d.params) + [d.return_type]:
        reason = unsupported_reason(t)
        if reason:
            _fail(b, reason)
    if b.mode == "elementwise":
        if not 1 <= len(d.params) <= 2 or any(p != FLOAT for p in d.params) or d.return_type != FLOAT:
            _fail(b, f"mode elementwise needs a scalar function Float -> Float or (Float, Float) -> Float; "
                     f"this one is {d.signature}")
    elif b.mode == "vmap":
        if not any(is_scalar_tensor(p) for p in d.params):
            _fail(b, f"mode vmap maps over the leading dimension of tensor arguments, and {d.signature} "
                     f"takes no tensor")
        for p in d.params:
            if not (is_scalar_tensor(p) or isinstance(p, ScalarType)):
                _fail(b, f"mode vmap takes tensors (batched) and scalars (shared by every step); "
                         f"argument type {p} is neither")
            if b.vjp_decl is not None and p == FLOAT:
                _fail(b, "mode vmap with a vjp: a Float argument shared by every step would need its gradient "
                         "summed over the batch; pass it as a tensor instead")
        r = d.return_type
        parts = r.elements if isinstance(r, TupleType) else (r,)
        ok = all(is_scalar_tensor(x) or (isinstance(x, ScalarType) and x.name in TENSOR_ELEMENTS) for x in parts)
        if not ok or (isinstance(r, TupleType) and (not parts or b.vjp_decl is not None)):
            _fail(b, f"mode vmap stacks each step's result: it must be a tensor of Float/Integer/Bool, one of "
                     f"those scalars{'' if b.vjp_decl is not None else ', or a tuple of them'}; found {r}")


# ------------------------------------------------------------ template values

#: How the wrapper passes an argument: a tensor (viewed), a nested list of tensors, a list, a scalar, a tuple.
TorchParamKind = Literal["tensor", "nested", "list", "scalar", "tuple"]
#: What a result is in Python: a tensor, one stacked tensor (or a list when ragged), ``()``, a list,
#: a tuple, or a Python scalar (a string).
TorchResultKind = Literal["tensor", "nested", "empty", "list", "tuple", "scalar"]


def _joined(items: Iterable[str]) -> str:
    return ", ".join(items)


@dataclass(frozen=True)
class TorchParam:
    """How the wrapper and the mode loops treat one argument."""

    name: str            # C++ parameter name (arg0...)
    py_name: str
    ks_value: str        # the ks value's C++ name
    cpp_type: str        # its ks C++ type
    kind: TorchParamKind
    batched: bool        # vmap: sliced along the leading dimension
    differentiable: bool  # autograd gives it a gradient (it holds a Float; tensors only for ops and vmap)
    schema: str          # torch.library schema type
    rank: int            # rank of the (stacked) tensor (0 for scalars)

    @property
    def converted(self) -> bool:
        """The entry point converts it into a ks value of its own (``ks_value``, not ``name``)."""
        return self.ks_value != self.name


@dataclass(frozen=True)
class TorchEntry:
    """One entry point as the mode loops (torch_entry_points.cpp.j2) print it."""

    name: str
    mode: Mode
    is_vjp: bool
    params: tuple[TorchParam, ...]
    result_cpp: str      # ks C++ type of what the ks function returns
    out_count: int       # elementwise: outputs per element
    out_is_tuple: bool
    call: str = ""       # the ks call, with ``alloc`` as its allocator (the loops' own)
    #: The C++ lists the loops print, made from the fields when first read (``--dump-context`` shows them).
    DERIVED: ClassVar[tuple[str, ...]] = ("param_addresses", "py_name_list", "float_params", "out_names",
                                          "out_pointers", "batch_sizes", "step_elements")

    @cached_property
    def param_addresses(self) -> str:
        """``&arg0, &arg1``: the elementwise loop's inputs."""
        return _joined(f"&{p.name}" for p in self.params)

    @cached_property
    def py_name_list(self) -> str:
        """``"x", "y"``: the arguments' Python names as C++ strings (for messages)."""
        return _joined(cpp_string(p.py_name) for p in self.params)

    @cached_property
    def float_params(self) -> str:
        """``, ks::Float arg0, ...``: the elementwise lambda's parameters after its allocator."""
        return "".join(f", ks::Float {p.ks_value}" for p in self.params)

    @cached_property
    def out_names(self) -> str:
        """``out0, out1``: the elementwise outputs."""
        return _joined(f"out{k}" for k in range(self.out_count))

    @cached_property
    def out_pointers(self) -> str:
        """``out0.data_ptr<float>(), ...``: where the elementwise loop writes."""
        return _joined(f"out{k}.data_ptr<float>()" for k in range(self.out_count))

    @cached_property
    def batch_sizes(self) -> str:
        """``{ arg0_b.batch, "x" }, ...``: each batched argument's leading size, named (vmap)."""
        return _joined(f"{{ {p.name}_b.batch, {cpp_string(p.py_name)} }}" for p in self.params if p.batched)

    @cached_property
    def step_elements(self) -> str:
        """``arg0_b.step_elements(), ...``: the elements one step reads (vmap)."""
        return _joined(f"{p.name}_b.step_elements()" for p in self.params if p.batched)


@dataclass(frozen=True)
class TorchResult:
    """What the wrapper (fake implementations, autograd) knows of a result: a tree of these."""

    kind: TorchResultKind
    dtype: str = ""      # tensor, nested: the torch dtype's name (float32, int32, bool)
    rank: int = -1       # tensor, nested: its rank (-1: any, an elementwise result)
    element: TorchResult | None = None   # list: its elements
    parts: tuple[TorchResult, ...] = ()  # tuple: its elements
    type: str = ""       # scalar: its ks type

    def plain(self) -> dict[str, object]:
        """The result as the wrapper's ``BINDINGS`` spells it (ksbind/torch_runtime.py reads it)."""
        if self.kind in ("tensor", "nested"):
            return {"kind": self.kind, "dtype": self.dtype, "rank": self.rank}
        if self.kind == "list" and self.element is not None:
            return {"kind": self.kind, "element": self.element.plain()}
        if self.kind == "tuple":
            return {"kind": self.kind, "parts": [p.plain() for p in self.parts]}
        if self.kind == "scalar":
            return {"kind": self.kind, "type": self.type}
        return {"kind": self.kind}


@dataclass(frozen=True)
class TorchWrapperParam:
    """One argument as the wrapper sees it (ksbind/torch_runtime.py)."""

    name: str            # its Python name
    kind: TorchParamKind
    differentiable: bool
    batched: bool
    schema: str
    rank: int


@dataclass(frozen=True)
class TorchBinding:
    """What ksbind/torch_runtime.py needs to wrap one binding."""

    name: str
    vjp: str | None
    mode: Mode
    params: tuple[TorchWrapperParam, ...]
    result: TorchResult
    autograd: bool
    op: bool             # registered as a torch.library op
    schema: str | None
    vjp_schema: str | None

    def plain(self) -> dict[str, object]:
        """The binding as the wrapper's ``BINDINGS`` spells it: plain values only."""
        return {"name": self.name, "vjp": self.vjp, "mode": self.mode, "params": tuple(asdict(p) for p in self.params),
                "result": self.result.plain(), "autograd": self.autograd, "op": self.op, "schema": self.schema,
                "vjp_schema": self.vjp_schema}


def _param_kind(t: KsType) -> TorchParamKind:
    if is_scalar_tensor(t):
        return "tensor"
    if is_nested_tensor(t):
        return "nested"
    if isinstance(t, TensorType):
        return "list"
    return "tuple" if isinstance(t, TupleType) else "scalar"


def _holds_float(t: KsType) -> bool:
    return t.contains(lambda x: x == FLOAT)


def _torch_params(e: EntryPoint, mode: Mode, as_op: bool) -> tuple[TorchParam, ...]:
    """as_op: the binding is a torch.library op, whose schema differentiates tensors only."""
    out = []
    for p in e.params:
        t = p.ks_type
        kind = _param_kind(t)
        batched = mode == "vmap" and (kind == "tensor" or (e.is_vjp and p is e.params[-1]))
        if mode == "elementwise":
            kind = "tensor"
            differentiable = True
        elif mode == "vmap":
            differentiable = kind == "tensor" and isinstance(t, TensorType) and t.element == FLOAT
        elif as_op:
            differentiable = kind in ("tensor", "nested") and leaf_element(t) == "Float"
        else:  # plain: every Float anywhere in the argument gets its gradient
            differentiable = _holds_float(t)
        if kind in ("tensor", "nested"):
            schema = "Tensor"
        else:
            schema = SCHEMA_SCALARS.get(str(t), "") if kind == "scalar" else ""
        out.append(TorchParam(p.name, p.py_name, p.ks_value, p.cpp_type, kind, batched, differentiable, schema,
                              stacked_rank(t)))
    return tuple(out)


def _mode_entry_type(t: KsType, mode: Mode) -> str:
    """Entry type of a param or result after the mode's batching."""
    if isinstance(t, TupleType):
        return "std::tuple<" + ", ".join(_mode_entry_type(x, mode) for x in t.elements) + ">"
    if mode == "elementwise" and t == FLOAT:
        return "at::Tensor"
    if mode == "vmap":
        if isinstance(t, TensorType) or (isinstance(t, ScalarType) and t.name in TENSOR_ELEMENTS):
            return "at::Tensor"
    return entry_type(t)


def _result_info(t: KsType, mode: Mode) -> TorchResult:
    """What the wrapper (fake implementations, autograd) needs to know of a result."""
    def one(x: KsType) -> TorchResult:
        if mode != "plain" and (isinstance(x, TensorType) or (isinstance(x, ScalarType) and x.name in TENSOR_ELEMENTS)):
            rank = (x.rank if isinstance(x, TensorType) else 0) + (1 if mode == "vmap" else 0)
            return TorchResult("tensor", TORCH_DTYPES[leaf_element(x)], rank if mode == "vmap" else -1)
        if holds_no_scalar(x):
            return TorchResult("empty")
        if is_scalar_tensor(x) or (isinstance(x, ScalarType) and x.name in TENSOR_ELEMENTS):
            return TorchResult("tensor", TORCH_DTYPES[leaf_element(x)], stacked_rank(x))
        if is_nested_tensor(x):  # one stacked tensor, or a list when ragged
            return TorchResult("nested", TORCH_DTYPES[leaf_element(x)], stacked_rank(x))
        if isinstance(x, TensorType):
            return TorchResult("list", element=one(x.element))
        if isinstance(x, TupleType):
            return TorchResult("tuple", parts=tuple(one(e) for e in x.elements))
        return TorchResult("scalar", type=str(x))
    return one(t)


def _schema_type(info: TorchResult) -> str | None:
    """The torch.library schema of a result, or None where a schema cannot say it."""
    if info.kind in ("tensor", "nested"):
        return "Tensor"
    if info.kind == "tuple" and info.parts:
        parts = [_schema_type(p) for p in info.parts]
        return None if None in parts else "(" + ", ".join(p for p in parts if p) + ")"
    return None


def library_problem(b: Binding, params: Sequence[TorchParam], result: TorchResult) -> str | None:
    """Why torch.library cannot express binding b as an op, or None."""
    for p in params:
        if not p.schema:
            return (f"argument {p.py_name!r} ({p.kind}) has no torch.library schema type "
                    f"(ops take tensors, numbers and strings)")
    if _schema_type(result) is None:
        return (f"its result {b.decl.return_type} has no torch.library schema type "
                f"(ops return tensors, numbers as 0-dim tensors, or a tuple of them)")
    return None


def extra_context(bindings: Sequence[Binding], options: ModuleOptions) -> dict[str, Any]:
    """Values only the torch templates use, computed once here."""
    for b in bindings:
        check_binding(b)
    entries = {e.name: e for e in entry_points_for(list(bindings), crossing)}
    torch_entries: dict[str, TorchEntry] = {}
    infos: list[TorchBinding] = []
    for b in bindings:
        result = _result_info(b.decl.return_type, b.mode)
        as_op = options.torch_library is not None
        if as_op:
            problem = library_problem(b, _torch_params(entries[b.name], b.mode, True), result)
            if problem:
                # Only this binding stays out of torch.library; the rest of the module is unaffected.
                warn(f"{b.location}: binding {b.name!r} ({b.decl.name}) is not a torch.library op: {problem}; "
                     f"it is bound as a plain function (torch.compile graph-breaks on it)")
                as_op = False
        for e in [entries[b.name]] + ([entries[b.vjp_name]] if b.vjp_name else []):
            rt = (b.vjp_decl if e.is_vjp else b.decl).return_type  # type: ignore[union-attr]
            parts = rt.elements if isinstance(rt, TupleType) else (rt,)
            torch_entries[e.name] = TorchEntry(
                name=e.name, mode=b.mode, is_vjp=e.is_vjp, params=_torch_params(e, b.mode, as_op),
                result_cpp=rt.cpp, out_count=len(parts), out_is_tuple=isinstance(rt, TupleType),
                call=e.call_with("alloc"))
        primal = torch_entries[b.name]
        params = tuple(TorchWrapperParam(p.py_name, p.kind, p.differentiable, p.batched, p.schema, p.rank)
                       for p in primal.params)
        if b.mode == "plain":  # any result: scalars are 0-dim tensors, nested and tuple results flatten
            differentiable_result = True
        else:
            differentiable_result = result.kind == "tensor" and result.dtype == "float32"
        autograd = b.vjp_name is not None and differentiable_result and any(p.differentiable for p in params)
        if as_op and autograd:  # the op's backward needs a float result to take a gradient of
            result_parts = result.parts if result.kind == "tuple" else (result,)
            autograd = any(part.dtype == "float32" for part in result_parts)
        schema = vjp_schema = None
        if as_op:
            args = ", ".join(f"{p.schema} {p.name}" for p in params)
            schema = f"({args}) -> {_schema_type(result)}"
            if autograd:
                grads = [p for p in params if p.differentiable]
                outs = "Tensor" if len(grads) == 1 else "(" + ", ".join("Tensor" for _ in grads) + ")"
                dret = "Tensor[]" if result.kind == "tuple" else "Tensor"
                vjp_schema = f"({args}, {dret} dret) -> {outs}"
        infos.append(TorchBinding(b.name, b.vjp_name, b.mode, params, result, autograd, as_op, schema, vjp_schema))
    # torch.library ops carry their own autograd and batching rule: no routing to a
    # Python Function then. Every other binding with arguments has a Function
    # (torch_runtime.autograd_function, or forward_function without a vjp: for torch.func).
    slots = [b for b in infos if not b.op and (b.autograd or b.params)]
    autograd_slots = {b.name: AutogradSlot(i, tuple(p.name for p in torch_entries[b.name].params if p.differentiable)
                                           if b.autograd else (), tuple(p.name for p in torch_entries[b.name].params))
                      for i, b in enumerate(slots)}
    # In elementwise and vmap modes every Float/tensor argument and result is a
    # tensor from Python: the stubs and docs see those types (the context builds
    # its bindings and stub from these entry points).
    moded = {name: _moded_entry(e, torch_entries[name]) for name, e in entries.items()}
    return {
        "entry_points": list(moded.values()),
        "torch_autograd_slots": autograd_slots,
        "torch_entries": torch_entries,
        "torch_entry_types": {name: _entry_signature(e, entries[name], b_mode=e.mode)
                              for name, e in torch_entries.items()},
        "torch_bindings": infos,
        # The Python signature line of each entry whose C++ returns pybind11::object (the
        # autograd-routed ones): pybind11 would say "-> object" (torch_module.cpp.j2).
        "torch_py_signatures": {name: f"{name}({', '.join(f'{p.py_name}: {p.py_type}' for p in e.params)}) -> "
                                      f"{e.result.py_type}" for name, e in moded.items()},
        # The bindings the wrapper exports as torch.library ops (help() gets their stub signature).
        "torch_op_names": [i.name for i in infos if i.op],
        "torch_bindings_literal": pprint.pformat([i.plain() for i in infos], indent=1, width=110, sort_dicts=False),
        "ext_name": ext_name(options.name),
        **wrapper_imports(options),
    }


def _moded_entry(e: EntryPoint, te: TorchEntry) -> EntryPoint:
    if te.mode == "plain":
        return e
    params = tuple(replace(p, py_type="torch.Tensor") if te.mode == "elementwise" or tp.batched else p
                   for p, tp in zip(e.params, te.params))
    result = e.result
    rt = result.ks_type
    if isinstance(rt, TupleType):
        py = "tuple[" + ", ".join("tuple[()]" if x == TupleType(()) else "torch.Tensor" for x in rt.elements) + "]"
    else:
        py = "torch.Tensor"
    return replace(e, params=params, result=replace(result, py_type=py))


@dataclass(frozen=True)
class AutogradSlot:
    """A binding whose C++ entry hands off to its Python autograd.Function when
    grad mode is on and one of ``grad_params`` requires grad, or a parameter holds
    a tensor of a torch.func transform (checked in C++, so plain calls without
    gradients pay next to nothing)."""

    index: int
    grad_params: tuple[str, ...]  # C++ names of the differentiable tensor parameters
    # C++ names of all parameters: a tensor of torch.func's (vmap, grad) in any
    # of them routes the call to the Function too, whatever grad mode says.
    tensor_params: tuple[str, ...] = ()
    #: The C++ the module prints, made from the fields when first read (``--dump-context`` shows it).
    DERIVED: ClassVar[tuple[str, ...]] = ("condition",)

    @cached_property
    def condition(self) -> str:
        """The C++ bool expression under which the call goes to the Function."""
        tt = "ksbind::torch_target::"
        func = f"({tt}functorch_active() && ({' || '.join(f'{tt}functorch_wrapped({n})' for n in self.tensor_params)}))"
        if not self.grad_params:
            return func
        grad = " || ".join(f"{tt}requires_grad({n})" for n in self.grad_params)
        return f"(c10::GradMode::is_enabled() && ({grad})) || {func}"


@dataclass(frozen=True)
class EntrySignature:
    """The entry point's C++ parameter and return types after the mode's batching."""

    result: str
    params: tuple[tuple[str, str], ...]  # (entry type, name)
    name: str = ""                       # the entry point's C++ name
    #: The C++ the templates print, made from the fields when first read (``--dump-context`` shows them).
    DERIVED: ClassVar[tuple[str, ...]] = ("param_list", "arg_list", "moved_arg_list", "declaration")

    @cached_property
    def param_list(self) -> str:
        """``T arg0, U arg1``: the C++ parameters."""
        return _joined(f"{t} {n}" for t, n in self.params)

    @cached_property
    def arg_list(self) -> str:
        """``arg0, arg1``: the parameters passed on."""
        return _joined(n for _, n in self.params)

    @cached_property
    def moved_arg_list(self) -> str:
        """``std::move(arg0), ...``: the parameters moved on."""
        return _joined(f"std::move({n})" for _, n in self.params)

    @cached_property
    def declaration(self) -> str:
        """Its C++ signature: result type, name, parameters."""
        return f"{self.result} {self.name}({self.param_list})"


def _entry_signature(te: TorchEntry, e: EntryPoint, b_mode: Mode) -> EntrySignature:
    if b_mode == "plain":
        return EntrySignature(e.result.entry_type, tuple((p.entry_type, p.name) for p in e.params), e.name)
    params = []
    for p, tp in zip(e.params, te.params):
        batched = b_mode == "elementwise" or tp.batched
        params.append((_mode_entry_type(p.ks_type, b_mode) if batched else entry_type(p.ks_type), p.name))
    return EntrySignature(_mode_entry_type(e.result.ks_type, b_mode), tuple(params), e.name)


TARGET = Target(
    name=NAME, files=FILES, single_file=SINGLE_FILE, crossing=crossing, extra_context=extra_context,
    build="torch", tensors="torch.Tensor", release_gil_always=True, stub_imports=("import torch",),
    torch_library=True, compiled_name=ext_name, runtime_copy="{module}" + RUNTIME_SUFFIX + ".py",
    runtime_source="torch_runtime.py", cpu_kernels=True,
)


__all__ = ["NAME", "TARGET", "FILES", "SINGLE_FILE", "EXT_SUFFIX", "crossing", "py_type", "entry_type", "check_binding",
           "extra_context", "ext_name", "runtime_module_name", "wrapper_imports", "RUNTIME_SUFFIX"]
