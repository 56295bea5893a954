"""Runtime support for torch-target modules: autograd and torch.library ops.

A torch-target build is two files: the compiled extension ``NAME_ext`` (raw
entry points: tensors in, tensors out, no autograd) and the generated
``NAME.py``, which calls :func:`install` with a table
of its bindings (computed by ksbind/codegen/targets/torch.py at generation time).

``install`` puts in the module, for each binding:

- without ``torch_library``: the C++ entry point itself. For a binding with
  a vjp and a float tensor result, the entry checks (in C++, at no cost to
  calls without gradients) whether grad mode is on and a differentiable
  argument requires grad; only then it calls ``NAME_Function.apply``, a
  ``torch.autograd.Function`` whose backward calls the vjp entry.
- with ``torch_library: NS``: the op ``torch.ops.NS.NAME`` (a
  ``torch.library.custom_op``) with its autograd formula from the vjp (op
  ``NS.NAME_vjp``) and a fake implementation, so it traces under
  ``torch.compile(fullgraph=True)``; the module's NAME calls it and carries
  the binding's signature and docstring (``documented_op``; ``.op`` is the op).

The vjp binding itself is always the raw vjp entry. ``raw`` holds every raw
entry point by name.
"""
from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

import torch

ALLOCATOR_FUNCTIONS = ("reset_allocator", "allocator_top", "allocator_peak", "logging", "arena_bytes",
                       "set_arena_bytes")
#: The CPU capability of the elementwise and vmap kernels (ksbind/cpu_capability.h).
CPU_FUNCTIONS = ("cpu_capability", "cpu_capabilities", "_set_cpu_capability")
#: torch leaves broadcast_shapes untyped.
_broadcast_shapes: Callable[..., torch.Size] = torch.broadcast_shapes
_DTYPES = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool}


def extension(name: str) -> ModuleType:
    """The compiled extension: already imported by ksbind's build, else by name."""
    mod = sys.modules.get(name)
    return mod if mod is not None else importlib.import_module(name)


def install(namespace: dict[str, Any], ext: ModuleType, bindings: Sequence[dict[str, Any]],
            torch_library: str | None = None, signatures: type | None = None) -> None:
    """Define the module's public names in ``namespace`` (the wrapper's globals).
    ``signatures`` holds a function per torch.library op whose signature and
    docstring the op's Python face takes (documented_op)."""
    for fn in ALLOCATOR_FUNCTIONS + CPU_FUNCTIONS:
        if hasattr(ext, fn):
            namespace[fn] = getattr(ext, fn)
    raw: dict[str, Callable[..., Any]] = {}
    for b in bindings:
        entry = getattr(ext, b["name"])
        vjp = getattr(ext, b["vjp"]) if b["vjp"] else None
        raw[b["name"]] = entry
        if vjp is not None:
            raw[b["vjp"]] = vjp
            namespace[b["vjp"]] = vjp
        if torch_library is not None and b["op"]:
            op = register_op(torch_library, b, entry, vjp)
            shown = getattr(signatures, b["name"], None)
            namespace[b["name"]] = documented_op(op, shown) if shown is not None else op
        elif b["autograd"]:
            # The C++ entry checks grad mode and requires_grad itself and calls
            # Function.apply only when a gradient is needed.
            function = autograd_function(b, entry, vjp)
            ext._set_autograd(b["name"], function)
            namespace[b["name"]] = entry
            namespace[f"{b['name']}_Function"] = function.Function  # type: ignore[attr-defined]
        else:
            namespace[b["name"]] = entry
    namespace["raw"] = SimpleNamespace(**raw)
    namespace["extension"] = ext


# ------------------------------------------------------------ gradients

