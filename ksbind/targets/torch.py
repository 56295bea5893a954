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
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ..binding import Binding
from ..errors import BindingError
from ..types import FLOAT, KsType, ScalarType, TensorType, TupleType, parse_type
from .common import Crossing
from .ks import SCALAR_PY

NAME = "torch"
# "{module}" in a file name is replaced by the module's name: NAME.py (the wrapper
# users import) and NAME.pyi (its stub) sit next to the extension NAME_ext.
FILES = {"entry_points.h": "torch_entry_points.h.j2", "entry_points.cpp": "torch_entry_points.cpp.j2",
         "module.cpp": "torch_module.cpp.j2", "{module}.py": "torch_wrapper.py.j2"}
SINGLE_FILE = {"module.cpp": "torch_single_file.cpp.j2", "{module}.py": "torch_wrapper.py.j2"}
FILES["{module}.pyi"] = SINGLE_FILE["{module}.pyi"] = "stub.pyi.j2"  # the typed stub, named after the module
#: The compiled extension is ``NAME + EXT_SUFFIX``; ``NAME.py`` wraps it.
EXT_SUFFIX = "_ext"
TENSOR_ELEMENTS = ("Float", "Integer", "Bool")
TORCH_DTYPES = {"Float": "float32", "Integer": "int32", "Bool": "bool"}
SCHEMA_SCALARS = {"Float": "float", "Integer": "int", "Bool": "bool", "String": "str"}
ENTRY_SCALARS = {"Float": "ks::Float", "Integer": "ks::Integer", "Bool": "ks::Bool", "String": "ks::String"}


def ext_name(module_name: str) -> str:
    return module_name + EXT_SUFFIX


# ------------------------------------------------------------ crossing rules

def is_scalar_tensor(t: KsType) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element, ScalarType) and t.element.name in TENSOR_ELEMENTS


def unsupported_reason(t: KsType) -> str | None:
    """Why a value of type t cannot cross the torch boundary, or None."""
    for sub in t.walk():
        if isinstance(sub, TensorType) and not is_scalar_tensor(sub):
            return (f"{sub} is not a tensor of Float, Integer or Bool; torch tensors cannot hold it "
                    f"(use the python target for nested or string tensors)")
    return None


def py_type(t: KsType) -> str:
    if isinstance(t, ScalarType):
        return SCALAR_PY[t.name]
    if isinstance(t, TensorType):
        return "torch.Tensor"
    if isinstance(t, TupleType):
        return "tuple[" + (", ".join(py_type(e) for e in t.elements) or "()") + "]"
    return "object"


def entry_type(t: KsType) -> str:
    """The C++ type an entry point takes or returns for t (pybind11 converts it)."""
    if isinstance(t, TensorType):
        return "at::Tensor"
    if isinstance(t, TupleType):
        return "std::tuple<" + ", ".join(entry_type(e) for e in t.elements) + ">"
    if isinstance(t, ScalarType):
        return ENTRY_SCALARS[t.name]
    return t.cpp


def _holds_tensor(t: KsType) -> bool:
    return t.contains(lambda x: isinstance(x, TensorType))


def crossing(t: KsType, role: str) -> Crossing:
    if not _holds_tensor(t):
        return Crossing(t.cpp, "", py_type(t))  # pybind11 converts scalars and their tuples
    if role == "param":
        return Crossing(entry_type(t), f"ksbind::torch_target::from_torch<{t.cpp}>", py_type(t))
    return Crossing(entry_type(t), "ksbind::torch_target::to_torch", py_type(t))


# ------------------------------------------------------------ mode checks

def _fail(b: Binding, message: str) -> None:
    raise BindingError(f"binding {b.name!r} ({b.decl.name}): {message}", b.location)


def check_binding(b: Binding, torch_library: str | None) -> None:
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
    if torch_library is not None:
        for p in d.params:
            if isinstance(p, TupleType):
                _fail(b, f"torch_library ops take tensors and scalars; argument type {p} is a tuple")
        r = d.return_type
        parts = r.elements if isinstance(r, TupleType) else (r,)
        if b.mode == "plain" and (not parts or not all(isinstance(x, TensorType) for x in parts)):
            _fail(b, f"torch_library ops (mode plain) return a tensor or a flat tuple of tensors; found {r}")


