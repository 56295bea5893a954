"""Calling a binding's stable-ABI ops: arguments to the op's leaves (with the checks a kernel cannot
make), the op's errors as Python's, fake kernels, autograd and jvp registration, and the eager fast path.

Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch and nothing of
ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

import ctypes
import inspect
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import torch
import torch.autograd.forward_ad as forward_ad  # torch imports it itself
from torch._subclasses.fake_tensor import FakeTensor  # torch imports it itself

from .autograd import (
    _dual_level,
    _functorch_active,
    _functorch_wrapped,
    _needs_grad,
    _transform_under_compile,
    autograd_function,
    double_backward_error,
    forward_function,
    missing_vjp_function,
    partials_function,
    second_order_error,
)
from .contract import AutogradSpec, BindingRecord, LeafRecord, ParamRecord, ResultRecord, ValueLeaf, present
from .trees import _DTYPES, _join, _split
from .vmap import _fake_tensor, _op_vmap

#: torch leaves broadcast_shapes untyped.
_broadcast_shapes: Callable[..., torch.Size] = torch.broadcast_shapes


#: Per process, by nature (a loaded library is): each loaded op library's ``ksbind_take_type_error``
#: (ksbind/torch_stable.h), the text of the type error its kernels last raised on the calling thread.
#: torch raises a kernel's type error as RuntimeError (the stable ABI has no TypeError); this is the
#: error's type, recorded by the kernel, not read off its message.
_type_error_records: list[Callable[[], bytes | None]] = []


def read_type_errors(path: str) -> None:
    """Take the type errors of the op library at ``path`` (loaded already) from its record."""
    take = ctypes.CDLL(path).ksbind_take_type_error  # the same handle as torch's load (dlopen counts)
    take.restype = ctypes.c_char_p
    take.argtypes = []
    _type_error_records.append(take)


def _raised_as_type_error(text: str) -> bool:
    """Whether a kernel of this thread last raised ``text`` as a type error. Takes every library's
    record: one left by a call that never reached here (an op called directly) holds another text."""
    found = False
    for take in _type_error_records:
        taken = take()
        found = found or (taken is not None and taken.decode("utf-8", "replace") == text)
    return found


def _translated(error: Exception, binding: str) -> BaseException:
    """A kernel's error as its Python type, naming the binding (ksbind/torch_stable.h's
    messages start with the argument's name)."""
    text = str(error)
    named = f"{binding}(): {text}" if binding else text
    if isinstance(error, RuntimeError) and _raised_as_type_error(text):
        return TypeError(named)
    if text.startswith("argument '") and binding:
        return type(error)(named)
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


def _leaf_value(leaf: ValueLeaf, value: Any, binding: str, lists: str = "stack") -> Any:
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


