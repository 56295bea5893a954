"""What a generated jax-target wrapper (``NAME.py``) runs: it loads the
module's handler library with ctypes, registers each handler with
``jax.ffi`` and puts one JAX function per binding (and per vjp) in the
wrapper's namespace, with the allocator functions every module has.

Part of ksbind/targets/jax/runtime/ (its ``__init__`` says what the package is).
Imports jax, numpy and the standard library, nothing of ksbind's but this package.

Each binding's function (see docs/jax.md for the rules):
- checks its arguments at trace time: every array must have its ks type's
  dtype and rank (Python numbers are taken for scalars), no cast;
- finds its result's shapes at trace time: from the type (scalars), the
  broadcast shape (elementwise), the binding's ``result_shape`` expression, or
  by calling the compiled function once on ones of the traced shapes (the
  probe), cached per shape signature;
- calls the handler through ``jax.ffi.ffi_call``, under ``jax.custom_vjp``
  whose backward calls the vjp's handler (float0 cotangents for Integer and
  Bool parts); or, for a binding with a jvp, under ``jax.custom_jvp`` whose
  tangent is ``_lin_p``, a linear primitive calling the jvp's handler and
  transposed to the vjp's (forward and reverse mode, docs/jax.md).
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import logging as _logging
import os
import sys
import threading
import types
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad, batching, mlir

from .contract import JaxBindingRecord, JaxParamRecord, Tree

Shape = tuple[int, ...]

def _shared_registry() -> types.ModuleType:
    """Each FFI target name registered in this process -> the library it is from (``targets``),
    with its ``lock``. XLA's FFI targets are process-wide and ``jax.ffi.register_ffi_target`` takes
    a name again for another handler without a word, so every copy of this runtime in the process
    (ksbind's, and each wheel's beside its module) shares this one table, kept in ``sys.modules``."""
    fresh = types.ModuleType(_REGISTRY, "ksbind's FFI target names registered in this process (ksbind's jax runtime)")
    fresh.targets = {}  # type: ignore[attr-defined]
    fresh.lock = threading.Lock()  # type: ignore[attr-defined]
    return sys.modules.setdefault(_REGISTRY, fresh)


_REGISTRY = "_ksbind_jax_ffi_targets"
_registry = _shared_registry()
#: Each FFI target name registered in this process -> the library it is from.
_registered: dict[str, str] = _registry.targets
_register_lock: threading.Lock = _registry.lock
_log = _logging.getLogger("ksbind")
_ERR_BYTES = 4096
#: How each mode's handler is batched under jax.vmap: the plain handler by a
#: loop (a scan), the others natively (the handlers take leading batch axes).
VMAP_METHODS = {"plain": "sequential", "vmap": "broadcast_all", "elementwise": "broadcast_all"}


# ------------------------------------------------------------ pytrees of leaves

def leaves_of(t: Tree) -> list[Tree]:
    if t["kind"] == "leaf":
        return [t]
    if t["kind"] == "tuple":
        return [leaf for p in t["parts"] for leaf in leaves_of(p)]
    return []


def unflatten(t: Tree, values: Sequence[Any]) -> Any:
    it = iter(values)

    def build(node: Tree) -> Any:
        if node["kind"] == "leaf":
            return next(it)
        if node["kind"] == "tuple":
            return tuple(build(p) for p in node["parts"])
        return ()
    return build(t)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4))
def _ffi_call(why: str, target: str, out: tuple[tuple[Shape, str], ...], vmap_method: str, side_effect: bool,
              *leaves: Any) -> tuple[Any, ...]:
    """One FFI call, under a custom_jvp whose rule raises ``why``: differentiating an FFI call,
    which only a trace in forward mode or a second derivative does (the first reverse-mode
    derivative goes through custom_vjp's rules), would otherwise be JAX's "The FFI call to
    `ksbind.MODULE_jaxffi_HASH.TARGET` cannot be differentiated", naming no binding."""
    out_types = [jax.ShapeDtypeStruct(s, d) for s, d in out]  # type: ignore[no-untyped-call]
    call = jax.ffi.ffi_call(target, out_types, vmap_method=vmap_method, has_side_effect=side_effect)
    return tuple(call(*leaves))


@_ffi_call.defjvp
def _ffi_call_jvp(why: str, target: str, out: tuple[tuple[Shape, str], ...], vmap_method: str, side_effect: bool,
                  primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    raise TypeError(why)


def _vma(x: Any) -> frozenset[str]:
    """The mesh axes x varies over inside shard_map (empty outside it, or for a NumPy array)."""
    if not isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        return frozenset()
    return _aval_vma(jax.typeof(x))


def _aval_vma(aval: Any) -> frozenset[str]:
    """The mesh axes a value of this abstract type varies over."""
    vma = getattr(aval, "vma", None)  # JAX before 0.10; since, the aval's manual axis type
    if vma is None:
        vma = getattr(getattr(aval, "mat", None), "varying", ())
    return frozenset(vma or ())


def _to_vma(x: Any, want: frozenset[str]) -> Any:
    """x varying over exactly ``want``'s axes, as custom_vjp requires of a gradient against its
    argument (an FFI call's results vary over none): made varying over the axes it lacks, and
    summed over the axes its argument does not vary over (an argument the same on every shard,
    whose gradient is the sum of the shards', the transpose of shard_map's own broadcast)."""
    have = _vma(x)
    missing, extra = tuple(sorted(want - have)), tuple(sorted(have - want))
    if missing:
        x = jax.lax.pcast(x, missing, to="varying")
    if extra:
        x = jax.lax.psum(x, extra)  # type: ignore[no-untyped-call]
    return x


def _match_vma(grads: Any, values: Any) -> Any:
    """Each gradient leaf varying as its argument's leaf does (float0 leaves as they are)."""
    def match(g: Any, v: Any) -> Any:
        if getattr(g, "dtype", None) == jax.dtypes.float0:
            return g
        return _to_vma(g, _vma(v))
    return jax.tree_util.tree_map(match, grads, values)


def _weak_scalar(value: Any, dtype: str) -> bool:
    """A weakly typed array (a Python number under jit) of the same kind as ``dtype``."""
    aval = getattr(value, "aval", None)
    return bool(getattr(aval, "weak_type", False)) and np.dtype(value.dtype).kind == np.dtype(dtype).kind


class _Traced:
    """A scalar argument whose value is not known when tracing, in a result_shape expression."""

    def __init__(self, binding: str, name: str) -> None:
        self.binding, self.name = binding, name

    def _fail(self, *args: Any) -> Any:
        raise TypeError(f"binding {self.binding!r}: result_shape uses argument {self.name!r}, whose value is not "
                        f"known when tracing (under jax.jit: make it static, e.g. "
                        f"jax.jit(f, static_argnames=...), or give result_shape in terms of shapes)")

    __index__ = __int__ = __float__ = __bool__ = __add__ = __radd__ = __mul__ = __rmul__ = _fail
    __sub__ = __rsub__ = __floordiv__ = __rfloordiv__ = _fail


class Binding:
    """One binding's JAX function, its vjp's and how their shapes are found."""

    def __init__(self, info: JaxBindingRecord, lib: ctypes.CDLL, names: dict[str, str]) -> None:
        self.info = info
        self.name: str = info["name"]
        self.mode: str = info["mode"]
        self.params: list[JaxParamRecord] = info["params"]
        self.result: Tree = info["result"]
        self.result_leaves = leaves_of(self.result)
        self.target = names[info["handler"]]
        self.vjp_target = names[info["vjp_handler"]] if info["vjp_handler"] else None
        jac = info.get("jacobian_handler")
        self.jacobian_target = names[jac] if jac else None
        jvp_handler = info.get("jvp_handler")
        self.jvp_target = names[jvp_handler] if jvp_handler else None
        self.probe_fn: Callable[..., int] | None = None
        if info["probe"]:
            fn = getattr(lib, info["probe"])
            fn.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p,
                           ctypes.c_size_t]
            fn.restype = ctypes.c_int
            self.probe_fn = fn
        self._shapes: dict[tuple[Shape, ...], list[Shape]] = {}
        self._shapes_lock = threading.Lock()
        self._given = threading.local()
        # One sentence for forward mode and second derivatives: grad of grad reaches the primal's
        # FFI call too (the outer derivative differentiates custom_vjp's forward rule in forward mode).
        if self.jvp_target is None:
            self.no_second_derivative = (
                f"binding {self.name!r} cannot be differentiated in forward mode or twice: a jax binding has one "
                f"derivative, reverse mode through its vjp (jax.grad, vjp, jacrev); forward mode (jax.jvp, jacfwd, "
                f"linearize) needs a jvp (give the binding jvp: in its config), and second derivatives (grad of "
                f"grad, hessian) are not available (ksc derives no nested derivatives)")
        else:  # forward mode through the jvp: only a second derivative reaches an FFI call's rule
            self.no_second_derivative = (
                f"binding {self.name!r} cannot be differentiated twice: a jax binding has first derivatives "
                f"only, forward mode through its jvp (jax.jvp, jacfwd, linearize)"
                f"{' and reverse mode through its vjp (jax.grad, vjp, jacrev)' if self.vjp_target else ''}; "
                f"second derivatives (hessian, jacfwd of jacrev, grad of grad or of a jvp) are not available "
                f"(ksc derives no nested derivatives)")
        self.call = self._make_call()

    # -------------------------------------------------------- arguments

    def _leaf(self, value: Any, leaf: Tree, where: str, ks: str, batched: bool) -> Any:
        dtype = leaf["dtype"]
        rank = leaf["rank"] + (1 if batched else 0)
        if isinstance(value, (bool, int, float)) and rank == 0:
            ok = {"float32": not isinstance(value, bool),
                  "int32": isinstance(value, int) and not isinstance(value, bool),
                  "bool": isinstance(value, bool)}[dtype]
            if ok:
                return jnp.asarray(value, dtype=dtype)
            raise TypeError(f"{self.name}: argument {where} (ks {ks}) must be a {dtype} number or 0-dim array, "
                            f"got {type(value).__name__} {value!r}")
        got_dtype = getattr(value, "dtype", None)
        shape = getattr(value, "shape", None)
        if got_dtype is None or shape is None:
            raise TypeError(f"{self.name}: argument {where} (ks {ks}) must be a {dtype} array of rank {rank}, "
                            f"got {type(value).__name__}")
        if np.dtype(got_dtype) != np.dtype(dtype) and rank == 0 and _weak_scalar(value, dtype):
            # A Python number that jit made an array: under jax_enable_x64 an int is a weakly typed
            # int64 (a float, float64), which eagerly was accepted as the number it is. Its value is
            # not known here; jax's own rule for weak types applies (an int32 wraps, as jnp's do).
            return value.astype(dtype)
        if np.dtype(got_dtype) != np.dtype(dtype):
            raise TypeError(f"{self.name}: argument {where} (ks {ks}) must be a {dtype} array, got {got_dtype} "
                            f"(no implicit cast: convert it with .astype(jnp.{dtype}))")
        if len(shape) != rank:
            raise TypeError(f"{self.name}: argument {where} (ks {ks}) must be a {dtype} array of rank {rank}"
                            f"{' (a leading batch axis, mode vmap)' if batched else ''}, got shape {tuple(shape)}")
        return value if isinstance(value, jax.Array) else jnp.asarray(value)

    def _flatten(self, value: Any, t: Tree, where: str, ks: str, batched: bool, out: list[Any]) -> None:
        if t["kind"] == "leaf":
            out.append(self._leaf(value, t, where, ks, batched))
        elif t["kind"] == "tuple":
            parts = t["parts"]
            if not isinstance(value, (tuple, list)) or len(value) != len(parts):
                raise TypeError(f"{self.name}: argument {where} (ks {ks}) must be a tuple of {len(parts)}, "
                                f"got {type(value).__name__}")
            for i, (v, p) in enumerate(zip(value, parts)):
                self._flatten(v, p, f"{where}[{i}]", ks, batched, out)
        elif value not in ((), None) and not (isinstance(value, (tuple, list))
                                              and not jax.tree_util.tree_leaves(value)):
            raise TypeError(f"{self.name}: argument {where} (ks {ks}) holds no number (a tangent of discrete "
                            f"values): pass ()")

    def check(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The arguments as pytrees of arrays of the right dtypes (Python numbers made arrays)."""
        names = [p["name"] for p in self.params]
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
        values = list(args) + [None] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{self.name}() got an unexpected keyword argument {k!r}")
            i = names.index(k)
            if i < len(args):
                raise TypeError(f"{self.name}() got multiple values for argument {k!r}")
            values[i] = v
        out: list[Any] = []
        for p, v in zip(self.params, values):
            if v is None and p["tree"]["kind"] != "empty":
                raise TypeError(f"{self.name}() missing argument {p['name']!r}")
            leaves: list[Any] = []
            if self.mode == "elementwise":
                leaves.append(self._elementwise_arg(v, p["name"]))
            else:
                self._flatten(v, p["tree"], repr(p["name"]), p["ks"], p["batched"], leaves)
            out.append(unflatten(p["tree"], leaves) if self.mode != "elementwise" else leaves[0])
        if self.mode == "vmap":
            sizes = {p["name"]: jnp.shape(v)[0] for p, v in zip(self.params, out) if p["batched"]}
            if len(set(sizes.values())) > 1:
                raise ValueError(f"{self.name}: mode vmap maps over the leading axis, and the batched arguments' "
                                 f"leading sizes differ: {sizes}")
        return out

    def _elementwise_arg(self, value: Any, name: str) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return jnp.asarray(value, dtype=jnp.float32)
        dtype = getattr(value, "dtype", None)
        if dtype is None or np.dtype(dtype) != np.float32:
            raise TypeError(f"{self.name}: argument {name!r} (mode elementwise, ks Float) must be a float32 array "
                            f"or a number, got {dtype if dtype is not None else type(value).__name__} "
                            f"(no implicit cast)")
        return value

    # -------------------------------------------------------- shapes

    def result_shapes(self, leaves: Sequence[Any], values: Sequence[Any]) -> list[Shape]:
        """Each result leaf's shape, for the traced argument leaves (``values``: the arguments)."""
        if self.mode == "elementwise":
            shape = jnp.broadcast_shapes(*(jnp.shape(x) for x in leaves))
            return [shape for _ in self.result_leaves]
        batch: Shape = ()
        step = [tuple(jnp.shape(x)) for x in leaves]
        if self.mode == "vmap":
            flat_batched = [p["batched"] for p in self.params for _ in leaves_of(p["tree"])]
            for i, b in enumerate(flat_batched):
                if b:
                    batch = step[i][:1]
                    step[i] = step[i][1:]
        if all(leaf["rank"] == 0 for leaf in self.result_leaves):
            shapes: list[Shape] = [() for _ in self.result_leaves]
        elif self.info["result_shape"] is not None:
            shapes = self._expression_shapes(values)
        else:
            shapes = self._probed_shapes(tuple(step))
        return [batch + s for s in shapes]

    def _scalar_values(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The scalar arguments' values where they are known (not traced)."""
        given = dict(zip((p["name"] for p in self.params), args), **kwargs)
        out: dict[str, Any] = {}
        for p in self.params:
            if p["tree"]["kind"] == "leaf" and p["tree"]["rank"] == 0 and not p["batched"]:
                try:
                    out[p["name"]] = np.asarray(given.get(p["name"])).item()
                except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError, TypeError):
                    out[p["name"]] = _Traced(self.name, p["name"])
        return out

    def _expression_shapes(self, values: Sequence[Any]) -> list[Shape]:
        known = getattr(self._given, "values", None) or {}
        env: dict[str, Any] = {}
        for p, v in zip(self.params, values):
            if p["tree"]["kind"] == "leaf" and p["tree"]["rank"] == 0 and not p["batched"]:
                env[p["name"]] = known.get(p["name"], _Traced(self.name, p["name"]))
            else:
                env[p["name"]] = jax.tree_util.tree_map(lambda x: tuple(jnp.shape(x)), v)
        expr = self.info["result_shape"]
        assert expr is not None  # the caller's binding has one
        try:
            value = eval(expr, {"__builtins__": {"len": len, "min": min, "max": max, "sum": sum}}, env)  # noqa: S307
        except TypeError:
            raise
        except Exception as e:  # the user's expression: say which and why
            raise ValueError(f"binding {self.name!r}: result_shape {expr!r} failed: {type(e).__name__}: {e}") from None
        parts = [value] if self.result["kind"] == "leaf" else None
        if parts is None:
            flat: list[Any] = []

            def walk(node: Tree, v: Any) -> None:
                if node["kind"] == "leaf":
                    flat.append(v)
                elif node["kind"] == "tuple":
                    if not isinstance(v, (tuple, list)) or len(v) != len(node["parts"]):
                        raise ValueError(f"binding {self.name!r}: result_shape {expr!r} gave {value!r}; the result "
                                         f"is a tuple of {len(node['parts'])}: give one shape per part")
                    for p, x in zip(node["parts"], v):
                        walk(p, x)
            walk(self.result, value)
            parts = flat
        shapes = []
        for leaf, s in zip(self.result_leaves, parts):
            if isinstance(s, int):
                s = (s,)
            if not isinstance(s, (tuple, list)) or len(s) != leaf["rank"] or \
                    not all(isinstance(d, (int, np.integer)) and d >= 0 for d in s):
                raise ValueError(f"binding {self.name!r}: result_shape {expr!r} gave {s!r} for a rank-"
                                 f"{leaf['rank']} result: expected {leaf['rank']} sizes")
            shapes.append(tuple(int(d) for d in s))
        return shapes

    def _probed_shapes(self, step: tuple[Shape, ...]) -> list[Shape]:
        with self._shapes_lock:
            found = self._shapes.get(step)
        if found is not None:
            return found
        assert self.probe_fn is not None
        flat_in = [d for s in step for d in s]
        symbolic = next((d for d in flat_in if not isinstance(d, (int, np.integer))), None)
        if symbolic is not None:
            raise ValueError(f"binding {self.name!r}: its result's shape is found by calling it on ones of the "
                             f"arguments' shapes, which needs concrete sizes, and a shape-polymorphic trace "
                             f"(jax.export with symbolic shapes) has the dimension {symbolic}; give the binding "
                             f"result_shape: in its config (an expression over the arguments' shapes, "
                             f"docs/jax.md), or export with concrete shapes")
        in_dims = (ctypes.c_int64 * max(1, len(flat_in)))(*flat_in)
        n_out = sum(leaf["rank"] for leaf in self.result_leaves)
        out_dims = (ctypes.c_int64 * max(1, n_out))()
        err = ctypes.create_string_buffer(_ERR_BYTES)
        if self.probe_fn(in_dims, out_dims, err, _ERR_BYTES):
            raise ValueError(err.value.decode("utf-8", "replace") + "; if the result's shape depends on argument "
                             "values, give the binding result_shape: in its config (docs/jax.md)")
        shapes, k = [], 0
        for leaf in self.result_leaves:
            shapes.append(tuple(int(out_dims[k + i]) for i in range(leaf["rank"])))
            k += leaf["rank"]
        with self._shapes_lock:
            self._shapes[step] = shapes
        return shapes

    # -------------------------------------------------------- calls

    def _ffi(self, target: str, leaves: Sequence[Any], shapes: Sequence[Shape], dtypes: Sequence[Any]) -> list[Any]:
        if not shapes:
            return []
        why = self.no_second_derivative
        out = tuple((tuple(s), str(np.dtype(d))) for s, d in zip(shapes, dtypes))  # dims may be symbolic
        empty = any(0 in s for s in shapes)
        if not any(isinstance(x, jax.core.Tracer) for x in leaves):
            # Eager, nothing to differentiate: the FFI call itself (the custom_jvp costs about
            # 140 us an eager call; under jit it costs only at trace time).
            return list(_ffi_call.fun(why, target, out, VMAP_METHODS[self.mode], empty, *leaves))
        results = _ffi_call(why, target, out, VMAP_METHODS[self.mode], empty, *leaves)
        # Inside shard_map: each result varies over the mesh axes any argument varies over (an FFI
        # call's results carry none of their own), so a gradient is typed as what it is.
        varying = frozenset().union(*(_vma(x) for x in leaves))
        return [_to_vma(r, varying) for r in results] if varying else list(results)

    def _arg_leaves(self, values: Sequence[Any]) -> list[Any]:
        if self.mode == "elementwise":
            return list(jnp.broadcast_arrays(*values))
        return [x for v in values for x in jax.tree_util.tree_leaves(v)]

    def forward(self, *values: Any) -> Any:
        leaves = self._arg_leaves(values)
        shapes = self.result_shapes(leaves, values)
        outs = self._ffi(self.target, leaves, shapes, [leaf["dtype"] for leaf in self.result_leaves])
        return unflatten(self.result, outs)

    def backward(self, values: Sequence[Any], g: Any) -> tuple[Any, ...]:
        assert self.vjp_target is not None
        # dret: the cotangent's float leaves (Integer and Bool parts have none in ks).
        g_leaves = _float_parts(self.result, g)
        leaves = self._arg_leaves(values)
        if self.mode == "elementwise":
            shape = jnp.broadcast_shapes(*(jnp.shape(x) for x in leaves))
            gl = [jnp.broadcast_to(x, shape) for x in g_leaves]
            grads = self._ffi(self.vjp_target, [*leaves, *gl], [shape] * len(leaves), ["float32"] * len(leaves))
            return tuple(_unbroadcast(d, jnp.shape(v)) for d, v in zip(grads, values))
        float_leaves = [x for x in leaves if np.dtype(x.dtype) == np.float32]
        grads_it = iter(self._ffi(self.vjp_target, [*leaves, *g_leaves], [tuple(jnp.shape(x)) for x in float_leaves],
                               ["float32"] * len(float_leaves)))
        out = []
        for p, v in zip(self.params, values):
            parts = [next(grads_it) if np.dtype(x.dtype) == np.float32 else
                     np.zeros(jnp.shape(x), dtype=jax.dtypes.float0) for x in jax.tree_util.tree_leaves(v)]
            out.append(unflatten(p["tree"], parts))
        return tuple(out)

    def vjp_call(self, *args: Any, **kwargs: Any) -> Any:
        """The vjp binding itself: ``name_vjp(*args, dret)``, gradients in the arguments' layout."""
        dret = kwargs.pop("dret") if "dret" in kwargs else (args[-1] if len(args) > len(self.params) else None)
        if "dret" not in kwargs and len(args) > len(self.params):
            args = args[:-1]
        values = self.check(args, kwargs)
        if dret is None and any(leaf["dtype"] == "float32" for leaf in self.result_leaves):
            raise TypeError(f"{self.name}_vjp() missing argument 'dret'")
        d_leaves: list[Any] = []
        tangent = _tangent_tree(self.result)
        if self.mode == "elementwise":
            d_leaves = [self._elementwise_arg(dret, "dret")]
        else:
            self._flatten(dret if dret is not None else (), tangent, "'dret'", "the result's tangent",
                          self.mode == "vmap", d_leaves)
        grads = self.backward(values, unflatten(tangent, d_leaves) if self.mode != "elementwise" else d_leaves[0])
        return grads[0] if len(grads) == 1 else grads

    # -------------------------------------------------------- forward mode (a jvp)

    def _float_tangents(self, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """The argument leaves the handlers take (broadcast, elementwise), and the tangents of
        the Float ones (float0 tangents of Integer and Bool leaves have no buffer in ks)."""
        leaves = self._arg_leaves(primals)
        if self.mode == "elementwise":
            shape = jnp.shape(leaves[0])
            return leaves, [jnp.broadcast_to(t, shape) for t in tangents]  # transposed by a sum
        t_all = [t for v in tangents for t in jax.tree_util.tree_leaves(v)]
        return leaves, [t for x, t in zip(leaves, t_all) if np.dtype(x.dtype) == np.float32]

    def tangent(self, primals: Sequence[Any], tangents: Sequence[Any], out: Any) -> Any:
        """The result's tangent (a pytree like ``out``: float0 for its Integer and Bool parts):
        ``_lin_p`` of the arguments and their tangents, linear in the tangents."""
        leaves, t_leaves = self._float_tangents(primals, tangents)
        out_leaves = jax.tree_util.tree_leaves(out)
        floats = tuple((tuple(jnp.shape(o)), "float32") for o in out_leaves if np.dtype(o.dtype) == np.float32)
        if floats and t_leaves:
            touts = iter(_lin_bind(*leaves, *t_leaves, binding=self, n_primal=len(leaves), nbatch=0, out=floats))
        else:  # nothing to differentiate (no Float argument or result)
            touts = iter([jnp.zeros(s, jnp.float32) for s, _ in floats])
        parts = [_to_vma(next(touts), _vma(o)) if np.dtype(o.dtype) == np.float32 else
                 np.zeros(jnp.shape(o), dtype=jax.dtypes.float0) for o in out_leaves]
        return unflatten(self.result, parts)

    def jvp_leaves(self, primals: Sequence[Any], tangents: Sequence[Any],
                   out: Sequence[tuple[Shape, str]]) -> list[Any]:
        """The jvp's handler: the result's Float leaves' tangents (one call, unbatched shapes)."""
        assert self.jvp_target is not None
        return self._ffi(self.jvp_target, [*primals, *tangents], [s for s, _ in out], [d for _, d in out])

    def transpose(self, primals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        """The jvp's transpose, the vjp: each Float argument leaf's cotangent, given the result's
        Float leaves' (the shapes of one unbatched call)."""
        if self.vjp_target is None:
            raise TypeError(
                f"binding {self.name!r} has a jvp but no vjp; give it vjp: in its config for reverse mode (jax.grad, "
                f"jax.vjp, jacrev, the transpose of jax.linearize): JAX derives reverse mode by transposing the "
                f"forward one, and a jvp's compiled call cannot be transposed")
        if self.jacobian_target is not None:  # elementwise: g * each argument's derivative, fused by XLA
            shape = tuple(jnp.shape(primals[0]))
            jac = self._ffi(self.jacobian_target, primals, [shape] * len(primals), ["float32"] * len(primals))
            return [cts[0] * d for d in jac]
        floats = [x for x in primals if np.dtype(x.dtype) == np.float32]
        return self._ffi(self.vjp_target, [*primals, *cts], [tuple(jnp.shape(x)) for x in floats],
                         ["float32"] * len(floats))

    def jvp_call(self, *args: Any, **kwargs: Any) -> Any:
        """The jvp binding itself: ``name_jvp(*args, *tangents)``, the result's tangent."""
        n = len(self.params)
        names = [p["name"] for p in self.params]
        t_names = list(self.info["jvp_params"])
        if len(args) > 2 * n:
            raise TypeError(f"{self.jvp_name}() takes {2 * n} arguments ({', '.join(names + t_names)}), got "
                            f"{len(args)}")
        slots: list[Any] = list(args) + [None] * (2 * n - len(args))
        for k, v in kwargs.items():
            if k not in names + t_names:
                raise TypeError(f"{self.jvp_name}() got an unexpected keyword argument {k!r}")
            i = (names + t_names).index(k)
            if i < len(args):
                raise TypeError(f"{self.jvp_name}() got multiple values for argument {k!r}")
            slots[i] = v
        given, tangents = slots[:n], slots[n:]
        for p, t, x in zip(self.params, tangents, t_names):
            if t is None and _tangent_tree(p["tree"])["kind"] != "empty":
                raise TypeError(f"{self.jvp_name}() missing argument {x!r}")
        values = self.check(given, {})
        if self.mode == "elementwise":
            t_values = [self._elementwise_arg(t, x) for t, x in zip(tangents, t_names)]
        else:
            t_values = []
            for p, t, x in zip(self.params, tangents, t_names):
                tree = _tangent_tree(p["tree"])
                leaves: list[Any] = []
                self._flatten(t if t is not None else (), tree, repr(x), f"tangent of {p['ks']}", p["batched"],
                              leaves)
                t_values.append(unflatten(tree, leaves))
        leaves, t_leaves = self._float_tangents(values, t_values)
        shapes = self.result_shapes(leaves, values)
        out = tuple((s, "float32") for s, leaf in zip(shapes, self.result_leaves) if leaf["dtype"] == "float32")
        return unflatten(_tangent_tree(self.result), self.jvp_leaves(leaves, t_leaves, out))

    @property
    def jvp_name(self) -> str:
        return str(self.info.get("jvp") or f"{self.name}_jvp")

    def _make_jvp_fn(self) -> Callable[..., Any]:
        """custom_jvp: the tangent through the jvp's handler (``_lin_p``), reverse mode by its transpose."""
        fn = jax.custom_jvp(self.forward)

        def rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            out = self.forward(*primals)
            return out, self.tangent(primals, tangents, out)

        fn.defjvp(rule)
        return fn

    def _make_call(self) -> Callable[..., Any]:
        if self.jvp_target is not None:
            return self._wrap(self._make_jvp_fn())
        fwd_fn = jax.custom_vjp(self.forward)
        name = self.name

        def fwd(*values: Any) -> tuple[Any, tuple[Any, ...]]:
            if self.jacobian_target is not None:
                # Elementwise: the derivatives as residuals, from their own call (the
                # forward's, separate, is dropped by XLA when only the gradient is used).
                leaves = self._arg_leaves(values)
                shape = jnp.broadcast_shapes(*(jnp.shape(x) for x in leaves))
                jac = self._ffi(self.jacobian_target, leaves, [shape] * len(leaves), ["float32"] * len(leaves))
                # the arguments too (free under jit): their shard_map types, for the gradients'
                return self.forward(*values), (tuple(jac), tuple(jnp.shape(v) for v in values), values)
            return self.forward(*values), values

        def bwd(values: tuple[Any, ...], g: Any) -> tuple[Any, ...]:
            if self.jacobian_target is not None:
                jac, shapes, args = values
                # One fused XLA loop: a broadcast cotangent is never materialized.
                return tuple(_to_vma(_unbroadcast(g * d, s), _vma(a)) for d, s, a in zip(jac, shapes, args))
            if self.vjp_target is None:
                raise TypeError(f"binding {name!r} has no vjp: give it one (vjp: in its config entry) to "
                                f"differentiate it")
            return tuple(_match_vma(self.backward(values, g), values))

        fwd_fn.defvjp(fwd, bwd)
        return self._wrap(fwd_fn)

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The binding's function: checks its arguments, then calls ``fn`` (eagerly, with nothing
        to differentiate, a binding with a jvp calls its forward directly: custom_jvp costs)."""
        name = self.name
        direct = self.jvp_target is not None

        def call(*args: Any, **kwargs: Any) -> Any:
            checked = self.check(args, kwargs)
            # custom_vjp traces its function: the values of the scalars a result_shape
            # expression reads are taken here, before (static under jit, or eager).
            shaped = self.info["result_shape"] is not None
            if shaped:
                self._given.values = self._scalar_values(args, kwargs)
            try:
                if direct and not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(checked)):
                    return self.forward(*checked)
                return fn(*checked)
            except TypeError as e:
                # jax.jvp of the binding itself: JAX's sentence names no binding.
                if "forward-mode autodiff (jvp) to a custom_vjp function" in str(e):
                    raise TypeError(self.no_second_derivative) from None
                raise
            finally:
                if shaped:
                    self._given.values = None

        call.__name__ = call.__qualname__ = name
        call.__doc__ = f"{self.info['signature']} (ks {self.info['ks_name']}, mode {self.mode})"
        return call


# ------------------------------------------------------------ the jvp's linear primitive

#: ``_lin_p(*args, *tangents)``: a binding's jvp, linear in the tangents (the Float argument
#: leaves'), so that JAX can transpose it: its transpose is the binding's vjp (``Binding.transpose``).
#: It is how one function has both a custom forward and a custom reverse derivative: custom_vjp takes
#: no jvp, and custom_jvp's tangent is transposed by JAX, which cannot transpose an FFI call. Params:
#: ``binding``; ``n_primal``, how many of the operands are argument leaves; ``nbatch``, leading batch
#: axes (jax.vmap) on every operand; ``out``, the result tangent leaves' unbatched (shape, dtype).
_lin_p = jax.extend.core.Primitive("ksbind_jax_jvp")
_lin_p.multiple_results = True
# JAX's internals, typed here once (mypy --strict: they are not annotated).
_lin_bind: Callable[..., list[Any]] = _lin_p.bind
_instantiate_zeros: Callable[[Any], Any] = ad.instantiate_zeros
_is_undefined_primal: Callable[[Any], bool] = ad.is_undefined_primal


def _lin_batched(fn: Callable[..., Any], nbatch: int) -> Callable[..., Any]:
    for _ in range(nbatch):
        fn = jax.vmap(fn)
    return fn


def _lin_impl(*operands: Any, binding: Binding, n_primal: int, nbatch: int,
              out: tuple[tuple[Shape, str], ...]) -> list[Any]:
    def one(*ops: Any) -> tuple[Any, ...]:
        return tuple(binding.jvp_leaves(ops[:n_primal], ops[n_primal:], out))
    return list(_lin_batched(one, nbatch)(*operands))


def _lin_abstract(*avals: Any, binding: Binding, n_primal: int, nbatch: int,
                  out: tuple[tuple[Shape, str], ...]) -> list[Any]:
    batch = tuple(avals[0].shape[:nbatch])
    return [jax.core.ShapedArray(batch + tuple(s), np.dtype(d)) for s, d in out]


def _lin_batch(operands: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[list[Any], list[int]]:
    """jax.vmap: every operand batched along a leading axis (unbatched ones broadcast), one more batch axis."""
    size = next(jnp.shape(x)[d] for x, d in zip(operands, dims) if d is not None)
    moved = [jnp.moveaxis(x, d, 0) if d is not None else jnp.broadcast_to(x, (size, *jnp.shape(x)))
             for x, d in zip(operands, dims)]
    outs = _lin_bind(*moved, **{**params, "nbatch": params["nbatch"] + 1})
    return outs, [0] * len(outs)


def _lin_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, binding: Binding, n_primal: int, nbatch: int,
             out: tuple[tuple[Shape, str], ...]) -> tuple[Any, Any]:
    """Linear in the tangent operands; differentiating it in the arguments is a second derivative."""
    if any(type(t) is not ad.Zero for t in tangents[:n_primal]):
        raise TypeError(binding.no_second_derivative)
    params = {"binding": binding, "n_primal": n_primal, "nbatch": nbatch, "out": out}
    outs = _lin_bind(*primals, **params)
    touts = _lin_bind(*primals[:n_primal], *(_instantiate_zeros(t) for t in tangents[n_primal:]), **params)
    return outs, touts


def _lin_transpose(cts: Sequence[Any], *operands: Any, binding: Binding, n_primal: int, nbatch: int,
                   out: tuple[tuple[Shape, str], ...]) -> list[Any]:
    """The vjp's handler (by the binding's rule) on the result tangents' cotangents."""
    primals, tangents = operands[:n_primal], operands[n_primal:]
    if any(_is_undefined_primal(x) for x in primals):
        raise TypeError(binding.no_second_derivative)
    cts = [_instantiate_zeros(c) for c in cts]

    def one(*ops: Any) -> tuple[Any, ...]:
        return tuple(binding.transpose(ops[:n_primal], ops[n_primal:]))
    grads = _lin_batched(one, nbatch)(*primals, *cts)
    # Inside shard_map: each cotangent varies as its tangent operand does (summed over the shards
    # of one the same on every shard), as for custom_vjp's gradients (_match_vma).
    return [None] * n_primal + [_to_vma(g, _aval_vma(t.aval)) if _is_undefined_primal(t) else None
                                for g, t in zip(grads, tangents)]


_lin_p.def_impl(_lin_impl)  # type: ignore[no-untyped-call]
_lin_p.def_abstract_eval(_lin_abstract)  # type: ignore[no-untyped-call]
mlir.register_lowering(_lin_p, mlir.lower_fun(_lin_impl, multiple_results=True))
batching.primitive_batchers[_lin_p] = _lin_batch
ad.primitive_jvps[_lin_p] = _lin_jvp
ad.primitive_transposes[_lin_p] = _lin_transpose


def _float_parts(t: Tree, g: Any) -> list[Any]:
    """The cotangent's Float leaves, in order: ks's tangent of the result (Integer and Bool parts,
    float0 or () here, have none)."""
    if t["kind"] == "leaf":
        return [g] if t["dtype"] == "float32" else []
    if t["kind"] == "tuple":
        return [x for p, v in zip(t["parts"], g) for x in _float_parts(p, v)]
    return []


def _tangent_tree(t: Tree) -> Tree:
    """The ks tangent's layout: Float leaves only (``()`` for a part holding none, as the codegen's
    trees give a type holding no scalar)."""
    if t["kind"] == "leaf":
        return t if t["dtype"] == "float32" else {"kind": "empty"}
    if t["kind"] == "tuple":
        parts = [_tangent_tree(p) for p in t["parts"]]
        return {"kind": "tuple", "parts": parts} if any(p["kind"] != "empty" for p in parts) else {"kind": "empty"}
    return t


def _unbroadcast(x: Any, shape: Shape) -> Any:
    """The gradient of a broadcast argument: summed over the axes it was broadcast along."""
    extra = x.ndim - len(shape)
    if extra:
        x = x.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (a, b) in enumerate(zip(x.shape, shape)) if b == 1 and a != 1)
    return x.sum(axis=axes, keepdims=True) if axes else x


def _c_check(rc: int, err: Any, kind: type[Exception] = ValueError) -> None:
    if rc:
        raise kind(err.value.decode("utf-8", "replace"))


def library_path(namespace: dict[str, Any], lib_file: str, extension_suffix: bool) -> str:
    """The handler library beside the wrapper: ``lib_file`` itself, or (a wheel's
    module, ``extension_suffix``) ``lib_file`` with one of this Python's extension
    suffixes, as setuptools and ksbind's build backend name it."""
    folder = os.path.dirname(os.path.abspath(namespace["__file__"]))
    names = [lib_file + s for s in importlib.machinery.EXTENSION_SUFFIXES] if extension_suffix else [lib_file]
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    raise ImportError(f"{namespace['__name__']}: its compiled handlers are missing: none of {', '.join(names)} is in "
                      f"{folder} (the wrapper and its library must be installed together)")


def _handlers(info: JaxBindingRecord) -> list[str]:
    """A binding's handler symbols: its own, its vjp's, an elementwise vjp's derivatives', its jvp's."""
    return [s for s in (info["handler"], info["vjp_handler"], info.get("jacobian_handler"), info.get("jvp_handler"))
            if s is not None]


def _register_handlers(namespace: dict[str, Any], lib: ctypes.CDLL, path: str, bindings: Sequence[JaxBindingRecord],
                       extension_suffix: bool, module: str) -> dict[str, str]:
    """Register the library's handlers with XLA; each handler symbol -> the FFI target name it is
    registered under (process-wide names, docs/jax.md). A handler's name is stable,
    ``ksbind.MODULE.SYMBOL.DIGEST`` (MODULE the module's name, DIGEST its ABI's from the codegen:
    ``target_digests``), so that an artifact of jax.export runs against any build of the
    module with the same signature. The first library in the process takes it; a library loaded
    after another that took it (the module rebuilt, or built in two caches) takes its per-build
    name instead, ``ksbind.TAG.SYMBOL`` (TAG its cache folder's, which names its content; a wheel's,
    ``wheel.`` and its import name), never the other library's handler."""
    name = namespace["__name__"]
    tag = ("wheel." + name if extension_suffix else os.path.basename(os.path.dirname(path))).replace("-", "_")
    names: dict[str, str] = {}
    fell_back: list[str] = []
    with _register_lock:
        for info in bindings:
            digests: dict[str, str] = info.get("target_digests") or {}
            for symbol in _handlers(info):
                stable = f"ksbind.{module}.{symbol}.{digests[symbol]}" if symbol in digests else None
                if stable is not None and _registered.get(stable, path) == path:
                    target = stable
                else:
                    target = f"ksbind.{tag}.{symbol}"
                    if stable is not None:
                        fell_back.append(f"{stable} (from {_registered[stable]})")
                known = _registered.get(target)
                if known is None:
                    capsule = jax.ffi.pycapsule(getattr(lib, symbol))  # type: ignore[no-untyped-call]
                    jax.ffi.register_ffi_target(target, capsule, platform="cpu")
                    _registered[target] = path
                elif known != path:  # the name would call the other library's handler
                    raise ImportError(f"{name}: FFI target {target!r} is already registered from {known}, "
                                      f"not {path}")
                names[symbol] = target
    if fell_back:
        _log.info("%s: another library in this process registered these FFI target names first: %s; this "
                  "build's handlers (%s) are registered under their per-build names, ksbind.%s.SYMBOL, and a "
                  "jax.export of this module names those (the artifact runs only where this build is loaded)",
                  name, ", ".join(fell_back), path, tag)
    return names


def install(namespace: dict[str, Any], lib_file: str, bindings: Sequence[JaxBindingRecord], *,
            arena_bytes: int, logging: bool, extension_suffix: bool = False, ffi_module: str | None = None) -> None:
    """Load the library beside the wrapper, register its handlers and define the module's functions
    (``ffi_module``: the module name its FFI target names carry, when not its import name: a build
    loaded under a versioned name gives the name it was versioned from)."""
    path = library_path(namespace, lib_file, extension_suffix)
    lib = ctypes.CDLL(path)
    support = _support_functions(lib)
    try:
        support.pop("_configure")(arena_bytes, logging)
    except (RuntimeError, ValueError) as e:
        raise ValueError(str(e)) from None
    names = _register_handlers(namespace, lib, path, bindings, extension_suffix, ffi_module or namespace["__name__"])
    made = {}
    for info in bindings:
        b = Binding(info, lib, names)
        made[info["name"]] = b
        namespace[info["name"]] = b.call
        if info["vjp"]:
            def vjp(*args: Any, _b: Binding = b, **kwargs: Any) -> Any:
                return _b.vjp_call(*args, **kwargs)
            vjp.__name__ = vjp.__qualname__ = info["vjp"]
            vjp.__doc__ = f"vjp of {info['name']}: the gradient of each argument given the result's (dret)"
            namespace[info["vjp"]] = vjp
        jvp_name = info.get("jvp")
        if jvp_name:
            def jvp(*args: Any, _b: Binding = b, **kwargs: Any) -> Any:
                return _b.jvp_call(*args, **kwargs)
            jvp.__name__ = jvp.__qualname__ = jvp_name
            jvp.__doc__ = (f"jvp of {info['name']}: the result's tangent given the arguments, then one tangent "
                           f"per argument (() for an Integer or Bool one)")
            namespace[jvp_name] = jvp
    namespace["_bindings"] = made
    namespace["_library"] = lib
    namespace.update(support)


#: What a support function's C code means (ksbind/jax.h's support_call): the Python error it raises.
_SUPPORT_ERRORS: dict[int, type[Exception]] = {1: RuntimeError, 2: MemoryError, 3: ValueError}


def _support_call(fn: Any, args: tuple[Any, ...]) -> None:
    """A support function's C function, its error raised as the type its code names."""
    err = ctypes.create_string_buffer(_ERR_BYTES)
    rc = fn(*args, err, _ERR_BYTES)
    _c_check(rc, err, _SUPPORT_ERRORS.get(rc, RuntimeError))


# ------------------------------------------------------------ BEGIN generated support functions
# Generated from ksbind/support.py by scripts/generate_settings.py (targets/jax/support_wiring.py): do not edit.


def _support_functions(lib: ctypes.CDLL) -> dict[str, Callable[..., Any]]:
    """The module's support functions by name (those it calls at import as ``_NAME``), over
    the library's C functions."""
    lib.ksbind_jax_reset_allocator.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.ksbind_jax_allocator_top.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_size_t]
    lib.ksbind_jax_allocator_peak.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_size_t]
    lib.ksbind_jax_logging.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.ksbind_jax_arena_bytes.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_size_t]
    lib.ksbind_jax_set_arena_bytes.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t]
    lib.ksbind_jax_configure.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]

    def reset_allocator() -> None:
        """Reset this thread's arena (calls reset it themselves when they end; refused inside a call)."""
        _support_call(lib.ksbind_jax_reset_allocator, ())

    def allocator_top() -> int:
        """Bytes of this thread's arena in use (0 between calls)."""
        out = ctypes.c_int64()
        _support_call(lib.ksbind_jax_allocator_top, (ctypes.byref(out),))
        return int(out.value)

    def allocator_peak() -> int:
        """The most bytes this thread's arena has held since it was made."""
        out = ctypes.c_int64()
        _support_call(lib.ksbind_jax_allocator_peak, (ctypes.byref(out),))
        return int(out.value)

    def logging(on: bool) -> None:
        """Print each call to stderr when on."""
        _support_call(lib.ksbind_jax_logging, (int(bool(on)),))

    def arena_bytes() -> int:
        """The size in bytes of each thread's arena."""
        out = ctypes.c_int64()
        _support_call(lib.ksbind_jax_arena_bytes, (ctypes.byref(out),))
        return int(out.value)

    def set_arena_bytes(bytes: int) -> None:
        """Make each thread's arena this size (this thread's now, the others' at their next call)."""
        if isinstance(bytes, bool) or not isinstance(bytes, int):
            raise TypeError(f"set_arena_bytes(): bytes must be an int, "
                            f"got {type(bytes).__name__} ({bytes!r})")
        _support_call(lib.ksbind_jax_set_arena_bytes, (bytes,))

    def _configure(arena_bytes: int, logging: bool) -> None:
        """At import: the config's arena size (KSBIND_ARENA_BYTES wins) and logging."""
        if isinstance(arena_bytes, bool) or not isinstance(arena_bytes, int):
            raise TypeError(f"configure(): arena_bytes must be an int, "
                            f"got {type(arena_bytes).__name__} ({arena_bytes!r})")
        _support_call(lib.ksbind_jax_configure, (arena_bytes, int(bool(logging))))

    return {
        "reset_allocator": reset_allocator,
        "allocator_top": allocator_top,
        "allocator_peak": allocator_peak,
        "logging": logging,
        "arena_bytes": arena_bytes,
        "set_arena_bytes": set_arena_bytes,
        "_configure": _configure,
    }


# ------------------------------------------------------------ END generated support functions


__all__ = ["install", "library_path", "Binding", "leaves_of", "unflatten", "VMAP_METHODS"]
