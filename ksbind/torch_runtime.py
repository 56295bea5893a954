"""Runtime support for torch-target modules: autograd and torch.library ops.

A torch-target build is two files: the compiled extension ``NAME_ext`` (raw
entry points: tensors in, tensors out, no autograd) and the generated
``NAME.py``, which calls :func:`install` with a table
of its bindings (computed by ksbind/targets/torch.py at generation time).

``install`` puts in the module, for each binding:

- without ``torch_library``: the C++ entry point itself. For a binding with
  a vjp and a float tensor result, the entry checks (in C++, at no cost to
  calls without gradients) whether grad mode is on and a differentiable
  argument requires grad; only then it calls ``NAME_Function.apply``, a
  ``torch.autograd.Function`` whose backward calls the vjp entry.
- with ``torch_library: NS``: the op ``torch.ops.NS.NAME`` (a
  ``torch.library.custom_op``) with its autograd formula from the vjp (op
  ``NS.NAME_vjp``) and a fake implementation, so it traces under
  ``torch.compile(fullgraph=True)``.

The vjp binding itself is always the raw vjp entry. ``raw`` holds every raw
entry point by name.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType, SimpleNamespace
from typing import Any, Callable, Sequence

import torch

ALLOCATOR_FUNCTIONS = ("reset_allocator", "allocator_top", "allocator_peak", "logging", "arena_bytes",
                       "set_arena_bytes")
#: The CPU capability of the elementwise and vmap kernels (ksbind/cpu_capability.h).
CPU_FUNCTIONS = ("cpu_capability", "cpu_capabilities", "_set_cpu_capability")
_DTYPES = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool}


def extension(name: str) -> ModuleType:
    """The compiled extension: already imported by ksbind's build, else by name."""
    mod = sys.modules.get(name)
    return mod if mod is not None else importlib.import_module(name)


def install(namespace: dict[str, Any], ext: ModuleType, bindings: Sequence[dict[str, Any]],
            torch_library: str | None = None) -> None:
    """Define the module's public names in ``namespace`` (the wrapper's globals)."""
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
        if torch_library is not None:
            namespace[b["name"]] = register_op(torch_library, b, entry, vjp)
        elif b["autograd"]:
            # The C++ entry checks grad mode and requires_grad itself and calls
            # Function.apply only when a gradient is needed.
            function = autograd_function(b, entry, vjp)
            ext._set_autograd(b["name"], function.apply)
            namespace[b["name"]] = entry
            namespace[f"{b['name']}_Function"] = function
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


def _input_grads(b: dict[str, Any], args: Sequence[Any], grads: Any, all_params: bool) -> tuple[Any, ...]:
    """One gradient (or None) per argument from a vjp's result.

    all_params: the raw vjp returns one gradient per argument (a single value
    when there is one argument); otherwise only the differentiable ones (the
    library vjp op).
    """
    params = b["params"]
    diff = [i for i, p in enumerate(params) if p["differentiable"]]
    count = len(params) if all_params else len(diff)
    if count == 1:
        grads = (grads,)
    out: list[Any] = [None] * len(params)
    for slot, i in enumerate(range(len(params)) if all_params else diff):
        if not params[i]["differentiable"]:
            continue
        g, a = grads[slot], args[i]
        if b["mode"] == "elementwise" and isinstance(a, torch.Tensor) and g.shape != a.shape:
            g = g.sum_to_size(a.shape)  # the argument was broadcast
        out[i] = g
    return tuple(out)


def autograd_function(b: dict[str, Any], entry: Callable[..., Any], vjp: Callable[..., Any] | None
                      ) -> type[torch.autograd.Function]:
    """A torch.autograd.Function: forward calls ``entry``, backward ``vjp``.

    Inside forward grad mode is off, so ``entry`` (the C++ function that
    routes calls needing gradients here) computes directly.
    """
    if vjp is None:
        raise ValueError(f"binding {b['name']!r} has no vjp: autograd needs one")
    backward_fn: Callable[..., Any] = vjp

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: Any) -> Any:  # type: ignore[override]
            tensors, ctx.others = _split(args)
            ctx.save_for_backward(*tensors)
            return entry(*args)

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> Any:  # type: ignore[override]
            args = _join(ctx.saved_tensors, ctx.others)
            return _input_grads(b, args, backward_fn(*args, grad), all_params=True)

    Function.__name__ = Function.__qualname__ = f"{b['name']}_Function"
    return Function


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
        return entry(*args)

    op = torch.library.custom_op(qualname, impl, mutates_args=(), schema=b["schema"])
    op.register_fake(_fake(b, vjp=False))
    if b["autograd"] and vjp is not None:
        diff = [i for i, p in enumerate(b["params"]) if p["differentiable"]]
        single = len(b["params"]) == 1

        def vjp_impl(*args: Any) -> Any:
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

        def backward(ctx: Any, grad: torch.Tensor) -> Any:
            args = _join(ctx.saved_tensors, ctx.others)
            return _input_grads(b, args, vjp_op(*args, grad), all_params=False)

        op.register_autograd(backward, setup_context=setup_context)
    return getattr(getattr(torch.ops, namespace), name)


def _fake(b: dict[str, Any], vjp: bool) -> Callable[..., Any]:
    """Shape inference: exact where the mode fixes shapes, unbacked sizes otherwise."""
    params, mode = b["params"], b["mode"]
    diff = [i for i, p in enumerate(params) if p["differentiable"]]

    def fake(*args: Any) -> Any:
        tensors = [a for a in args[:len(params)] if isinstance(a, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")
        if vjp:
            if mode == "elementwise":
                shape = torch.broadcast_shapes(*(t.shape for t in tensors))
                outs = [torch.empty(shape, dtype=torch.float32, device=device) for _ in diff]
            else:
                outs = [torch.empty_like(args[i], memory_format=torch.contiguous_format) for i in diff]
            return outs[0] if len(outs) == 1 else tuple(outs)
        if mode == "elementwise":
            return torch.empty(torch.broadcast_shapes(*(t.shape for t in tensors)), dtype=torch.float32,
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
