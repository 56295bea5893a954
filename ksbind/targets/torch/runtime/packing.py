"""Packed bindings: lists of tuples and ragged lists, packed into flat tensors in Python (the op takes
them packed) and unpacked from its results.

Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch and nothing of
ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from .autograd import (
    _dual_level,
    _functorch_active,
    _functorch_wrapped,
    _needs_grad,
    _traced_without_data,
    _transform_under_compile,
    autograd_function,
    forward_function,
    vjp_function,
)
from .calls import _bound, _leaf_value, _refusal, _translated_call
from .contract import AutogradSpec, BindingRecord, PackRecord, ParamRecord, present
from .trees import flatten

# ------------------------------------------------------------ packed bindings

# A binding whose values no op schema can say (a string result, a list of tuples...) has ops
# over Tensor[] both ways; its values are packed depth first, as ksbind/torch_stable.h's
# Unpacker reads them and its pack writes them. Specs: ksbind/targets/torch/target.py,
# pack_spec.
_PACK_DTYPES = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool}
#: The packed ops beside a binding's ops that has tensors of tensors (see _ragged_router):
#: ksbind/targets/torch/target.py's RAGGED_PREFIX.
_RAGGED_PREFIX = "_packed_"


def _pack(spec: Any, value: Any, where: str, binding: str, out: list[torch.Tensor]) -> None:
    if spec == "none":
        return
    if spec == "f":
        number = _leaf_value({"kind": "zero_dim", "where": where}, value, binding)
        out.append(number if isinstance(number, torch.Tensor) else torch.tensor(number, dtype=torch.float32))
    elif spec == "i":
        out.append(torch.tensor(_leaf_value({"kind": "int", "where": where}, value, binding), dtype=torch.int64))
    elif spec == "b":
        out.append(torch.tensor(_leaf_value({"kind": "bool", "where": where}, value, binding), dtype=torch.bool))
    elif spec == "s":
        text = _leaf_value({"kind": "str", "where": where}, value, binding)
        out.append(torch.tensor(list(text.encode("utf-8", "surrogateescape")), dtype=torch.uint8))
    elif spec[0] == "t":
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{binding}(): argument '{where}': expected a torch.Tensor, got {type(value).__name__}")
        refusal = _refusal(binding, where, value)  # the op's kernel runs for every device and layout
        if refusal is not None:
            raise refusal
        out.append(value)  # the kernel checks the rest and views it
    elif spec[0] == "v":
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            items: Sequence[Any] = value.unbind(0)  # a stacked tensor: its rows (views)
        elif isinstance(value, (list, tuple)):
            items = tuple(value)  # one snapshot: a conversion below may change the list
        else:
            raise TypeError(f"{binding}(): argument '{where}': expected a list (or a stacked tensor), got "
                            f"{type(value).__name__}")
        out.append(torch.tensor([len(items)], dtype=torch.int64))
        for i, item in enumerate(items):
            _pack(spec[1], item, f"{where}[{i}]", binding, out)
    else:  # ["tuple", parts]
        parts = spec[1]
        if not isinstance(value, (tuple, list)) or len(value) != len(parts):
            raise TypeError(f"{binding}(): argument '{where}': expected a tuple of {len(parts)}, got "
                            f"{type(value).__name__}")
        for i, (p, v) in enumerate(zip(parts, value)):
            _pack(p, v, f"{where}[{i}]", binding, out)


def _unpack(spec: Any, leaves: Iterator[torch.Tensor]) -> Any:
    if spec == "none":
        return ()
    if spec == "s":
        return bytes(next(leaves).tolist()).decode("utf-8", "surrogateescape")
    if isinstance(spec, str) or spec[0] == "t":
        return next(leaves)  # a number as a 0-dim tensor, or a tensor
    if spec[0] == "tuple":
        return tuple(_unpack(p, leaves) for p in spec[1])
    n = int(next(leaves)[0])
    items = [_unpack(spec[1], leaves) for _ in range(n)]
    inner = spec[1]
    if isinstance(inner, list) and inner[0] == "t":
        # As the torch target's tensors of tensors: one stacked tensor when every row has one shape.
        if not items:
            return torch.empty((0,) * (1 + inner[1]), dtype=_PACK_DTYPES[inner[2]])
        if all(t.shape == items[0].shape for t in items):
            return torch.stack(items)
    return items


def _packed_entry(ops: Any, name: str, params: Sequence[str], specs: Sequence[Any],
                  result: Any, prefix: str = "") -> Callable[..., Any]:
    """The packed op (``prefix + name``) as a function of the binding's own values."""
    direct = getattr(ops, "_direct_" + prefix + name).default

    def entry(*args: Any) -> Any:
        leaves: list[torch.Tensor] = []
        for p, s, v in zip(params, specs, args):
            _pack(s, v, p, name, leaves)
        return _unpack(result, iter(_translated_call(direct, (leaves,), name)))

    return entry