def _split(args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Tensors (to save for backward) and the other arguments, position kept."""
    tensors = [a if isinstance(a, torch.Tensor) else None for a in args]
    others = [None if isinstance(a, torch.Tensor) else a for a in args]
    return tensors, others


def _join(tensors: Sequence[Any], others: Sequence[Any]) -> list[Any]:
    return [t if t is not None else o for t, o in zip(tensors, others)]


def _op_input_grads(b: dict[str, Any], args: Sequence[Any], grads: Any) -> tuple[Any, ...]:
    """One gradient (or None) per argument from the library vjp op's result,
    which holds the differentiable arguments' gradients only (a single value
    when there is one)."""
    params = b["params"]
    diff = [i for i, p in enumerate(params) if p["differentiable"]]
    if len(diff) == 1:
        grads = (grads,)
    out: list[Any] = [None] * len(params)
    for slot, i in enumerate(diff):
        g, a = grads[slot], args[i]
        if b["mode"] == "elementwise" and isinstance(a, torch.Tensor) and g.shape != a.shape:
            g = g.sum_to_size(a.shape)  # the argument was broadcast
        out[i] = g
    return tuple(out)


# Arguments and results may nest tensors in lists and tuples (tensors of
# tensors, tuples, lists of tuples): autograd.Function sees the tensors only,
# so calls are flattened to their tensor leaves plus a spec that rebuilds them.
_LEAF = None  # a tensor leaf's spec


def flatten(value: Any, leaves: list[torch.Tensor]) -> Any:
    """The spec of value; appends its tensors to leaves (depth first)."""
    if isinstance(value, torch.Tensor):
        leaves.append(value)
        return _LEAF
    if isinstance(value, (list, tuple)):
        return (type(value) is list, tuple(flatten(v, leaves) for v in value))
    return ("const", value)


def unflatten(spec: Any, leaves: Iterator[Any]) -> Any:
    if spec is _LEAF:
        return next(leaves)
    kind, parts = spec
    if kind == "const":
        return parts
    values = [unflatten(p, leaves) for p in parts]
    return values if kind is True else tuple(values)


class _NoTangent:
    """Placeholder while building dret: this part of the result has no Float."""


def _dret(spec: Any, grads: Iterator[torch.Tensor], floats: Iterator[bool]) -> Any:
    """The vjp's dret from the gradients of the result's tensor leaves: Integer,
    Bool and String parts have the empty tangent ``()`` (a part with no Float
    anywhere collapses to ``()``, as its ks tangent type does)."""
    if spec is _LEAF:
        g, is_float = next(grads), next(floats)
        return g if is_float else _NoTangent
    kind, parts = spec
    if kind == "const":
        return _NoTangent
    values = [_dret(p, grads, floats) for p in parts]
    if all(v is _NoTangent for v in values):
        return _NoTangent
    values = [() if v is _NoTangent else v for v in values]
    return values if kind is True else tuple(values)


def _fit(spec: Any, value: Any, grad: Any, out: list[Any], broadcast: bool) -> None:
    """Append the gradient of each tensor leaf of one argument (value, with
    spec) from the vjp's gradient of that argument, which may be stacked where
    the argument was a list, or ``()`` where it has no Float."""
    if spec is _LEAF:
        if not isinstance(grad, torch.Tensor) or not value.is_floating_point():
            out.append(None)
        elif broadcast and grad.shape != value.shape:
            out.append(grad.sum_to_size(value.shape))  # elementwise: the argument was broadcast
        else:
            out.append(grad)
        return
    kind, parts = spec
    if kind == "const":
        return
    if isinstance(grad, torch.Tensor):
        grad = grad.unbind(0)  # a stacked gradient of a list argument
    elif not isinstance(grad, (list, tuple)) or len(grad) != len(parts):
        grad = [None] * len(parts)
    for p, v, g in zip(parts, value, grad):
        _fit(p, v, g, out, broadcast)


def autograd_function(b: dict[str, Any], entry: Callable[..., Any], vjp: Callable[..., Any] | None
                      ) -> Callable[..., Any]:
    """``f(*args)``, differentiable through the binding's vjp: a
    torch.autograd.Function over the tensors anywhere in the arguments (nested
    in lists and tuples too) and in the result, whatever its structure.

    Inside forward grad mode is off, so ``entry`` (the C++ function that
    routes calls needing gradients here) computes directly. The Function class
    is the returned callable's ``Function`` attribute.
    """
    if vjp is None:
        raise ValueError(f"binding {b['name']!r} has no vjp: autograd needs one")
    backward_fn: Callable[..., Any] = vjp
    single = len(b["params"]) == 1
    broadcast = b["mode"] == "elementwise"

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, spec: Any, result_spec: list[Any], *leaves: torch.Tensor) -> Any:
            out = entry(*unflatten(spec, iter(leaves)))
            out_leaves: list[torch.Tensor] = []
            result_spec.append(flatten(out, out_leaves))
            ctx.spec, ctx.result_spec = spec, result_spec[0]
            ctx.floats = [t.is_floating_point() for t in out_leaves]
            ctx.mark_non_differentiable(*[t for t in out_leaves if not t.is_floating_point()])
            ctx.save_for_backward(*leaves)
            return tuple(out_leaves)

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> Any:
            args = unflatten(ctx.spec, iter(ctx.saved_tensors))
            dret = _dret(ctx.result_spec, iter(grads), iter(ctx.floats))
            g = backward_fn(*args, () if dret is _NoTangent else dret)
            per_arg = (g,) if single else g
            leaf_grads: list[Any] = []
            for p, a, ga in zip(ctx.spec[1], args, per_arg):
                _fit(p, a, ga, leaf_grads, broadcast)
            return (None, None, *leaf_grads)

    Function.__name__ = Function.__qualname__ = f"{b['name']}_Function"

    _apply: Callable[..., Any] = Function.apply  # torch leaves apply untyped

    def call(*args: Any) -> Any:
        leaves: list[torch.Tensor] = []
        spec = flatten(args, leaves)
        result_spec: list[Any] = []
        out = _apply(spec, result_spec, *leaves)
        return unflatten(result_spec[0], iter(out))

    call.Function = Function  # type: ignore[attr-defined]
    call.__name__ = b["name"]
    return call


# ------------------------------------------------------------ torch.library

def register_op(namespace: str, b: dict[str, Any], entry: Callable[..., Any],
                vjp: Callable[..., Any] | None) -> Any:
    """Register ``torch.ops.NAMESPACE.NAME`` (and ``NAME_vjp``); returns the op."""
    name = b["name"]
    qualname = f"{namespace}::{name}"
    if hasattr(getattr(torch.ops, namespace), name):
        raise RuntimeError(f"torch.ops.{namespace}.{name} is already registered in this process; "
                           f"give this module another torch_library namespace")

    def impl(*args: Any) -> Any:
        out = entry(*args)
        for part in out if isinstance(out, tuple) else (out,):
            if not isinstance(part, torch.Tensor):  # a tensor of tensors whose inner shapes differ
                raise ValueError(f"torch.ops.{namespace}.{name}: the result is ragged (a list of tensors of different "
                                 f"shapes); a torch.library op returns tensors: call the module's raw.{name}")
        return out

    op = torch.library.custom_op(qualname, impl, mutates_args=(), schema=b["schema"])
    op.register_fake(_fake(b, vjp=False))
    if b["autograd"] and vjp is not None:
        diff = [i for i, p in enumerate(b["params"]) if p["differentiable"]]
        single = len(b["params"]) == 1

        result = b["result"]
        tuple_result = result["kind"] == "tuple"

        def vjp_impl(*args: Any) -> Any:
            if tuple_result:  # dret arrives as a list of tensors; discrete parts have the tangent ()
                dret = tuple(g if p.get("dtype") == "float32" else () for g, p in zip(args[-1], result["parts"]))
                args = (*args[:-1], dret)
            grads = vjp(*args)
            if single:
                return grads
            picked = tuple(grads[i] for i in diff)
            return picked[0] if len(picked) == 1 else picked

        vjp_op = torch.library.custom_op(f"{namespace}::{b['vjp']}", vjp_impl, mutates_args=(),
                                         schema=b["vjp_schema"])
        vjp_op.register_fake(_fake(b, vjp=True))

        def setup_context(ctx: Any, inputs: Sequence[Any], output: Any) -> None:
            tensors, ctx.others = _split(inputs)
            ctx.save_for_backward(*tensors)

        def backward(ctx: Any, *grads: torch.Tensor) -> Any:
            args = _join(ctx.saved_tensors, ctx.others)
            dret = list(grads) if tuple_result else grads[0]
            return _op_input_grads(b, args, vjp_op(*args, dret))

        op.register_autograd(backward, setup_context=setup_context)
    return getattr(getattr(torch.ops, namespace), name)


def documented_op(op: Any, shown: Callable[..., Any]) -> Callable[..., Any]:
    """A function that calls ``op`` (an OpOverloadPacket, whose ``__doc__`` is None
    and whose help() is the packet class's) with ``shown``'s name, docstring and
    signature, for help(), IDEs and inspect.signature. torch.compile traces
    through it to the op. ``.op`` is the op itself (``.default`` its overload)."""

    @functools.wraps(shown)
    def call(*args: Any, **kwargs: Any) -> Any:
        return op(*args, **kwargs)

    call.__qualname__ = call.__name__
    call.op = op  # type: ignore[attr-defined]
    call.default = op.default  # type: ignore[attr-defined]
    return call


def _fake(b: dict[str, Any], vjp: bool) -> Callable[..., Any]:
    """Shape inference: exact where the mode fixes shapes, unbacked sizes otherwise."""
    params, mode = b["params"], b["mode"]
    diff = [i for i, p in enumerate(params) if p["differentiable"]]

    def fake(*args: Any) -> Any:
        tensors = [a for a in args[:len(params)] if isinstance(a, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")
        if vjp:
            if mode == "elementwise":
                shape = _broadcast_shapes(*(t.shape for t in tensors))
                outs = [torch.empty(shape, dtype=torch.float32, device=device) for _ in diff]
            else:
                outs = [torch.empty_like(args[i], memory_format=torch.contiguous_format) for i in diff]
            return outs[0] if len(outs) == 1 else tuple(outs)
        if mode == "elementwise":
            return torch.empty(_broadcast_shapes(*(t.shape for t in tensors)), dtype=torch.float32,
                               device=device)
        batch = next((args[i].shape[0] for i, p in enumerate(params) if p["batched"]), None)
        result = b["result"]
        parts = result["parts"] if result["kind"] == "tuple" else [result]
        outs = [_fake_tensor(p, batch, device) for p in parts]
        return tuple(outs) if result["kind"] == "tuple" else outs[0]

    return fake


def _fake_tensor(part: dict[str, Any], batch: Any, device: torch.device) -> torch.Tensor:
    ctx = torch.library.get_ctx()
    rank = part["rank"]
    if batch is not None:  # vmap: the batch is known, the rest depends on the data
        sizes = [batch] + [ctx.new_dynamic_size() for _ in range(rank - 1)]
    else:
        sizes = [ctx.new_dynamic_size() for _ in range(rank)]
    return torch.empty(sizes, dtype=_DTYPES[part["dtype"]], device=device)


__all__ = ["extension", "install", "autograd_function", "register_op"]
