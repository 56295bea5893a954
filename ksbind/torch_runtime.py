"""Runtime support for torch-target modules: each binding a function over its ops.

A torch-target build is the op library ``NAME_torchops.so`` (stable-ABI torch ops, one per
binding and vjp: ksbind/codegen/targets/torch.py) and the generated ``NAME.py``, which
calls :func:`install_stable` with a table of its bindings. That loads the library
(``load_library``: once per process, refusing a torch older than the library needs) and
gives each op, in Python, a fake kernel, autograd from its vjp op and a batching rule, and
puts in the module, for each binding, a function that flattens its arguments into the op's
leaves and re-nests the op's results (see install_stable).

torch.library's generated autograd has no ``setup_context``, so calls holding torch.func's
tensors go to a ``torch.autograd.Function`` over the same ops instead
(``autograd_function``; ``forward_function`` for a binding without a vjp), which has one and
a vmap rule (``vmap_rule``), so torch.func.grad, vjp, jacrev and torch.vmap work.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import operator
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.autograd.forward_ad as forward_ad  # torch imports it itself
from torch._subclasses.fake_tensor import FakeTensor  # torch imports it itself
from torch.torch_version import TorchVersion

#: torch leaves broadcast_shapes untyped.
_broadcast_shapes: Callable[..., torch.Size] = torch.broadcast_shapes
_DTYPES = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool}


def _marked(path: str, marker: re.Pattern[bytes]) -> str | None:
    """The version a compiled file's bytes hold after ``marker`` (None: no mark, or no file)."""
    try:
        with open(path, "rb") as f:
            found = marker.search(f.read())
    except OSError:
        return None
    return found.group(1).decode() if found else None


# ------------------------------------------------------------ gradients