def _packed_calls(ops: Any, b: BindingRecord, packed: PackRecord,
                  prefix: str = "") -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """A binding's function and its vjp's over its packed ops (``prefix + NAME``). Autograd and
    torch.func go through the torch target's Function over the same calls (autograd_function:
    its vjp is the vjp op's function); differentiating the vjp's result is the double-backward
    error."""
    name, vjp_name, params = b["name"], b["vjp"], b["params"]
    entry = _packed_entry(ops, name, params, packed["params"], packed["result"], prefix)
    vjp = _packed_entry(ops, vjp_name, [*params, "dret"], packed["vjp_params"], packed["vjp_result"], prefix) \
        if vjp_name else None
    legacy = AutogradSpec(name=name, vjp=vjp_name, mode="plain",
                          params=[ParamRecord(name=p, batched=False) for p in params])
    transforms = autograd_function(legacy, entry, vjp) if vjp else forward_function(legacy, entry)
    grad_enabled: Callable[[], bool] = torch.is_grad_enabled

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(params):
            args = _bound(name, params, args, kwargs)
        tensors: list[torch.Tensor] = []
        flatten(args, tensors)
        if _functorch_active() and torch.compiler.is_compiling():
            raise _transform_under_compile(name)
        if _traced_without_data(tensors):
            raise RuntimeError(f"{name}(): a packed binding cannot be traced into a graph (torch.export, make_fx): "
                               f"its values cross as one list of tensors that no op schema describes, so its op "
                               f"has no fake kernel; call it outside the exported function (torch.compile runs "
                               f"it eagerly, between graphs)")
        if (_functorch_active() and _functorch_wrapped(tensors)) or _dual_level() or (
                vjp is not None and grad_enabled() and _needs_grad(tensors)):
            return transforms(*args)
        return entry(*args)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = b["doc"]
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
    if vjp is None:
        return call, None
    vjp_name = present(vjp_name, "vjp")
    vjp_through = vjp_function(legacy, vjp)  # differentiating its result: the double-backward error

    def vjp_call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(params) + 1:
            args = _bound(vjp_name, [*params, "dret"], args, kwargs)
        return vjp_through(*args)

    vjp_call.__name__ = vjp_call.__qualname__ = vjp_name
    return call, vjp_call


def _packed_functions(ops: Any, b: BindingRecord) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """A packed binding's function and its vjp's (_packed_calls), which torch.compile does not
    trace (the ops have no fake kernel)."""
    call, vjp_call = _packed_calls(ops, b, present(b["packed"], "packing"))
    reason = (f"ksbind: {b['name']} is a packed op's function (its values have no op schema, so its op has no "
              f"fake kernel to trace)")
    untraced: Callable[..., Callable[..., Any]] = torch.compiler.disable  # torch leaves it untyped

    def disable(f: Callable[..., Any]) -> Callable[..., Any]:
        try:
            return untraced(f, reason=reason)
        except TypeError:  # a torch without the reason argument
            return untraced(f)

    return disable(call), disable(vjp_call) if vjp_call is not None else None