# ------------------------------------------------------------ template values

@dataclass(frozen=True)
class TorchParam:
    """How the wrapper and the mode loops treat one argument."""

    name: str            # C++ parameter name (arg0...)
    py_name: str
    ks_value: str        # the ks value's C++ name
    cpp_type: str        # its ks C++ type
    kind: str            # tensor | scalar | tuple
    batched: bool        # vmap: sliced along the leading dimension
    differentiable: bool  # autograd gives it a gradient (Float tensors only)
    schema: str          # torch.library schema type
    rank: int            # tensor rank (0 otherwise)


@dataclass(frozen=True)
class TorchEntry:
    name: str
    mode: str
    is_vjp: bool
    params: tuple[TorchParam, ...]
    result_cpp: str      # ks C++ type of what the ks function returns
    out_count: int       # elementwise: outputs per element
    out_is_tuple: bool


@dataclass(frozen=True)
class TorchBinding:
    """What ksbind/torch_runtime.py needs to wrap one binding (plain values only)."""

    name: str
    vjp: str | None
    mode: str
    params: tuple[dict[str, Any], ...]
    result: dict[str, Any]
    autograd: bool
    schema: str | None
    vjp_schema: str | None


def _param_kind(t: KsType) -> str:
    return "tensor" if isinstance(t, TensorType) else "tuple" if isinstance(t, TupleType) else "scalar"


def _torch_params(e: Any, mode: str) -> tuple[TorchParam, ...]:
    out = []
    for p in e.params:
        t = parse_type(p.ks_type)
        kind = _param_kind(t)
        batched = mode == "vmap" and (kind == "tensor" or (e.is_vjp and p is e.params[-1]))
        if mode == "elementwise":
            kind = "tensor"
        differentiable = (kind == "tensor" and (mode == "elementwise" or
                                                (isinstance(t, TensorType) and t.element == FLOAT)))
        schema = "Tensor" if kind == "tensor" else SCHEMA_SCALARS.get(str(t), "Any")
        out.append(TorchParam(p.name, p.py_name, p.ks_value, p.cpp_type, kind, batched, differentiable, schema,
                              t.rank if isinstance(t, TensorType) else 0))
    return tuple(out)


def _mode_entry_type(t: KsType, mode: str) -> str:
    """Entry type of a param or result after the mode's batching."""
    if isinstance(t, TupleType):
        return "std::tuple<" + ", ".join(_mode_entry_type(x, mode) for x in t.elements) + ">"
    if mode == "elementwise" and t == FLOAT:
        return "at::Tensor"
    if mode == "vmap":
        if isinstance(t, TensorType) or (isinstance(t, ScalarType) and t.name in TENSOR_ELEMENTS):
            return "at::Tensor"
    return entry_type(t)


def _result_info(t: KsType, mode: str) -> dict[str, Any]:
    def one(x: KsType) -> dict[str, Any]:
        if mode != "plain" and (isinstance(x, TensorType) or (isinstance(x, ScalarType) and x.name in TENSOR_ELEMENTS)):
            rank = (x.rank if isinstance(x, TensorType) else 0) + (1 if mode == "vmap" else 0)
            element = x.element.name if isinstance(x, TensorType) else x.name  # type: ignore[attr-defined]
            return {"kind": "tensor", "dtype": TORCH_DTYPES[element], "rank": rank if mode == "vmap" else -1}
        if isinstance(x, TensorType):
            return {"kind": "tensor", "dtype": TORCH_DTYPES[x.element.name], "rank": x.rank}  # type: ignore[attr-defined]
        if isinstance(x, TupleType):
            return {"kind": "tuple", "parts": [one(e) for e in x.elements]}
        return {"kind": "scalar", "type": str(x)}
    return one(t)


def _schema_type(info: dict[str, Any]) -> str:
    if info["kind"] == "tensor":
        return "Tensor"
    if info["kind"] == "tuple":
        return "(" + ", ".join(_schema_type(p) for p in info["parts"]) + ")"
    return SCHEMA_SCALARS[info["type"]]