def _flattener(binding: str, specs: Sequence[Any], leaves: Sequence[LeafRecord],
               lists: str = "stack") -> Callable[..., list[Any]]:
    """args -> the op's leaves, by each argument's spec ("leaf", "empty" or a list of parts);
    ``lists`` as _leaf_value's."""
    def walk(spec: Any, value: Any, where: str, out: list[Any], it: Iterator[LeafRecord]) -> None:
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

    if all(s == "leaf" for s in specs):  # one leaf per argument (numbers, tensors): no walk
        def leaf_args(args: Sequence[Any]) -> list[Any]:
            return [_leaf_value(x, a, binding, lists) for x, a in zip(leaves, args)]
        return leaf_args

    names = _names(leaves, specs)  # once: the same for every call

    def flatten(args: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        it = iter(leaves)
        for spec, value, x in zip(specs, args, names):
            walk(spec, value, x, out, it)
        return out

    return flatten


def _names(leaves: Sequence[LeafRecord], specs: Sequence[Any]) -> list[str]:
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


def _rebuild(tree: ResultRecord, out: Any) -> Any:
    """The op's result (a tensor, a tuple of them, or an empty list) re-nested by its tree."""
    return _nest(tree, iter((out,) if _count(tree) == 1 else tuple(out)))


def _nest(tree: ResultRecord, flat: Iterator[Any]) -> Any:
    # A module-level function, not a closure defined per call: a recursive closure is a
    # reference cycle, which would keep the result's tensors alive until the cyclic GC runs
    # (measured: a 1M-element result then costs fresh pages on every call, 0.06 -> 0.14 ms).
    if tree["kind"] == "leaf":
        return next(flat)
    if tree["kind"] == "empty":
        return ()
    return tuple(_nest(p, flat) for p in tree["parts"])


def _count(tree: ResultRecord) -> int:
    return 1 if tree["kind"] == "leaf" else sum(_count(p) for p in tree.get("parts", ()))


def _leaf_trees(tree: ResultRecord) -> list[ResultRecord]:
    if tree["kind"] == "leaf":
        return [tree]
    return [x for p in tree.get("parts", ()) for x in _leaf_trees(p)]


def _stable_fake(mode: str, leaves: Sequence[LeafRecord], tree: ResultRecord,
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


def _stable_function(library: str, ops: Any, b: BindingRecord, ragged: Callable[..., Any] | None = None,
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
    torch.library.register_vmap(f"{library}::{name}")(_op_vmap(mode, leaves, getattr(ops, name)))
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
            if partials is None or _dual_level() or _functorch_active():
                # (forward AD: through the Function whose jvp says, naming the binding, what it lacks)
                return func_transforms(*args) if has_vjp else missing_vjp(*args)
            run = partials  # elementwise: the value and its partials in one loop (partials_function)
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

    spec = autograd_spec(b)
    if jvp is not None:
        _register_stable_jvp(library, ops, b)
    func_transforms = (autograd_function(spec, call, _stable_vjp_function(ops, b), jvp) if has_vjp
                       else forward_function(spec, call, jvp))
    missing_vjp = missing_vjp_function(spec, call, jvp)
    partials = (partials_function(name, present(b["vjp"], "vjp"), getattr(ops, b["partials"]).default,
                                  getattr(ops, "_direct_" + present(b["vjp"], "vjp")).default)
                if "partials" in b else None)
    packs_nested = ragged is not None and _nested_result(present(b["ragged"], "packed ops")["result"])
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


def _ragged_router(b: BindingRecord, leaves: Sequence[LeafRecord], specs: Sequence[Any],
                   result: Literal["result", "vjp_result"],
                   tensor_leaves: Sequence[int],
                   ragged: Callable[..., Any] | None) -> Callable[[Sequence[Any]], list[Any] | None] | None:
    """For a binding with packed ops beside its ops (``ragged``): args -> the op's leaves, or None
    where the call takes the packed op instead. Eager calls do so for a list given for a tensor
    of tensors (taken as it is: ragged or not, no stacking copy) and whenever the result holds a
    tensor of tensors (a list when its rows differ in shape, as the torch target returns it). A
    trace (torch.compile, torch.export: FakeTensors) takes the op, whose schema stacks them."""
    if ragged is None:
        return None
    name = b["name"] if result == "result" else present(b["vjp"], "vjp")
    listing = _flattener(name, specs, leaves, "packed")
    stacking = _flattener(name, specs, leaves)
    nested = _nested_result(present(b["ragged"], "packed ops")[result])
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


def _fast_path(b: BindingRecord, direct: Any, direct_eager: Callable[..., Any], general: Callable[..., Any],
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


def autograd_spec(b: BindingRecord) -> AutogradSpec:
    """The binding as autograd_function, forward_function and vmap_rule read one: each argument
    batched (vmap mode) when its one leaf is."""
    it = iter(b["leaves"])
    params: list[ParamRecord] = []
    for p, spec in zip(b["params"], b["spec"]):
        batched = False
        if spec == "leaf":
            batched = bool(next(it)["batched"])
        else:
            for _ in _spec_leaves(spec):
                next(it)
        params.append(ParamRecord(name=p, batched=batched))
    out = AutogradSpec(name=b["name"], vjp=b["vjp"], mode=b["mode"], params=params)
    if b.get("jvp"):
        out["jvp"], out["jvp_spec"], out["jvp_params"] = b["jvp"], b["jvp_spec"], b["jvp_params"]
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


def _failure(name: str, leaves: Sequence[LeafRecord], flat: Sequence[Any], error: Exception) -> BaseException:
    """What a failed op call raises: a tensor argument no CPU kernel takes, named (the dispatcher's
    NotImplementedError, or a meta tensor's fake-kernel error), else the kernel's error translated."""
    refused = _refused(name, leaves, flat, error)
    return refused if refused is not error else _translated(error, name)


def _refused(name: str, leaves: Sequence[LeafRecord], flat: Sequence[Any], error: BaseException) -> BaseException:
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


def _register_stable_autograd(library: str, ops: Any, b: BindingRecord) -> None:
    """Autograd for a binding's op from its vjp op; the vjp op's own says double backward is
    not supported."""
    name, vjp_name, mode, leaves = b["name"], present(b["vjp"], "vjp"), b["mode"], b["leaves"]
    vjp_result = present(b["vjp_result"], "vjp result")
    vjp_op, vjp_direct = getattr(ops, vjp_name).default, getattr(ops, "_direct_" + vjp_name).default
    float_leaves = [i for i, x in enumerate(leaves) if x["float"] and x["kind"] in _TENSOR_LEAVES]
    result_floats = [p["dtype"] == "float32" for p in _leaf_trees(b["result"])]
    vjp_leaves = b["vjp_leaves"]
    like = None if mode == "elementwise" else float_leaves
    for qualname in (vjp_name, "_direct_" + vjp_name):
        torch.library.register_fake(f"{library}::{qualname}")(
            _stable_fake(mode, vjp_leaves, vjp_result, like))
    torch.library.register_vmap(f"{library}::{vjp_name}")(
        _op_vmap(mode, vjp_leaves, getattr(ops, vjp_name)))

    def vjp_backward(ctx: Any, *grads: Any) -> Any:
        raise double_backward_error(name, vjp_name)

    torch.library.register_autograd(f"{library}::{vjp_name}", vjp_backward)
    n_grads = _count(vjp_result)

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


def _register_stable_jvp(library: str, ops: Any, b: BindingRecord) -> None:
    """The jvp op's fake kernel and batching rule, and its autograd: the second-order error."""
    name, mode, leaves = b["jvp"], b["mode"], b["jvp_leaves"]
    for qualname in (name, "_direct_" + name):
        torch.library.register_fake(f"{library}::{qualname}")(_stable_fake(mode, leaves, b["jvp_result"]))
    torch.library.register_vmap(f"{library}::{name}")(_op_vmap(mode, leaves, getattr(ops, name)))

    def jvp_backward(ctx: Any, *grads: Any) -> Any:
        raise second_order_error(b["name"], name)

    torch.library.register_autograd(f"{library}::{name}", jvp_backward)


def _stable_jvp_function(ops: Any, b: BindingRecord) -> Callable[..., Any]:
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


def _stable_vjp_function(ops: Any, b: BindingRecord, ragged: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A binding's vjp as a function: its arguments and dret to the vjp op, the gradients
    re-nested; ``ragged``: its packed call, taken as _ragged_router says."""
    name = present(b["vjp"], "vjp")
    direct = getattr(ops, "_direct_" + name).default
    params = [*b["params"], "dret"]
    vjp_leaves = b["vjp_leaves"]
    flatten = _flattener(name, b["vjp_spec"], vjp_leaves)
    tree = present(b["vjp_result"], "vjp result")
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
