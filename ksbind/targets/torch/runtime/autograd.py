"""Gradients: a binding as a torch.autograd.Function (backward from its vjp, forward mode from its jvp), the
errors for what ksc's derivatives cannot give, and the vjp and jvp as functions of their own.

Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch and nothing of
ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.autograd.forward_ad as forward_ad  # torch imports it itself
from torch._subclasses.fake_tensor import FakeTensor  # torch imports it itself

from .contract import AutogradSpec, ParamRecord, present
from .trees import _LEAF, _Box, flatten, unflatten
from .vmap import vmap_rule


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


def _flat_call(fn: Callable[..., Any], spec: Any, box: _Box, leaves: Sequence[torch.Tensor]
               ) -> tuple[torch.Tensor, ...]:
    """A Function's forward: ``fn`` of the arguments ``spec`` rebuilds from ``leaves``; its result's
    tensor leaves, the spec that rebuilds it put in ``box``."""
    out = fn(*unflatten(spec, iter(leaves)))
    out_leaves: list[torch.Tensor] = []
    box.spec = flatten(out, out_leaves)
    return tuple(out_leaves)


def autograd_function(b: AutogradSpec, entry: Callable[..., Any], vjp: Callable[..., Any] | None,
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
    name, vjp_name = b["name"], present(b["vjp"], "vjp")
    single = len(b["params"]) == 1
    broadcast = b["mode"] == "elementwise"
    vjp_call = vjp_function(b, vjp)
    jvp_rule_ = jvp_rule(b, jvp) if jvp is not None else None

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            return _flat_call(entry, spec, box, leaves)

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


def partials_function(name: str, vjp_name: str, partials: Callable[..., Any], vjp: Callable[..., Any]
                      ) -> Callable[..., Any]:
    """``f(*tensors)`` for an eager call of an elementwise binding that needs a gradient, in plain
    autograd (not torch.func, not forward mode): ``partials``, the op computing the binding's value
    and each argument's partial derivative in one loop (ks's vjp at dret = 1), whose forward keeps
    the partials its arguments need. Backward multiplies each by the result's gradient in place,
    summed to the argument's shape where it was broadcast: no tensor more than the vjp op would
    make, and none of the function's maths again (the vjp op computes gelu's erf and exp a second
    time). A second backward through the same graph (retain_graph=True) finds the partials used
    and calls ``vjp``, the vjp op, on the arguments, which forward saved as the vjp's Function does."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *leaves: torch.Tensor) -> torch.Tensor:
            value, *parts = partials(*leaves)
            ctx.save_for_backward(*leaves)
            ctx.shapes = [x.shape for x in leaves]
            # An attribute, not saved: backward writes into it (a saved tensor changed in place
            # would make autograd refuse the second backward before it could fall back).
            ctx.partials = [d if needed else None for d, needed in zip(parts, ctx.needs_input_grad)]
            return value  # type: ignore[no-any-return]

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> Any:
            if torch.is_grad_enabled():  # create_graph=True: the second-order term would be missing
                raise double_backward_error(name, vjp_name)
            parts, ctx.partials = ctx.partials, None  # the gradients own them now
            if parts is None:  # a second backward: the vjp op
                got = vjp(*ctx.saved_tensors, grad)
                parts = [got] if len(ctx.shapes) == 1 else list(got)
                parts = [g if needed else None for g, needed in zip(parts, ctx.needs_input_grad)]
            else:
                parts = [None if d is None else d.mul_(grad) for d in parts]
            # The argument was broadcast: its gradient summed back to its shape.
            return tuple(g if g is None or g.shape == shape else g.sum_to_size(shape)
                         for g, shape in zip(parts, ctx.shapes))

    Function.__name__ = Function.__qualname__ = f"{name}_Partials"
    apply: Callable[..., Any] = Function.apply
    return apply


def forward_function(b: AutogradSpec, entry: Callable[..., Any], jvp: Callable[..., Any] | None = None
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
            return _flat_call(entry, spec, box, leaves)

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


def missing_vjp_function(b: AutogradSpec, entry: Callable[..., Any], jvp: Callable[..., Any] | None = None
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
            return _flat_call(entry, spec, box, leaves)

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


def jvp_rule(b: AutogradSpec, jvp: Callable[..., Any]) -> Callable[[Any, Sequence[Any]], tuple[Any, ...]]:
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


def vjp_function(b: AutogradSpec, vjp: Callable[..., Any]) -> Callable[..., Any]:
    """``vjp(*args, dret)`` for backward: the raw vjp entry itself in plain
    autograd, else (under torch.func, or where a tensor requires grad) a
    torch.autograd.Function over it with a vmap rule (torch.func.jacrev vmaps
    the backward) and a backward that raises: double backward is not supported."""
    name, vjp_name = b["name"], present(b["vjp"], "vjp")
    # The vjp's arguments are the binding's and dret, batched like its results.
    params = [*b["params"], ParamRecord(name="dret", batched=True)]
    return _derivative_function(b, vjp, vjp_name, params, lambda: double_backward_error(name, vjp_name))


def jvp_function(b: AutogradSpec, jvp: Callable[..., Any]) -> Callable[..., Any]:
    """``jvp(*args, *tangents)`` for a Function's jvp: as vjp_function's (torch.func.jacfwd vmaps
    it), and differentiating its result is the second-order error."""
    name, jvp_name = b["name"], b["jvp"]
    # The tangents are batched as their arguments are.
    params = [*b["params"], *(ParamRecord(name=t, batched=p["batched"]) for p, t in zip(b["params"], b["jvp_params"]))]
    return _derivative_function(b, jvp, jvp_name, params, lambda: second_order_error(name, jvp_name))


def _derivative_function(b: AutogradSpec, fn: Callable[..., Any], fn_name: str, params: Sequence[ParamRecord],
                         error: Callable[[], BaseException]) -> Callable[..., Any]:
    """fn itself where nothing may differentiate or batch its result, else a Function over it whose
    vmap rule is the binding's and whose derivatives raise ``error()``."""

    class DerivativeFunction(torch.autograd.Function):
        @staticmethod
        def forward(spec: Any, box: _Box, *leaves: torch.Tensor) -> Any:
            return _flat_call(fn, spec, box, _unwrap_dead(leaves))

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