def _split(args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Tensors (to save for backward) and the other arguments, position kept."""
    tensors = [a if isinstance(a, torch.Tensor) else None for a in args]
    others = [None if isinstance(a, torch.Tensor) else a for a in args]
    return tensors, others


def _join(tensors: Sequence[Any], others: Sequence[Any]) -> list[Any]:
    return [t if t is not None else o for t, o in zip(tensors, others)]


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
    for p, v, g in zip(parts, value, _derivative_parts(grad, len(parts))):
        _fit(p, v, g, out, broadcast)


def _derivative_parts(derivative: Any, n: int) -> Sequence[Any]:
    """A list or tuple value's derivative (a gradient, a tangent), part by part: a stacked tensor
    (of a list) unbound, or n Nones where it has no parts (``()``: no Float in it)."""
    if isinstance(derivative, torch.Tensor):
        return derivative.unbind(0)
    if not isinstance(derivative, (list, tuple)) or len(derivative) != n:
        return [None] * n
    return derivative


class _Box:
    """The result's spec, which forward (or the vmap rule) fills in: an object,
    not a list, so that torch.func's pytree maps pass it on as it is."""

    __slots__ = ("spec",)

    def __init__(self) -> None:
        self.spec: Any = None


def _functorch_active() -> bool:
    are_active: Callable[[], bool] = torch._C._are_functorch_transforms_active
    return are_active()


def _transform_under_compile(name: str) -> RuntimeError:
    """torch.compile tracing a torch.func transform (grad, vjp, jacrev, vmap) of a binding: the
    binding routes it through a Function over functorch's own wrappers, which dynamo cannot trace
    (it said "Attempted to call function marked as skipped"). Raised during tracing: without
    fullgraph, dynamo breaks the graph there and the call runs eagerly, and works."""
    return RuntimeError(f"{name}(): torch.compile cannot trace a torch.func transform (grad, vjp, jacrev, vmap) "
                        f"of a ksbind binding; compile without fullgraph=True (the graph breaks around the "
                        f"binding's call, which then runs eagerly and is differentiated as usual), or compile "
                        f"the function without the transform")


def _traced_without_data(tensors: Sequence[Any]) -> bool:
    """A trace (torch.export's non-strict mode, make_fx) calling with tensors that hold no data."""
    exporting: Callable[[], bool] = getattr(torch.compiler, "is_exporting", lambda: False)
    return exporting() or any(isinstance(t, FakeTensor) or torch._is_functional_tensor(t) for t in tensors)


def _dual_level() -> bool:
    """Inside ``torch.autograd.forward_ad.dual_level()``: an argument may carry a tangent, which
    only a Function's jvp sees (the direct op would drop it, and the result have none)."""
    level: int = forward_ad._current_level
    fw_grad_enabled: Callable[[], bool] = torch._C._is_fwd_grad_enabled  # off inside a Function's forward
    return level >= 0 and fw_grad_enabled()


def _needs_grad(tensors: Sequence[Any]) -> bool:
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def _functorch_wrapped(tensors: Sequence[Any]) -> bool:
    """A tensor of torch.func's, live or dead (torch.func.vjp's vjp_fn runs
    after its transform has ended, on the wrappers it left)."""
    wrapped: Callable[[torch.Tensor], bool] = torch._C._functorch.is_functorch_wrapped_tensor
    return any(isinstance(t, torch.Tensor) and wrapped(t) for t in tensors)


def _unwrap_dead(leaves: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The plain tensors inside the wrappers of ended torch.func transforms."""
    unwrap: Callable[[torch.Tensor], torch.Tensor] = torch._C._functorch.unwrap_if_dead
    return [unwrap(t) for t in leaves]


def autograd_function(b: dict[str, Any], entry: Callable[..., Any], vjp: Callable[..., Any] | None,
                      jvp: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``f(*args)``, differentiable through the binding's vjp: a
    torch.autograd.Function over the tensors anywhere in the arguments (nested
    in lists and tuples too) and in the result, whatever its structure.

    ``entry`` is the C++ function that routes calls needing gradients, and calls
    with torch.func's tensors, here. Inside forward grad mode is off and the
    tensors are plain, so it computes directly. The Function has a
    setup_context and a vmap rule (``vmap_rule``), so torch.func.grad, vjp,
    jacrev and vmap work; its backward computes through a second Function
    over the vjp entry, whose own backward says double backward is not
    supported. Its jvp (forward mode) calls ``jvp``, the binding's [fwd F], when
    it has one (jvp_rule), else says that it has none. The Function class is the
    returned callable's ``Function``.
    """
    if vjp is None:
        raise ValueError(f"binding {b['name']!r} has no vjp: autograd needs one")
    name, vjp_name = b["name"], b["vjp"]
    single = len(b["params"]) == 1
    broadcast = b["mode"] == "elementwise"
    vjp_call = vjp_function(b, vjp)
    jvp_rule_ = jvp_rule(b, jvp) if jvp is not None else None

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            out = entry(*unflatten(spec, iter(leaves)))
            out_leaves: list[torch.Tensor] = []
            box.spec = flatten(out, out_leaves)
            return tuple(out_leaves)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
            spec, box, *leaves = inputs
            ctx.spec, ctx.result_spec = spec, box.spec
            ctx.floats = [t.is_floating_point() for t in output]
            ctx.mark_non_differentiable(*[t for t in output if not t.is_floating_point()])
            ctx.save_for_backward(*leaves)
            if jvp is not None:
                ctx.save_for_forward(*leaves)

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> Any:
            saved = ctx.saved_tensors
            # create_graph=True in plain autograd: the gradient would silently lack its
            # second-order term. (torch.func always asks for a graph: there, the vjp's
            # Function raises only if its result is differentiated.)
            if (torch.is_grad_enabled() and _needs_grad([*saved, *grads]) and not _functorch_active()
                    and not _functorch_wrapped([*saved, *grads])):
                raise double_backward_error(name, vjp_name)
            args = unflatten(ctx.spec, iter(saved))
            dret = _dret(ctx.result_spec, iter(grads), iter(ctx.floats))
            g = vjp_call(*args, () if dret is _NoTangent else dret)
            per_arg = (g,) if single else g
            leaf_grads: list[Any] = []
            for p, a, ga in zip(ctx.spec[1], args, per_arg):
                _fit(p, a, ga, leaf_grads, broadcast)
            return (None, None, *leaf_grads)

        @staticmethod
        def vmap(info: Any, in_dims: tuple[Any, ...], spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            return vmap_rule(b["mode"], b["params"], entry, info, in_dims[2:], spec, box, leaves)

        jvp = _jvp_method(name, jvp_rule_)

    Function.__name__ = Function.__qualname__ = f"{name}_Function"
    return _caller(Function, name)


def _caller(function: type, name: str) -> Callable[..., Any]:
    """``f(*args)`` through ``function.apply`` (a Function over the flattened
    arguments). Outside torch.func, the C++ apply directly: Function.apply binds
    default arguments through inspect.signature (for setup_context Functions)
    and walks the arguments for dead torch.func wrappers, several microseconds
    a call, and the entry routes neither here then (it refuses dead wrappers)."""
    apply: Callable[..., Any] = function.apply  # type: ignore[attr-defined]  # torch leaves apply untyped
    fast_apply: Callable[..., Any] = super(torch.autograd.Function, function).apply  # type: ignore[misc]

    def call(*args: Any) -> Any:
        leaves: list[torch.Tensor] = []
        spec = flatten(args, leaves)
        box = _Box()
        out = (apply if _functorch_active() else fast_apply)(spec, box, *leaves)
        return unflatten(box.spec, iter(out))

    call.Function = function  # type: ignore[attr-defined]
    call.__name__ = name
    return call


def forward_function(b: dict[str, Any], entry: Callable[..., Any], jvp: Callable[..., Any] | None = None
                     ) -> Callable[..., Any]:
    """``f(*args)`` for a binding without autograd (no vjp, or a result without
    a Float), called by its entry only when an argument holds a torch.func
    tensor: a torch.autograd.Function with the binding's vmap rule. Its results
    have no gradient, as the entry's have; torch.func.grad, vjp or jacrev
    asking for one is an error, not a silent zero. Forward mode: as autograd_function's."""
    name = b["name"]
    jvp_rule_ = jvp_rule(b, jvp) if jvp is not None else None

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            out = entry(*unflatten(spec, iter(leaves)))
            out_leaves: list[torch.Tensor] = []
            box.spec = flatten(out, out_leaves)
            return tuple(out_leaves)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
            if any(isinstance(t, torch.Tensor) and t.requires_grad for t in inputs[2:]):
                raise RuntimeError(f"{name}: this binding has no vjp (or no Float result), so torch.func.grad, vjp "
                                   f"and jacrev cannot differentiate it; give it a vjp in the config")
            if jvp_rule_ is None:
                ctx.mark_non_differentiable(*output)
            else:
                _save_for_jvp(ctx, inputs, output)

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> Any:  # pragma: no cover - results are non-differentiable
            raise RuntimeError(f"{name}: this binding has no vjp")

        jvp = _jvp_method(name, jvp_rule_)

        @staticmethod
        def vmap(info: Any, in_dims: tuple[Any, ...], spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            return vmap_rule(b["mode"], b["params"], entry, info, in_dims[2:], spec, box, leaves)

    Function.__name__ = Function.__qualname__ = f"{name}_Function"
    return _caller(Function, name)


def missing_vjp_function(b: dict[str, Any], entry: Callable[..., Any], jvp: Callable[..., Any] | None = None
                         ) -> Callable[..., Any]:
    """``f(*args)`` for an eager call of a binding without a vjp whose float arguments need a
    gradient: its float results are differentiable, and a backward that reaches them raises,
    naming the binding, rather than leaving the arguments' gradients silently None or short.
    (As torch's own ops without a derivative do; a result no backward reaches costs nothing.)
    Forward mode (a dual tensor's tangent): as autograd_function's."""
    name = b["name"]
    jvp_rule_ = jvp_rule(b, jvp) if jvp is not None else None

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            out = entry(*unflatten(spec, iter(leaves)))
            out_leaves: list[torch.Tensor] = []
            box.spec = flatten(out, out_leaves)
            return tuple(out_leaves)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
            ctx.mark_non_differentiable(*[t for t in output if not t.is_floating_point()])
            if jvp_rule_ is not None:
                _save_for_jvp(ctx, inputs, output)

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> Any:
            raise RuntimeError(f"{name}: this binding has no vjp, so the gradient of its arguments cannot be "
                               f"computed; give it a vjp in the config (vjp: {name}_vjp), or detach its arguments "
                               "if no gradient should flow through it")

        jvp = _jvp_method(name, jvp_rule_)

    Function.__name__ = Function.__qualname__ = f"{name}_NoVjp"
    return _caller(Function, name)


def double_backward_error(name: str, vjp_name: str) -> RuntimeError:
    return RuntimeError(
        f"{name}: double backward is not supported: the gradient of its vjp {vjp_name!r} would be needed "
        f"(torch.autograd.grad or .backward with create_graph=True, a Hessian, torch.func.grad of "
        f"torch.func.grad...), and a ks vjp has no vjp of its own. Call without create_graph=True, or bind a "
        f"function that computes the second-order term")


def forward_mode_error(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"{name}: forward-mode AD (torch.func.jvp, jacfwd, hessian, torch.autograd.forward_ad) is not supported: "
        f"this binding has no jvp; give it one (a config's jvp: {name}_jvp, for ksc's [fwd F]; "
        f"ksbind.compile(..., jvp=True)), or use torch.func.vjp, jacrev or grad where it has a vjp")


def second_order_error(name: str, jvp_name: str) -> RuntimeError:
    return RuntimeError(
        f"{name}: a second derivative is not supported: the derivative of its jvp {jvp_name!r} would be needed "
        f"(torch.func.hessian, jacfwd of jacfwd or of jacrev, a gradient of a forward-mode tangent...), and ksc "
        f"derives no derivative of a derivative")


def _jvp_method(name: str, rule: Callable[[Any, Sequence[Any]], tuple[Any, ...]] | None) -> Any:
    """A Function's jvp: ``rule`` over the leaves' tangents (after spec's and box's), or without
    one the error naming the binding."""
    def jvp(ctx: Any, *tangents: Any) -> Any:
        if rule is None:
            raise forward_mode_error(name)
        return rule(ctx, tangents[2:])

    return staticmethod(jvp)


def _save_for_jvp(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
    """What jvp_rule reads: the arguments' spec and leaves, the result's spec and which leaves are Float."""
    spec, box, *leaves = inputs
    ctx.spec, ctx.result_spec = spec, box.spec
    ctx.floats = [t.is_floating_point() for t in output]
    ctx.save_for_forward(*leaves)


def jvp_rule(b: dict[str, Any], jvp: Callable[..., Any]) -> Callable[[Any, Sequence[Any]], tuple[Any, ...]]:
    """A Function's jvp from the binding's jvp function ``jvp(*args, *tangents)``: the arguments
    from the leaves saved for forward, one tangent per argument (zeros where a leaf has none, 0.0
    for a number given for a Float, ``()`` for Integer, Bool and String parts, as their ks tangent
    type), and the result's tangent spread over the result's leaves (None for those not Float)."""
    specs = b["jvp_spec"][len(b["params"]):]  # the tangents' specs: "leaf", "empty" or parts
    jvp = jvp_function(b, jvp)  # its result differentiated again: the second-order error

    def rule(ctx: Any, tangents: Sequence[Any]) -> tuple[Any, ...]:
        saved = ctx.saved_tensors
        args = unflatten(ctx.spec, iter(saved))
        leaves, given = iter(saved), iter(tangents)
        arg_tangents = [_tangent_of(j, u, leaves, given) for j, u in zip(specs, ctx.spec[1])]
        out = jvp(*args, *arg_tangents)
        result: list[Any] = []
        _spread(ctx.result_spec, out, iter(ctx.floats), result)
        return tuple(result)

    return rule


def _tangent_of(jvp_spec: Any, spec: Any, leaves: Iterator[torch.Tensor], tangents: Iterator[Any]) -> Any:
    """One argument's tangent as the jvp takes it, from its value's spec (``flatten``'s) and its
    leaves' tangents, by the jvp's spec of it (``()`` where it holds no Float)."""
    if jvp_spec == "empty":
        for _ in range(_leaf_count(spec)):
            next(leaves), next(tangents)
        return ()
    if jvp_spec == "leaf":
        if spec is _LEAF:
            value, t = next(leaves), next(tangents)
            return t if t is not None else torch.zeros_like(value)
        kind, parts = spec
        if kind == "const":
            return 0.0  # a number given for a Float: a constant
        return [_tangent_of("leaf", p, leaves, tangents) for p in parts]  # a list for a tensor of tensors
    kind, parts = spec
    return tuple(_tangent_of(j, p, leaves, tangents) for j, p in zip(jvp_spec, parts))


def _leaf_count(spec: Any) -> int:
    if spec is _LEAF:
        return 1
    kind, parts = spec
    return 0 if kind == "const" else sum(_leaf_count(p) for p in parts)


def _spread(spec: Any, tangent: Any, floats: Iterator[bool], out: list[Any]) -> None:
    """The result's tangent (nested as the result, ``()`` where it holds no Float) as one tangent per
    result leaf: None for a leaf that is not Float."""
    if spec is _LEAF:
        is_float = next(floats)
        out.append(tangent if is_float and isinstance(tangent, torch.Tensor) else None)
        return
    kind, parts = spec
    if kind == "const":
        return
    for p, t in zip(parts, _derivative_parts(tangent, len(parts))):
        _spread(p, t, floats, out)


def vjp_function(b: dict[str, Any], vjp: Callable[..., Any]) -> Callable[..., Any]:
    """``vjp(*args, dret)`` for backward: the raw vjp entry itself in plain
    autograd, else (under torch.func, or where a tensor requires grad) a
    torch.autograd.Function over it with a vmap rule (torch.func.jacrev vmaps
    the backward) and a backward that raises: double backward is not supported."""
    name, vjp_name = b["name"], b["vjp"]
    # The vjp's arguments are the binding's and dret, batched like its results.
    params = [*b["params"], {"name": "dret", "batched": True}]
    return _derivative_function(b, vjp, vjp_name, params, lambda: double_backward_error(name, vjp_name))


def jvp_function(b: dict[str, Any], jvp: Callable[..., Any]) -> Callable[..., Any]:
    """``jvp(*args, *tangents)`` for a Function's jvp: as vjp_function's (torch.func.jacfwd vmaps
    it), and differentiating its result is the second-order error."""
    name, jvp_name = b["name"], b["jvp"]
    # The tangents are batched as their arguments are.
    params = [*b["params"], *({**p, "name": t} for p, t in zip(b["params"], b["jvp_params"]))]
    return _derivative_function(b, jvp, jvp_name, params, lambda: second_order_error(name, jvp_name))


def _derivative_function(b: dict[str, Any], fn: Callable[..., Any], fn_name: str, params: Sequence[dict[str, Any]],
                         error: Callable[[], BaseException]) -> Callable[..., Any]:
    """fn itself where nothing may differentiate or batch its result, else a Function over it whose
    vmap rule is the binding's and whose derivatives raise ``error()``."""

    class DerivativeFunction(torch.autograd.Function):
        @staticmethod
        def forward(spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            out = fn(*unflatten(spec, iter(_unwrap_dead(leaves))))
            out_leaves: list[torch.Tensor] = []
            box.spec = flatten(out, out_leaves)
            return tuple(out_leaves)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            pass

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> Any:
            raise error()

        @staticmethod
        def jvp(ctx: Any, *tangents: Any) -> Any:
            raise error()

        @staticmethod
        def vmap(info: Any, in_dims: tuple[Any, ...], spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            return vmap_rule(b["mode"], params, call, info, in_dims[2:], spec, box, leaves)

    DerivativeFunction.__name__ = DerivativeFunction.__qualname__ = f"{fn_name}_Function"
    _apply: Callable[..., Any] = DerivativeFunction.apply

    def call(*args: Any) -> Any:
        leaves: list[torch.Tensor] = []
        spec = flatten(args, leaves)
        if not (_functorch_active() or _functorch_wrapped(leaves) or _dual_level()
                or (torch.is_grad_enabled() and _needs_grad(leaves))):
            return fn(*args)
        box = _Box()
        out = _apply(spec, box, *leaves)
        return unflatten(box.spec, iter(out))

    return call


# ------------------------------------------------------------ torch.vmap

def vmap_rule(mode: str, params: Sequence[dict[str, Any]], fn: Callable[..., Any], info: Any,
              dims: Sequence[int | None], spec: Any, box: _Box, leaves: Sequence[torch.Tensor]
              ) -> tuple[tuple[torch.Tensor, ...], tuple[int | None, ...]]:
    """The vmap rule of a binding's Function: ``fn`` (which routes tensors of
    outer transforms back to the Function) over ``leaves`` batched along
    ``dims``. Elementwise bindings take the batch as one more broadcast
    dimension, vmap-mode bindings fold it into their own leading dimension,
    plain bindings (and what the others cannot fold) call once per batch
    element and stack. Fills in ``box`` with the result's spec."""
    moved = [t if d is None else t.movedim(d, 0) for t, d in zip(leaves, dims)]
    batched = [d is not None for d in dims]
    out: list[torch.Tensor] | None = None
    if not any(batched):
        result = fn(*unflatten(spec, iter(moved)))
        out = []
        box.spec = flatten(result, out)
        return tuple(out), tuple(None for _ in out)
    if mode == "elementwise":
        out = _elementwise_batched(fn, spec, box, moved, batched)
    elif mode == "vmap":
        out = _vmap_mode_batched(params, fn, spec, box, moved, batched, info.batch_size)
    if out is None:
        out = _looped(fn, spec, box, moved, batched, info.batch_size)
    return tuple(out), tuple(0 for _ in out)


def _elementwise_batched(fn: Callable[..., Any], spec: Any, box: _Box, moved: Sequence[torch.Tensor],
                         batched: Sequence[bool]) -> list[torch.Tensor]:
    # The batch dimension goes in front of the broadcast shape: batched tensors
    # get size-1 dimensions up to the broadcast rank, unbatched ones broadcast.
    rank = max(t.dim() - int(bt) for t, bt in zip(moved, batched))
    padded = [t.reshape(t.shape[0], *([1] * (rank - t.dim() + 1)), *t.shape[1:]) if bt else t
              for t, bt in zip(moved, batched)]
    out: list[torch.Tensor] = []
    box.spec = flatten(fn(*unflatten(spec, iter(padded))), out)
    return out


def _vmap_mode_batched(params: Sequence[dict[str, Any]], fn: Callable[..., Any], spec: Any, box: _Box,
                       moved: Sequence[torch.Tensor], batched: Sequence[bool], size: int
                       ) -> list[torch.Tensor] | None:
    """(size, n, ...) arguments as (size * n, ...): one call of the mode's own
    loop. None where it cannot fold (a batched shared scalar, an empty batch)."""
    kinds = spec[1]
    slots: list[bool] = []  # per leaf: is it a mode-batched argument
    for p, part in zip(params, kinds):
        if part is _LEAF:
            slots.append(bool(p["batched"]))
        elif part[0] != "const":
            return None  # a tuple of tensors: loop
    if any(bt and not slot for bt, slot in zip(batched, slots)):
        return None
    inner = {t.shape[1] if bt else t.shape[0] for t, bt, slot in zip(moved, batched, slots) if slot}
    if len(inner) != 1 or size * next(iter(inner)) == 0:
        return None  # differing sizes: the loop's call names the argument
    n = next(iter(inner))
    folded = [t.reshape(size * n, *t.shape[2:]) if bt
              else t.unsqueeze(0).expand(size, *t.shape).reshape(size * n, *t.shape[1:]) if slot else t
              for t, bt, slot in zip(moved, batched, slots)]
    result = fn(*unflatten(spec, iter(folded)))
    flat: list[torch.Tensor] = []
    box.spec = flatten(result, flat)
    return [t.reshape(size, n, *t.shape[1:]) for t in flat]


def _looped(fn: Callable[..., Any], spec: Any, box: _Box, moved: Sequence[torch.Tensor],
            batched: Sequence[bool], size: int) -> list[torch.Tensor]:
    if size == 0:
        raise ValueError("torch.vmap over an empty batch: this binding is called once per batch element "
                         "here (a plain binding, or a vmap-mode one whose batch cannot be folded into its own "
                         "leading axis), and no element tells its result's shape")
    steps: list[list[torch.Tensor]] = []
    for i in range(size):
        step = [t[i] if bt else t for t, bt in zip(moved, batched)]
        flat: list[torch.Tensor] = []
        step_spec = flatten(fn(*unflatten(spec, iter(step))), flat)
        if i == 0:
            box.spec = step_spec
        elif step_spec != box.spec or any(a.shape != b.shape for a, b in zip(flat, steps[0])):
            raise ValueError(f"torch.vmap: batch element {i}'s result differs in structure or shape from element "
                             f"0's; results must stack")
        steps.append(flat)
    return [torch.stack(parts) for parts in zip(*steps)]


# ------------------------------------------------------------ ops: batching rules and fake kernels

def _op_vmap(b: dict[str, Any], op: Any) -> Callable[..., Any]:
    """The op's batching rule (torch.vmap without torch's slow per-sample fallback):
    vmap_rule over its tensor arguments (an op takes tensors and numbers only)."""
    def rule(info: Any, in_dims: Sequence[int | None], *args: Any) -> Any:
        leaves: list[torch.Tensor] = []
        spec = flatten(args, leaves)
        dims = [d for a, d in zip(args, in_dims) if isinstance(a, torch.Tensor)]
        box = _Box()
        out, out_dims = vmap_rule(b["mode"], b["params"], op, info, dims, spec, box, leaves)
        return unflatten(box.spec, iter(out)), unflatten(box.spec, iter(out_dims))

    return rule


def _fake_tensor(part: dict[str, Any], batch: Any, device: torch.device) -> torch.Tensor:
    ctx = torch.library.get_ctx()
    rank = part["rank"]
    if batch is not None:  # vmap: the batch is known, the rest depends on the data
        sizes = [batch] + [ctx.new_dynamic_size() for _ in range(rank - 1)]
    else:
        sizes = [ctx.new_dynamic_size() for _ in range(rank)]
    return torch.empty(sizes, dtype=_DTYPES[part["dtype"]], device=device)


# ------------------------------------------------------------ loading the op library; the bindings

#: A TypeError from a stable-ABI kernel (ksbind/torch_stable.h): the stable ABI has no such exception.
_TYPE_ERROR = "ksbind.TypeError: "
_MIN_MARKER = re.compile(rb"ksbind-torch-min=([0-9][0-9.]*);")
#: The CPU capabilities, by the index the library's ops use (ksbind/cpu_capability.h).
_CAPABILITIES = ("default", "avx2", "avx512")
#: Each op library's namespace and the file that registered it, in this process.
_libraries: dict[str, str] = {}


def torch_needed(path: str) -> str | None:
    """The lowest torch a stable-ABI op library runs on, read from its bytes (None: no mark)."""
    return _marked(path, _MIN_MARKER)


def load_library(path: str, namespace: str, running: str | None = None) -> Any:
    """Load an op library (once per process) and return its ``torch.ops`` namespace. A torch
    older than the library needs, a library that does not load, and a namespace another
    library registered are ImportErrors that say so."""
    running = running or str(torch.__version__)
    name = os.path.basename(path)
    if _libraries.get(namespace) == path:
        return getattr(torch.ops, namespace)
    if namespace in _libraries:
        raise ImportError(f"{name}: torch.ops.{namespace} is already registered in this process by "
                          f"{_libraries[namespace]}; give this module another name or torch_library namespace")
    needed = torch_needed(path)
    if needed is not None and TorchVersion(running) < needed:
        raise ImportError(f"{name} needs torch {needed} or newer (its ops are built on the stable ABI of torch "
                          f"{needed}); this process has torch {running}", name=name)
    load: Callable[[str], None] = torch.ops.load_library  # torch leaves it untyped
    try:
        load(path)
    except OSError as e:
        raise ImportError(f"{name}: the op library did not load under torch {running} (it needs torch "
                          f"{needed or '2.10'} or newer): {e}", name=name, path=path) from e
    _libraries[namespace] = path
    return getattr(torch.ops, namespace)


def install_stable(namespace: dict[str, Any], lib: str, library: str, bindings: Sequence[dict[str, Any]],
                   arena_bytes: int, logging: bool, extension_suffix: bool = False) -> None:
    """Define a torch module's names in ``namespace`` (its wrapper's globals): load
    its op library ``lib`` (beside the wrapper), configure it, and make each binding a
    function over its ops ``torch.ops.LIBRARY.NAME`` (fake kernel, autograd from the vjp,
    batching rule) and ``_direct_NAME`` (the same kernel, for calls that need none of those).
    ``extension_suffix``: the library is named as an extension module (a wheel's: ``.abi3.so``)."""
    ops = load_library(_library_file(namespace, lib, extension_suffix), library)
    try:
        message = ops._ksbind_configure(arena_bytes, logging)
    except (RuntimeError, ValueError) as e:  # a bad KSBIND_CPU_CAPABILITY: the import fails, as documented
        raise ImportError(f"{namespace.get('__name__', lib)}: {e}") from None
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    namespace.update(_support_functions(ops))
    lazy: dict[str, Callable[[], None]] = {}
    for b in bindings:
        if b.get("packed"):
            make = _lazy_packed(namespace, ops, b, lazy)
            lazy[b["name"]] = make
            if b["vjp"]:
                lazy[b["vjp"]] = make
            continue
        ragged, ragged_vjp = _packed_calls(ops, b, b["ragged"], _RAGGED_PREFIX) if b.get("ragged") else (None, None)
        jvp = _stable_jvp_function(ops, b) if b.get("jvp") else None
        function = _stable_function(library, ops, b, ragged, jvp)
        function.__module__ = namespace["__name__"]
        namespace[b["name"]] = function
        if b["vjp"]:
            namespace[b["vjp"]] = _stable_vjp_function(ops, b, ragged_vjp)
            namespace[b["vjp"]].__module__ = namespace["__name__"]
        if jvp is not None:
            namespace[b["jvp"]] = jvp
            jvp.__module__ = namespace["__name__"]
    namespace["ops"] = ops
    if lazy:
        namespace["__getattr__"] = _module_getattr(namespace, lazy)
        namespace["__dir__"] = lambda: sorted({*namespace, *lazy})


def _lazy_packed(namespace: dict[str, Any], ops: Any, b: dict[str, Any],
                 lazy: dict[str, Callable[[], None]]) -> Callable[[], None]:
    """Defines a packed binding's functions when the module's attribute is first read: they are
    ``torch.compiler.disable``d, which imports torch._dynamo (seconds), so importing the module
    does not."""
    def make() -> None:
        function, vjp = _packed_functions(ops, b)
        for name, f in ((b["name"], function), (b["vjp"], vjp)):
            if name and f is not None:
                f.__module__ = namespace["__name__"]
                namespace[name] = f
                lazy.pop(name, None)

    return make


def _module_getattr(namespace: dict[str, Any], lazy: dict[str, Callable[[], None]]) -> Callable[[str], Any]:
    """The wrapper module's ``__getattr__`` (PEP 562): a lazily defined binding on first use."""
    def __getattr__(name: str) -> Any:
        make = lazy.get(name)
        if make is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        make()
        return namespace[name]

    return __getattr__


def _library_file(namespace: dict[str, Any], lib: str, extension_suffix: bool) -> str:
    """The op library beside the wrapper: ``lib.so``, or (a wheel's) ``lib`` with one of this
    Python's extension suffixes, as setuptools and ksbind's build backend name it."""
    folder = os.path.dirname(os.path.abspath(namespace["__file__"]))
    names = [lib + s for s in importlib.machinery.EXTENSION_SUFFIXES] if extension_suffix else [lib + ".so"]
    for name in names:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise ImportError(f"{namespace['__name__']}: its op library is missing: none of {', '.join(names)} is in "
                      f"{folder} (the wrapper and its library must be installed together)")


def _support_functions(ops: Any) -> dict[str, Callable[..., Any]]:
    def cpu_capability() -> str:
        return _CAPABILITIES[ops._ksbind_cpu_capability()]

    def cpu_capabilities() -> list[str]:
        bits = ops._ksbind_cpu_capabilities()
        return [c for i, c in enumerate(_CAPABILITIES) if bits >> i & 1]

    def _set_cpu_capability(name: str) -> str:
        return _CAPABILITIES[ops._ksbind_set_cpu_capability(name)]

    def logging(on: bool) -> None:
        ops._ksbind_logging(bool(on))

    def set_arena_bytes(bytes: int) -> None:
        # the op's schema takes an int: anything else is the dispatcher's RuntimeError otherwise
        if isinstance(bytes, bool) or not isinstance(bytes, int):
            raise TypeError(f"set_arena_bytes(): bytes must be an int, got {type(bytes).__name__} ({bytes!r})")
        _translated_call(ops._ksbind_set_arena_bytes, (bytes,), "set_arena_bytes")

    functions: dict[str, Callable[..., Any]] = {
        "reset_allocator": lambda: _translated_call(ops._ksbind_reset_allocator, ()),
        "allocator_top": lambda: ops._ksbind_allocator_top(),
        "allocator_peak": lambda: ops._ksbind_allocator_peak(),
        "arena_bytes": lambda: ops._ksbind_arena_bytes(),
        "set_arena_bytes": set_arena_bytes,
        "logging": logging, "cpu_capability": cpu_capability, "cpu_capabilities": cpu_capabilities,
        "_set_cpu_capability": _set_cpu_capability,
    }
    for name, f in functions.items():
        f.__name__ = f.__qualname__ = name
    return functions


def _translated(error: Exception, binding: str) -> BaseException:
    """A kernel's error as its Python type, naming the binding (ksbind/torch_stable.h's
    messages start with the argument's name)."""
    text = str(error)
    if text.startswith(_TYPE_ERROR):
        return TypeError(f"{binding}(): {text[len(_TYPE_ERROR):]}")
    if text.startswith("argument '") and binding:
        return type(error)(f"{binding}(): {text}")
    return error


def _eager_entry(overload: Any) -> Callable[..., Any]:
    """An op overload's own builtin (``OpOverload._op``), for eager calls: ``OpOverload.__call__`` is a
    Python method that only forwards to it, and costs about 0.25 us a call, a sixth of a small op's
    call. The builtin dispatches the same (``__torch_function__`` and modes included), but dynamo
    cannot trace it: a call that a trace may see takes the overload. The overload itself where a
    torch without that attribute is running."""
    entry = getattr(overload, "_op", None)
    chosen: Callable[..., Any] = entry if callable(entry) else overload
    return chosen


#: Whether dynamo is tracing the caller (constant-folded to True by dynamo; in eager a function that
#: returns False, a third of is_compiling()'s cost): the one tracer that cannot take _eager_entry's
#: builtin. torch.compiler.is_compiling where a torch lacks it.
_dynamo_tracing: Callable[[], bool] = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def _translated_call(f: Callable[..., Any], leaves: Sequence[Any], binding: str = "") -> Any:
    try:
        return f(*leaves)
    except (RuntimeError, ValueError, OverflowError) as e:
        raise _translated(e, binding) from None


_TENSOR_LEAVES = ("tensor", "stacked", "zero_dim")
_FLT_MAX = 3.4028234663852886e38


class _ListGiven(Exception):
    """A list (or tuple) given for a tensor of tensors, where the binding's packed op takes it as it is."""


def _leaf_value(leaf: dict[str, Any], value: Any, binding: str, lists: str = "stack") -> Any:
    """One argument leaf as its op takes it (a number for a 0-dim tensor leaf, a tensor for a list).
    ``lists``: what a list given for a tensor of tensors becomes: "stack" (one stacked tensor, a
    copy; ragged is a ValueError), or "packed" (_ListGiven: the caller takes the packed op)."""
    kind, where = leaf["kind"], leaf["where"]
    if kind in ("tensor", "stacked"):
        if isinstance(value, torch.Tensor):
            return value
        if kind == "stacked" and lists == "packed" and isinstance(value, (list, tuple)):
            raise _ListGiven
        if kind == "stacked" and isinstance(value, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in value):
            try:
                return torch.stack(list(value))  # a list of tensors has no one memory to view: stacked (a copy)
            except RuntimeError as e:
                raise ValueError(f"{binding}(): argument '{where}': a list of tensors of different shapes (ragged) "
                                 f"cannot be stacked for a traced call (torch.compile, torch.export: the op takes "
                                 f"one stacked tensor): {e}") from None
        raise TypeError(f"{binding}(): argument '{where}': expected a torch.Tensor, got {type(value).__name__}")
    if isinstance(value, torch.Tensor):
        if kind == "zero_dim":
            if value.dim() != 0:
                raise ValueError(f"{binding}(): argument '{where}': expected a number or a 0-dimensional tensor "
                                 f"for ks Float, got a tensor of shape {list(value.shape)}")
            if not value.is_floating_point():
                raise TypeError(f"{binding}(): argument '{where}': expected a number or a 0-dimensional floating "
                                f"tensor for ks Float, got a {value.dtype} tensor")
            return value if value.dtype == torch.float32 else value.to(torch.float32)  # differentiable
        refusal = _refusal(binding, where, value)  # .item() of a meta or fake tensor has no value to give
        if refusal is not None:
            raise refusal
        value = value.item()
    if kind in ("zero_dim", "float"):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _FLT_MAX:
            raise OverflowError(f"{binding}(): argument '{where}': int too large for ks Float (32-bit float)")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{binding}(): argument '{where}': expected a number for ks Float, got "
                            f"{type(value).__name__}") from None
        return torch.tensor(number, dtype=torch.float32) if kind == "zero_dim" else number
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError(f"{binding}(): argument '{where}': expected an int for ks Integer, got "
                                f"{type(value).__name__}") from None
        if not -2**31 <= value < 2**31:
            raise OverflowError(f"{binding}(): argument '{where}': int out of range for ks Integer (32-bit)")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError(f"{binding}(): argument '{where}': expected a str for ks String, got "
                            f"{type(value).__name__}")
        try:
            value.encode("utf-8")  # the op's str is UTF-8: the dispatcher's own refusal names no argument
        except UnicodeEncodeError as e:
            raise ValueError(f"{binding}(): argument '{where}': a ks String is UTF-8 text, and this str has a "
                             f"lone surrogate ({value[e.start]!r} at index {e.start}), which UTF-8 cannot "
                             f"encode") from None
        return value
    if not isinstance(value, bool):
        raise TypeError(f"{binding}(): argument '{where}': expected a bool for ks Bool, got {type(value).__name__}")
    return value


def _flattener(binding: str, specs: Sequence[Any], leaves: Sequence[dict[str, Any]],
               lists: str = "stack") -> Callable[..., list[Any]]:
    """args -> the op's leaves, by each argument's spec ("leaf", "empty" or a list of parts);
    ``lists`` as _leaf_value's."""
    def walk(spec: Any, value: Any, where: str, out: list[Any], it: Iterator[dict[str, Any]]) -> None:
        if spec == "leaf":
            out.append(_leaf_value(next(it), value, binding, lists))
        elif spec == "empty":
            return
        else:
            if not isinstance(value, (tuple, list)) or len(value) != len(spec):
                raise TypeError(f"{binding}(): argument '{where}': expected a tuple of {len(spec)}, got "
                                f"{type(value).__name__}")
            for i, (s, v) in enumerate(zip(spec, value)):
                walk(s, v, f"{where}[{i}]", out, it)

    if all(s == "leaf" for s in specs) and all(x["kind"] in ("tensor", "stacked") for x in leaves):
        def tensors(args: Sequence[Any]) -> list[Any]:  # the common case: tensors only, checked cheaply
            if all(type(a) is torch.Tensor for a in args):
                return list(args)
            return [_leaf_value(x, a, binding, lists) for x, a in zip(leaves, args)]
        return tensors

    def flatten(args: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        it = iter(leaves)
        for spec, value, x in zip(specs, args, _names(leaves, specs)):
            walk(spec, value, x, out, it)
        return out

    return flatten


def _names(leaves: Sequence[dict[str, Any]], specs: Sequence[Any]) -> list[str]:
    """Each argument's Python name (the first leaf's name before any [i])."""
    names: list[str] = []
    it = iter(leaves)

    def first(spec: Any) -> str | None:
        if spec == "leaf":
            return str(next(it)["where"]).split("[")[0]
        if spec == "empty":
            return None
        found = [first(s) for s in spec]
        return next((f for f in found if f), None)

    for s in specs:
        names.append(first(s) or "()")
    return names


def _rebuild(tree: dict[str, Any], out: Any) -> Any:
    """The op's result (a tensor, a tuple of them, or an empty list) re-nested by its tree."""
    return _nest(tree, iter((out,) if _count(tree) == 1 else tuple(out)))


def _nest(tree: dict[str, Any], flat: Iterator[Any]) -> Any:
    # A module-level function, not a closure defined per call: a recursive closure is a
    # reference cycle, which would keep the result's tensors alive until the cyclic GC runs
    # (measured: a 1M-element result then costs fresh pages on every call, 0.06 -> 0.14 ms).
    if tree["kind"] == "leaf":
        return next(flat)
    if tree["kind"] == "empty":
        return ()
    return tuple(_nest(p, flat) for p in tree["parts"])


def _count(tree: dict[str, Any]) -> int:
    return 1 if tree["kind"] == "leaf" else sum(_count(p) for p in tree.get("parts", ()))


def _leaf_trees(tree: dict[str, Any]) -> list[dict[str, Any]]:
    if tree["kind"] == "leaf":
        return [tree]
    return [x for p in tree.get("parts", ()) for x in _leaf_trees(p)]


def _stable_fake(mode: str, leaves: Sequence[dict[str, Any]], tree: dict[str, Any],
                 like: Sequence[int] | None = None) -> Callable[..., Any]:
    """Shapes of an op's result: exact where the mode (or, for a vjp, its inputs: ``like``,
    the leaves each gradient has the shape of) fixes them, unbacked sizes otherwise."""
    parts = _leaf_trees(tree)
    dtypes = [_DTYPES[p["dtype"]] for p in parts]

    def fake(*args: Any) -> Any:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")  # meta tensors give meta results
        if mode == "elementwise":
            shape = _broadcast_shapes(*(t.shape for t in tensors))
            outs = [torch.empty(shape, dtype=d, device=device) for d in dtypes]
        elif like is not None:
            outs = [torch.empty_like(args[i], memory_format=torch.contiguous_format) for i in like]
        else:
            batch = next((args[i].shape[0] for i, x in enumerate(leaves) if x["batched"]), None)
            outs = [_fake_tensor(p, batch, device) for p in parts]
        if len(outs) == 1:
            return outs[0]
        return tuple(outs) if outs else []

    return fake


def _stable_function(library: str, ops: Any, b: dict[str, Any], ragged: Callable[..., Any] | None = None,
                     jvp: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A binding's function: its leaves to the op (through the dispatcher's autograd, when a
    gradient or a torch.func transform needs it), and the op's tensors re-nested. ``ragged``:
    the binding's packed call, which an eager call takes for a list given for a tensor of
    tensors or a tensor-of-tensors result (see _ragged_router). ``jvp``: the binding's jvp
    function (_stable_jvp_function), for forward mode; its op is registered here."""
    name, mode, leaves = b["name"], b["mode"], b["leaves"]
    op, direct = getattr(ops, name).default, getattr(ops, "_direct_" + name).default
    direct_eager = _eager_entry(direct)
    for qualname in (name, "_direct_" + name):
        torch.library.register_fake(f"{library}::{qualname}")(_stable_fake(mode, leaves, b["result"]))
    op_rule = {"mode": mode, "params": leaves}
    torch.library.register_vmap(f"{library}::{name}")(_op_vmap(op_rule, getattr(ops, name)))
    has_vjp = bool(b["vjp"])
    if has_vjp:
        _register_stable_autograd(library, ops, b)
    flatten = _flattener(name, b["spec"], leaves)
    tree = b["result"]
    single = tree["kind"] == "leaf"
    grad_leaves = [i for i, x in enumerate(leaves) if x["float"] and x["kind"] in _TENSOR_LEAVES]
    params = b["params"]
    grad_enabled: Callable[[], bool] = torch.is_grad_enabled
    compiling: Callable[[], bool] = torch.compiler.is_compiling
    tracing: Callable[[], bool] = torch._C._is_tracing

    tensor_leaves = [i for i, x in enumerate(leaves) if x["kind"] in _TENSOR_LEAVES]
    route = _ragged_router(b, leaves, b["spec"], "result", tensor_leaves, ragged)
    # The tensors the op writes into (the binding's mutates): an eager call bumps their version
    # counters, as torch's in-place ops do, so autograd refuses a backward needing the old values.
    # A trace needs nothing: the schema's Tensor(a!) tells functionalization.
    written = [i for i, x in enumerate(leaves) if x["where"] in b.get("mutates", ())]

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(params):
            args = _bound(name, params, args, kwargs)
        routed = flatten(args) if route is None else route(args)
        if routed is None and not (b.get("jvp") and _dual_level()):
            assert ragged is not None
            return ragged(*args)
        flat = routed if routed is not None else flatten(args)  # (a dual tensor's tangent: the stacked op's jvp)
        if _functorch_active() and compiling():
            raise _transform_under_compile(name)
        if _functorch_active() and _functorch_wrapped([flat[i] for i in tensor_leaves]):
            # torch.func (grad, vjp, jacrev, vmap): a Function with setup_context and a vmap rule, over
            # this function again (inside it the tensors are plain); the op's own autograd, which
            # torch.library generates, has no setup_context and so no part in torch.func.
            return func_transforms(*args)
        # A trace records the op (dynamo, export, jit.trace). An eager call that may need a gradient
        # goes through the Function over the direct op that torch.func uses: the dispatcher's
        # autograd kernel that torch.library generates is several Python calls deeper (a 16 x 16
        # forward+backward took a third longer through it).
        if compiling() or tracing():
            run = op
        elif written and grad_enabled() and any(flat[i].requires_grad for i in written):
            where = next(leaves[i]["where"] for i in written if flat[i].requires_grad)
            raise RuntimeError(f"{name}(): argument '{where}' requires grad, and this binding writes into it "
                               f"(mutates): autograd cannot differentiate through the write; pass a tensor that "
                               f"does not require grad, or call it under torch.no_grad()")
        elif (grad_enabled() and any(flat[i].requires_grad for i in grad_leaves)) or _dual_level():
            # (forward AD: through the Function whose jvp says, naming the binding, what it lacks)
            return func_transforms(*args) if has_vjp else missing_vjp(*args)
        else:
            run = direct_eager  # not traced: compiling() is False
        try:
            out = run(*flat)
        except (RuntimeError, ValueError, OverflowError) as e:
            raise _failure(name, leaves, flat, e) from None
        if written and run is not op:
            for i in written:
                torch.autograd.graph.increment_version(flat[i])
        return out if single else _rebuild(tree, out)

    legacy = _legacy_binding(b)
    if jvp is not None:
        _register_stable_jvp(library, ops, b)
    func_transforms = (autograd_function(legacy, call, _stable_vjp_function(ops, b), jvp) if has_vjp
                       else forward_function(legacy, call, jvp))
    missing_vjp = missing_vjp_function(legacy, call, jvp)
    packs_nested = bool(ragged) and _nested_result(b["ragged"]["result"])
    # No fast path for a binding that writes into its arguments: call bumps their versions.
    fast = None if packs_nested or written else _fast_path(b, direct, direct_eager, call, grad_leaves)
    function = fast if fast is not None else call
    function.__name__ = function.__qualname__ = name
    function.__doc__ = b["doc"]
    function.op = getattr(ops, name)  # type: ignore[attr-defined]
    if fast is None:
        function.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
    return function


def _nested_result(spec: Any) -> bool:
    """Whether a packed spec holds a tensor of tensors ("v" over tensors of scalars)."""
    if isinstance(spec, str):
        return False
    if spec[0] == "v":
        return True
    if spec[0] == "tuple":
        return any(_nested_result(p) for p in spec[1])
    return False


def _ragged_router(b: dict[str, Any], leaves: Sequence[dict[str, Any]], specs: Sequence[Any], result: str,
                   tensor_leaves: Sequence[int],
                   ragged: Callable[..., Any] | None) -> Callable[[Sequence[Any]], list[Any] | None] | None:
    """For a binding with packed ops beside its ops (``ragged``): args -> the op's leaves, or None
    where the call takes the packed op instead. Eager calls do so for a list given for a tensor
    of tensors (taken as it is: ragged or not, no stacking copy) and whenever the result holds a
    tensor of tensors (a list when its rows differ in shape, as the torch target returns it). A
    trace (torch.compile, torch.export: FakeTensors) takes the op, whose schema stacks them."""
    if ragged is None:
        return None
    name = b["name"] if result == "result" else b["vjp"]
    listing = _flattener(name, specs, leaves, "packed")
    stacking = _flattener(name, specs, leaves)
    nested = _nested_result(b["ragged"][result])
    compiling: Callable[[], bool] = torch.compiler.is_compiling

    def route(args: Sequence[Any]) -> list[Any] | None:
        try:
            flat = listing(args)
        except _ListGiven:
            return stacking(args) if compiling() else None
        if nested and not compiling() and all(type(flat[i]) is torch.Tensor for i in tensor_leaves):
            return None
        return flat

    return route


def _fast_path(b: dict[str, Any], direct: Any, direct_eager: Callable[..., Any], general: Callable[..., Any],
               grad_leaves: Sequence[int]) -> Callable[..., Any] | None:
    """A binding of tensors only, returning one tensor, as a function of its own arguments
    (keywords too) that calls the direct op itself when every argument is a plain tensor and
    nothing needs the dispatcher's autograd, a batching rule or a trace; else ``general``.
    Written as source and compiled once, as dataclasses and namedtuple write their methods: a
    call through *args and a loop over them costs more than the op's own dispatch."""
    params, leaves = b["params"], b["leaves"]
    if (b["result"]["kind"] != "leaf" or any(s != "leaf" for s in b["spec"])
            or any(x["kind"] not in ("tensor", "stacked") for x in leaves) or not params
            or not all(p.isidentifier() and not p.startswith("_ksbind") for p in params)):
        return None
    args = ", ".join(params)
    plain = " and ".join(f"type({p}) is _ksbind_tensor" for p in params)
    # requires_grad first: usually False, so grad mode is not asked. Under dynamo the direct op,
    # which has the same fake kernel, not its builtin (_eager_entry), which dynamo cannot trace;
    # torch.export's FakeTensors are not plain tensors, so export records the binding's op.
    # With a vjp, for its autograd; without, for the Function whose backward says it has none.
    grads = " or ".join(f"{params[i]}.requires_grad" for i in grad_leaves)
    # torch.jit.trace records the op (differentiable, as the traced model will be trained), never the
    # direct one, whether or not this call needs a gradient (its check reruns under no_grad).
    # (Asked only outside dynamo, which cannot trace _is_tracing and records the op through its own path.)
    # A forward-AD dual level too: a dual argument's tangent is seen only by a Function's jvp.
    needs = ("_ksbind_functorch() or (_ksbind_forward_ad._current_level >= 0 and _ksbind_fw_grad())"
             " or (not _ksbind_dynamo() and _ksbind_tracing())"
             + (f" or (({grads}) and _ksbind_grad())" if grads else ""))
    source = (f"def {b['name']}({args}):\n"
              f"    if {plain} and not ({needs}):\n"
              f"        try:\n"
              f"            if _ksbind_dynamo():\n"
              f"                return _ksbind_direct({args})\n"
              f"            return _ksbind_eager({args})\n"
              f"        except _ksbind_errors as e:\n"
              f"            raise _ksbind_failure({b['name']!r}, _ksbind_leaves, ({args},), e) from None\n"
              f"    return _ksbind_general({args})\n")
    scope: dict[str, Any] = {
        "_ksbind_tensor": torch.Tensor, "_ksbind_functorch": torch._C._are_functorch_transforms_active,
        "_ksbind_tracing": torch._C._is_tracing, "_ksbind_forward_ad": forward_ad,
        "_ksbind_fw_grad": torch._C._is_fwd_grad_enabled,
        "_ksbind_grad": torch.is_grad_enabled,
        "_ksbind_direct": direct, "_ksbind_eager": direct_eager, "_ksbind_dynamo": _dynamo_tracing,
        "_ksbind_general": general, "_ksbind_failure": _failure, "_ksbind_leaves": leaves,
        "_ksbind_errors": (RuntimeError, ValueError, OverflowError)}
    try:
        exec(compile(source, f"<ksbind binding {b['name']}>", "exec"), scope)  # noqa: S102
    except SyntaxError:  # a name Python cannot take as a parameter: the general function
        return None
    function: Callable[..., Any] = scope[b["name"]]
    return function


def _legacy_binding(b: dict[str, Any]) -> dict[str, Any]:
    """The binding as autograd_function, forward_function and vmap_rule read one: each argument
    batched (vmap mode) when its one leaf is."""
    it = iter(b["leaves"])
    params = []
    for p, spec in zip(b["params"], b["spec"]):
        batched = False
        if spec == "leaf":
            batched = bool(next(it)["batched"])
        else:
            for _ in _spec_leaves(spec):
                next(it)
        params.append({"name": p, "batched": batched})
    out = {"name": b["name"], "vjp": b["vjp"], "mode": b["mode"], "params": params}
    if b.get("jvp"):
        out.update(jvp=b["jvp"], jvp_spec=b["jvp_spec"], jvp_params=b["jvp_params"])
    return out


def _spec_leaves(spec: Any) -> list[None]:
    if spec == "leaf":
        return [None]
    if spec == "empty":
        return []
    return [x for s in spec for x in _spec_leaves(s)]


def _bound(name: str, params: Sequence[str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Positional arguments from a call with keywords (a TypeError as Python's for a bad one)."""
    sig = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}(): {e}") from None
    return tuple(bound.arguments[p] for p in params)


def _failure(name: str, leaves: Sequence[dict[str, Any]], flat: Sequence[Any], error: Exception) -> BaseException:
    """What a failed op call raises: a tensor argument no CPU kernel takes, named (the dispatcher's
    NotImplementedError, or a meta tensor's fake-kernel error), else the kernel's error translated."""
    refused = _refused(name, leaves, flat, error)
    return refused if refused is not error else _translated(error, name)


def _refused(name: str, leaves: Sequence[dict[str, Any]], flat: Sequence[Any], error: BaseException) -> BaseException:
    """What the dispatcher refused (a tensor no CPU kernel takes), with the argument named."""
    for x, v in zip(leaves, flat):
        refusal = _refusal(name, x["where"], v)
        if refusal is not None:
            return refusal
    return error


def _refusal(name: str, where: str, v: Any) -> BaseException | None:
    """Why a kernel cannot view tensor v (nested, another device's, not strided), or None."""
    if isinstance(v, torch.Tensor):
        if v.is_nested:
            return ValueError(f"{name}(): argument '{where}': expected a dense tensor, got a nested tensor "
                              f"(pass a list of its tensors: t.unbind())")
        if v.device.type != "cpu":
            return ValueError(f"{name}(): argument '{where}': expected a CPU tensor, got a tensor on "
                              f"device '{v.device}'")
        if v.layout != torch.strided:
            return ValueError(f"{name}(): argument '{where}': expected a dense (strided) tensor, got "
                              f"{v.layout}")
        if isinstance(v, FakeTensor) and torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is None:
            return TypeError(f"{name}(): argument '{where}': expected a tensor with data, got a FakeTensor outside "
                             f"its FakeTensorMode (call inside the mode, or trace the call with torch.compile or "
                             f"torch.export)")
    return None


def _register_stable_autograd(library: str, ops: Any, b: dict[str, Any]) -> None:
    """Autograd for a binding's op from its vjp op; the vjp op's own says double backward is
    not supported."""
    name, vjp_name, mode, leaves = b["name"], b["vjp"], b["mode"], b["leaves"]
    vjp_op, vjp_direct = getattr(ops, vjp_name).default, getattr(ops, "_direct_" + vjp_name).default
    float_leaves = [i for i, x in enumerate(leaves) if x["float"] and x["kind"] in _TENSOR_LEAVES]
    result_floats = [p["dtype"] == "float32" for p in _leaf_trees(b["result"])]
    vjp_leaves = b["vjp_leaves"]
    like = None if mode == "elementwise" else float_leaves
    for qualname in (vjp_name, "_direct_" + vjp_name):
        torch.library.register_fake(f"{library}::{qualname}")(
            _stable_fake(mode, vjp_leaves, b["vjp_result"], like))
    torch.library.register_vmap(f"{library}::{vjp_name}")(
        _op_vmap({"mode": mode, "params": vjp_leaves}, getattr(ops, vjp_name)))

    def vjp_backward(ctx: Any, *grads: Any) -> Any:
        raise double_backward_error(name, vjp_name)

    torch.library.register_autograd(f"{library}::{vjp_name}", vjp_backward)
    n_grads = _count(b["vjp_result"])

    def setup_context(ctx: Any, inputs: Sequence[Any], output: Any) -> None:
        tensors, ctx.others = _split(inputs)
        ctx.save_for_backward(*tensors)
        outs = output if isinstance(output, (tuple, list)) else (output,)
        ctx.out_meta = [(o.shape, o.dtype) for o in outs]

    def backward(ctx: Any, *grads: Any) -> Any:
        saved = ctx.saved_tensors
        if (torch.is_grad_enabled() and _needs_grad([*saved, *grads]) and not _functorch_active()
                and not _functorch_wrapped([*saved, *grads])):
            raise double_backward_error(name, vjp_name)
        args = _join(saved, ctx.others)
        dret = [g if g is not None else torch.zeros(shape, dtype=dtype)
                for g, (shape, dtype), is_float in zip(grads, ctx.out_meta, result_floats) if is_float]
        # The vjp op itself only where its batching rule or its double-backward error may be needed.
        needs_op = _functorch_active() or torch.is_grad_enabled()
        out = (vjp_op if needs_op else vjp_direct)(*args, *dret)
        got = [out] if n_grads == 1 else list(out)
        result: list[Any] = [None] * len(args)
        for i, g in zip(float_leaves, got):
            a = args[i]
            if mode == "elementwise" and g.shape != a.shape:
                g = g.sum_to_size(a.shape)  # the argument was broadcast
            result[i] = g
        return tuple(result)

    torch.library.register_autograd(f"{library}::{name}", backward, setup_context=setup_context)


def _register_stable_jvp(library: str, ops: Any, b: dict[str, Any]) -> None:
    """The jvp op's fake kernel and batching rule, and its autograd: the second-order error."""
    name, mode, leaves = b["jvp"], b["mode"], b["jvp_leaves"]
    for qualname in (name, "_direct_" + name):
        torch.library.register_fake(f"{library}::{qualname}")(_stable_fake(mode, leaves, b["jvp_result"]))
    torch.library.register_vmap(f"{library}::{name}")(_op_vmap({"mode": mode, "params": leaves}, getattr(ops, name)))

    def jvp_backward(ctx: Any, *grads: Any) -> Any:
        raise second_order_error(b["name"], name)

    torch.library.register_autograd(f"{library}::{name}", jvp_backward)


def _stable_jvp_function(ops: Any, b: dict[str, Any]) -> Callable[..., Any]:
    """A binding's jvp as a function: its arguments and their tangents to the jvp op, the
    result's tangent re-nested."""
    name = b["jvp"]
    op, direct = getattr(ops, name).default, getattr(ops, "_direct_" + name).default
    leaves = b["jvp_leaves"]
    params = [*b["params"], *b["jvp_params"]]
    flatten = _flattener(name, b["jvp_spec"], leaves)
    tree = b["jvp_result"]
    compiling: Callable[[], bool] = torch.compiler.is_compiling
    tracing: Callable[[], bool] = torch._C._is_tracing

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(params):
            args = _bound(name, params, args, kwargs)
        flat = flatten(args)
        # The op (its batching rule, its autograd's error, a trace's record) where any may be needed.
        needs_op = compiling() or tracing() or _functorch_active() or torch.is_grad_enabled() or _dual_level()
        return _rebuild(tree, _translated_call(op if needs_op else direct, flat, name))

    call.__name__ = call.__qualname__ = name
    return call


def _stable_vjp_function(ops: Any, b: dict[str, Any], ragged: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A binding's vjp as a function: its arguments and dret to the vjp op, the gradients
    re-nested; ``ragged``: its packed call, taken as _ragged_router says."""
    name = b["vjp"]
    direct = getattr(ops, "_direct_" + name).default
    params = [*b["params"], "dret"]
    vjp_leaves = b["vjp_leaves"]
    flatten = _flattener(name, b["vjp_spec"], vjp_leaves)
    tree = b["vjp_result"]
    tensor_leaves = [i for i, x in enumerate(vjp_leaves) if x["kind"] in _TENSOR_LEAVES]
    route = _ragged_router(b, vjp_leaves, b["vjp_spec"], "vjp_result", tensor_leaves, ragged)

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(params):
            args = _bound(name, params, args, kwargs)
        flat = flatten(args) if route is None else route(args)
        if flat is None:
            assert ragged is not None
            return ragged(*args)
        return _rebuild(tree, _translated_call(direct, flat, name))

    call.__name__ = call.__qualname__ = name
    return call


# ------------------------------------------------------------ packed bindings

# A binding whose values no op schema can say (a string result, a list of tuples...) has ops
# over Tensor[] both ways; its values are packed depth first, as ksbind/torch_stable.h's
# Unpacker reads them and its pack writes them. Specs: ksbind/codegen/targets/torch.py,
# pack_spec.
_PACK_DTYPES = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool}
#: The packed ops beside a binding's ops that has tensors of tensors (see _ragged_router):
#: ksbind/codegen/targets/torch.py's RAGGED_PREFIX.
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


def _packed_calls(ops: Any, b: dict[str, Any], packed: dict[str, Any],
                  prefix: str = "") -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """A binding's function and its vjp's over its packed ops (``prefix + NAME``). Autograd and
    torch.func go through the torch target's Function over the same calls (autograd_function:
    its vjp is the vjp op's function); differentiating the vjp's result is the double-backward
    error."""
    name, vjp_name, params = b["name"], b["vjp"], b["params"]
    entry = _packed_entry(ops, name, params, packed["params"], packed["result"], prefix)
    vjp = _packed_entry(ops, vjp_name, [*params, "dret"], packed["vjp_params"], packed["vjp_result"], prefix) \
        if vjp_name else None
    legacy = {"name": name, "vjp": vjp_name, "mode": "plain",
              "params": [{"name": p, "batched": False} for p in params]}
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
    vjp_through = vjp_function(legacy, vjp)  # differentiating its result: the double-backward error

    def vjp_call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(params) + 1:
            args = _bound(vjp_name, [*params, "dret"], args, kwargs)
        return vjp_through(*args)

    vjp_call.__name__ = vjp_call.__qualname__ = vjp_name
    return call, vjp_call


def _packed_functions(ops: Any, b: dict[str, Any]) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """A packed binding's function and its vjp's (_packed_calls), which torch.compile does not
    trace (the ops have no fake kernel)."""
    call, vjp_call = _packed_calls(ops, b, b["packed"])
    reason = (f"ksbind: {b['name']} is a packed op's function (its values have no op schema, so its op has no "
              f"fake kernel to trace)")
    untraced: Callable[..., Callable[..., Any]] = torch.compiler.disable  # torch leaves it untyped

    def disable(f: Callable[..., Any]) -> Callable[..., Any]:
        try:
            return untraced(f, reason=reason)
        except TypeError:  # a torch without the reason argument
            return untraced(f)

    return disable(call), disable(vjp_call) if vjp_call is not None else None


__all__ = ["autograd_function", "forward_function", "vmap_rule", "install_stable", "load_library", "torch_needed"]
