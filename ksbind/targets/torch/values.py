"""The torch target's value rules, which its codegen (torch.py) and stubs apply.

Which ks types have a torch form and what they are in Python: tensors of Float, Integer
and Bool (float32, int32 and bool tensors); rank-1 tensors of tensors (one stacked
tensor, or a list of them, ragged or not); rank-1 tensors of anything else (lists); tuples;
Float/Integer/Bool scalars (numbers, or 0-dim tensors; results are 0-dim tensors); strings.
Tensors of strings and rank-2-and-above tensors of tensors have none. Each mode's
rules (``check_binding``): ``elementwise`` maps a scalar Float function over tensors,
``vmap`` maps a function over the leading dimension of its tensor arguments.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, cast

from ksbind.codegen.targets.common import (
    SCALAR_PY,
    EntryPoint,
    binding_error,
    check_mode,
    holds_no_scalar,
    runtime_copy_import,
)
from ksbind.lang.types import KsType, ScalarType, TensorType, TupleType
from ksbind.spec import TENSOR_ELEMENTS, Binding, Mode, ModuleOptions

#: A standalone module's copy of the ksbind/targets/torch/runtime package, beside it: NAME + this (a package).
RUNTIME_SUFFIX = "_ksbind_runtime"

#: An entry point's side of a crossing: what it takes (a parameter) or returns (a result or gradients).
TorchSide = Literal["param", "result"]


def runtime_module_name(module_name: str) -> str:
    return module_name + RUNTIME_SUFFIX


def runtime_import(options: ModuleOptions) -> str:
    """How the generated wrapper imports its runtime support: from ksbind, or standalone (a
    wheel) from its own copy of the runtime beside it."""
    if not options.standalone:
        return "from ksbind.targets.torch import runtime as _runtime"
    return runtime_copy_import(options, runtime_module_name(options.name))


# ------------------------------------------------------------ what has a torch form

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


# ------------------------------------------------------------ mode checks

def check_binding(b: Binding) -> None:
    """Every way a binding can fail to fit the torch target or its mode."""
    d = b.decl
    for t in list(d.params) + [d.return_type]:
        reason = unsupported_reason(t)
        if reason:
            binding_error(b, reason)
    check_mode(b, is_scalar_tensor, lambda t: isinstance(t, ScalarType) and t.name in TENSOR_ELEMENTS,
               shared_float_tangents=False, tuple_results_with_vjp=False)


def check_mutates(b: Binding, params: Sequence[tuple[str, KsType]], packed: bool) -> None:
    """A binding's ``mutates``: arguments (by their Python names, ``params``) that its C++ writes
    into, each a tensor of scalars the op can declare ``Tensor(a!)``; plain mode, no vjp (autograd
    would differentiate through a write), no packed op (a ``Tensor[]`` cannot declare one)."""
    if not b.mutates:
        return
    types = dict(params)
    for name in b.mutates:
        if name not in types:
            binding_error(b, f"mutates names {name!r}, which is not one of its arguments "
                             f"({', '.join(types) or 'none'}; an edef's arguments are arg0, arg1...)")
        if not is_scalar_tensor(types[name]):
            binding_error(b, f"mutates: argument {name!r} is {types[name]}; an op declares writes into tensors "
                             f"of Float, Integer or Bool only")
    if len(set(b.mutates)) != len(b.mutates):
        binding_error(b, "mutates names an argument twice")
    if b.mode != "plain":
        binding_error(b, f"mutates is for plain-mode bindings; a {b.mode} binding's kernel writes only its result")
    if b.vjp_decl is not None:
        binding_error(b, "mutates with a vjp: autograd would differentiate a function whose inputs change under "
                         "it; bind the writing function without a vjp")
    if packed:
        binding_error(b, "mutates on a binding whose values cross packed (as one Tensor[]): a packed op's schema "
                         "cannot say which tensor it writes into")


# ------------------------------------------------------------ stubs

def moded_entry(e: EntryPoint, mode: Mode) -> EntryPoint:
    """e as its mode makes it in Python (stubs, docs): elementwise and vmap bindings take their
    Floats and tensors as tensors (batched), and return tensors."""
    if mode == "plain":
        return e
    last = e.params[-1] if e.params else None

    def batched(p: object, t: KsType) -> bool:
        return mode == "elementwise" or is_scalar_tensor(t) or (e.is_vjp and p is last)

    params = tuple(replace(p, py_type="torch.Tensor") if batched(p, p.ks_type) else p for p in e.params)
    rt = e.result.ks_type
    if isinstance(rt, TupleType):
        py = "tuple[" + ", ".join("tuple[()]" if x == TupleType(()) else "torch.Tensor" for x in rt.elements) + "]"
    else:
        py = "torch.Tensor"
    return replace(e, params=params, result=replace(e.result, py_type=py))


__all__ = ["RUNTIME_SUFFIX", "TorchSide", "check_binding", "check_mutates", "holds_no_scalar", "is_nested_tensor",
           "is_scalar_tensor", "leaf_element", "moded_entry", "py_type", "runtime_import", "runtime_module_name",
           "stacked_rank", "unsupported_reason"]