def extra_context(bindings: Sequence[Binding], options: Any) -> dict[str, Any]:
    """Values only the torch templates use, computed once here."""
    from .common import entry_points_for

    for b in bindings:
        check_binding(b, options.torch_library)
    entries = {e.name: e for e in entry_points_for(list(bindings), crossing)}
    torch_entries: dict[str, TorchEntry] = {}
    infos: list[TorchBinding] = []
    for b in bindings:
        for e in [entries[b.name]] + ([entries[b.vjp_name]] if b.vjp_name else []):
            rt = (b.vjp_decl if e.is_vjp else b.decl).return_type  # type: ignore[union-attr]
            parts = rt.elements if isinstance(rt, TupleType) else (rt,)
            torch_entries[e.name] = TorchEntry(
                name=e.name, mode=b.mode, is_vjp=e.is_vjp, params=_torch_params(e, b.mode),
                result_cpp=rt.cpp, out_count=len(parts), out_is_tuple=isinstance(rt, TupleType))
        primal = torch_entries[b.name]
        result = _result_info(b.decl.return_type, b.mode)
        params = tuple({"name": p.py_name, "kind": p.kind, "differentiable": p.differentiable,
                        "batched": p.batched, "schema": p.schema, "rank": p.rank} for p in primal.params)
        autograd = b.vjp_name is not None and result["kind"] == "tensor" and result.get("dtype") == "float32" \
            and any(p["differentiable"] for p in params)
        schema = vjp_schema = None
        if options.torch_library is not None:
            args = ", ".join(f"{p['schema']} {p['name']}" for p in params)
            schema = f"({args}) -> {_schema_type(result)}"
            if autograd:
                grads = [p for p in params if p["differentiable"]]
                outs = "Tensor" if len(grads) == 1 else "(" + ", ".join("Tensor" for _ in grads) + ")"
                vjp_schema = f"({args}, Tensor dret) -> {outs}"
        infos.append(TorchBinding(b.name, b.vjp_name, b.mode, params, result, autograd, schema, vjp_schema))
    # torch.library ops carry their own autograd: no routing to a Python Function then.
    slots = [b for b in infos if b.autograd and options.torch_library is None]
    autograd_slots = {b.name: AutogradSlot(i, tuple(p.name for p in torch_entries[b.name].params if p.differentiable))
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
        "torch_bindings_literal": pprint.pformat([asdict(i) for i in infos], indent=1, width=110, sort_dicts=False),
        "ext_name": ext_name(options.name),
    }


def _moded_entry(e: Any, te: TorchEntry) -> Any:
    if te.mode == "plain":
        return e
    from dataclasses import replace
    params = tuple(replace(p, py_type="torch.Tensor") if te.mode == "elementwise" or tp.batched else p
                   for p, tp in zip(e.params, te.params))
    result = e.result
    rt = parse_type(result.ks_type)
    if isinstance(rt, TupleType):
        py = "tuple[" + ", ".join("tuple[()]" if x == TupleType(()) else "torch.Tensor" for x in rt.elements) + "]"
    else:
        py = "torch.Tensor"
    return replace(e, params=params, result=replace(result, py_type=py))


@dataclass(frozen=True)
class AutogradSlot:
    """A binding whose C++ entry hands off to its Python autograd.Function when
    grad mode is on and one of ``grad_params`` requires grad (checked in C++, so
    calls without gradients pay nothing)."""

    index: int
    grad_params: tuple[str, ...]  # C++ names of the differentiable tensor parameters


@dataclass(frozen=True)
class EntrySignature:
    """The entry point's C++ parameter and return types after the mode's batching."""

    result: str
    params: tuple[tuple[str, str], ...]  # (entry type, name)


def _entry_signature(te: TorchEntry, e: Any, b_mode: str) -> EntrySignature:
    if b_mode == "plain":
        return EntrySignature(e.result.entry_type, tuple((p.entry_type, p.name) for p in e.params))
    params = []
    for p, tp in zip(e.params, te.params):
        t = parse_type(p.ks_type)
        batched = b_mode == "elementwise" or tp.batched
        params.append((_mode_entry_type(t, b_mode) if batched else entry_type(t), p.name))
    return EntrySignature(_mode_entry_type(parse_type(e.result.ks_type), b_mode), tuple(params))


__all__ = ["NAME", "FILES", "SINGLE_FILE", "EXT_SUFFIX", "crossing", "py_type", "entry_type", "check_binding",
           "extra_context", "ext_name"]
