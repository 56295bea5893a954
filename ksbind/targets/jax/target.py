"""The ``jax`` target: ks functions as JAX functions, through XLA's FFI.

The compiled part is a plain shared library with no Python in it: one XLA
FFI handler per entry point (``ksbind/jax.h`` holds their generic bodies), a
shape probe per primal, and the allocator functions, all ``extern "C"``; the
handlers reach the ks code through entry points compiled with it
(``jax_entry_points.cpp``; elementwise loops: ``ksbind/jax_entry.h``). The
generated pure-Python wrapper ``NAME.py`` loads it with ctypes, registers the
handlers with ``jax.ffi`` and defines one traceable function per binding
(``ksbind/targets/jax/runtime/``): ``jax.custom_vjp`` from its vjp (with a jvp,
``jax.custom_jvp`` over the jvp's handler, transposed to the vjp's), result
shapes found at trace time, and ``jax.vmap`` rules by mode.

Types (leaves: ``ksbind/jax.h``): Float float32, Integer int32, Bool bool;
scalars are 0-dim arrays; tensors of scalars arrays; a tensor of tensors one
stacked array, a tensor of tuples a tuple of stacked arrays; tuples tuples;
types that hold no scalar (tangents of discrete values) ``()``. Refused with a
BindingError at generation time: strings, and tensors of tensors or tuples
whose rank is above 1.

Modes, as on the torch target: ``plain`` (one call; under ``jax.vmap`` a
sequential loop), ``elementwise`` (a scalar ``Float -> Float`` or
``(Float, Float) -> Float`` function over arrays of any broadcast shape,
batched natively), ``vmap`` (the function mapped over the leading axis of its
tensor arguments; scalars shared).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from ksbind.codegen.record_source import record_source
from ksbind.codegen.targets.common import (
    Crossing,
    CrossingRole,
    EntryPoint,
    binding_error,
    check_mode,
    entry_points_for,
    holds_no_scalar,
    runtime_copy_import,
)
from ksbind.codegen.targets.record import Target
from ksbind.lang.identifiers import cpp_string
from ksbind.lang.model import FunctionDecl
from ksbind.lang.types import FLOAT, KsType, ScalarType, TensorType, TupleType
from ksbind.spec import Binding, Mode, ModuleOptions, TargetName
from ksbind.targets.jax import support_wiring

# The records the wrapper's BINDINGS table holds: the runtime's contract (typing alone: no jax).
from ksbind.targets.jax.runtime.contract import JaxBindingRecord, JaxParamRecord, Tree

NAME: TargetName = "jax"
# "{module}" in a file name is replaced by the module's name: NAME.py is the
# wrapper users import; the library NAME_jaxffi.so is two units (ksbind/backend/
# jax_build.py): the config's C++ with jax_entry_points.cpp (the entry points,
# declared in jax_entry_points.h), and jax_handlers.cpp (XLA's FFI side).
FILES = {"jax_entry_points.h": "jax_entry_points.h.j2", "jax_entry_points.cpp": "jax_entry_points.cpp.j2",
         "jax_handlers.cpp": "jax_handlers.cpp.j2", "{module}.py": "jax_wrapper.py.j2",
         "{module}.pyi": "stub.pyi.j2"}
SINGLE_FILE = FILES
LIB_SUFFIX = "_jaxffi"
DTYPES = {"Float": "float32", "Integer": "int32", "Bool": "bool"}
#: The jaxlib whose FFI headers modules compile against: the oldest supported, since
#: XLA refuses a handler built against a newer FFI API than its own (docs/jax.md).
OLDEST_JAXLIB = "0.10.2"
#: The FFI handlers' ABI: what a handler of a given ks signature, mode and kind takes and
#: returns (its buffers, their order and layout: ksbind/targets/jax/include/ksbind/jax.h, jax_handlers.cpp.j2,
#: and the runtime's ffi_call). Part of each handler's stable FFI target name (``target_digest``),
#: so raise it when that changes: an artifact exported before then names no handler built after.
HANDLER_ABI = 1
#: How a handler serves its binding, in its target name's digest.
HandlerRole = Literal["call", "vjp", "jvp", "jacobian"]


def lib_name(module_name: str) -> str:
    return module_name + LIB_SUFFIX


#: A standalone module's copy of ksbind/targets/jax/runtime/ (the package), beside it: NAME + this.
RUNTIME_SUFFIX = "_ksbind_jax_runtime"


def runtime_module_name(module_name: str) -> str:
    return module_name + RUNTIME_SUFFIX


def wrapper_imports(options: ModuleOptions) -> dict[str, str]:
    """How the generated wrapper imports its runtime and names its library: from
    ksbind, and ``NAME_jaxffi.so`` in ksbind's cache; standalone (a wheel), from
    its own copy of the runtime beside it (relative to its package), and the
    library named as Python names an extension module (setuptools and the PEP 517
    backend give it the building Python's extension suffix), found beside it."""
    lib = lib_name(options.name)
    # The name the handlers' FFI target names carry (docs/jax.md, "jax.export"): None, the module's
    # import name; a build loaded under a versioned name, the name it was versioned from.
    ffi_module = repr(options.versioned_from) if options.versioned_from else "None"
    if not options.standalone:
        return {"jax_runtime_import": "from ksbind.targets.jax import runtime as _runtime", "jax_lib": lib + ".so",
                "jax_lib_suffixes": "False", "jax_ffi_module": ffi_module}
    return {"jax_runtime_import": runtime_copy_import(options, runtime_module_name(options.name)), "jax_lib": lib,
            "jax_lib_suffixes": "True", "jax_ffi_module": ffi_module}


# ------------------------------------------------------------ what crosses

def unsupported_reason(t: KsType) -> str | None:
    """Why a value of type t cannot cross as JAX arrays, or None."""
    if holds_no_scalar(t):
        return None
    for sub in t.walk():
        if isinstance(sub, ScalarType) and sub.name not in DTYPES:
            return f"{t} holds a {sub.name}, which no jax array holds"
        if isinstance(sub, TensorType) and not isinstance(sub.element, ScalarType) and sub.rank != 1 \
                and not holds_no_scalar(sub.element):
            return (f"{sub} is a rank-{sub.rank} tensor of {sub.element}; tensors of tensors or tuples cross "
                    f"as rank 1 (stacked arrays) only")
    return None


def tree(t: KsType, extra: int = 0) -> Tree:
    """The pytree a value of type t is in Python, with each leaf's dtype and rank
    (``extra``: leading row axes of the tensors of tensors or tuples around it), as the
    runtime's record (ksbind/targets/jax/runtime/contract.py) the wrapper's table holds."""
    if holds_no_scalar(t):
        return Tree(kind="empty")
    if isinstance(t, ScalarType):
        return Tree(kind="leaf", dtype=DTYPES[t.name], rank=extra)
    if isinstance(t, TensorType) and isinstance(t.element, ScalarType):
        return Tree(kind="leaf", dtype=DTYPES[t.element.name], rank=t.rank + extra)
    if isinstance(t, TensorType):
        return tree(t.element, extra + 1)
    if isinstance(t, TupleType):
        return Tree(kind="tuple", parts=[tree(e, extra) for e in t.elements])
    raise AssertionError(f"no jax tree for {t}")


def py_type(t: KsType) -> str:
    if holds_no_scalar(t):
        return "tuple[()]"
    if isinstance(t, TupleType):
        return "tuple[" + ", ".join(py_type(e) for e in t.elements) + "]"
    if isinstance(t, TensorType) and not isinstance(t.element, ScalarType):
        return py_type(t.element)
    return "jax.Array"


def crossing(t: KsType, role: CrossingRole) -> Crossing:
    """The handlers read and write XLA's buffers themselves (``ksbind/jax.h``):
    entry points take the ks values as they are."""
    return Crossing(entry_type=t.cpp, converter="", py_type=py_type(t))


# ------------------------------------------------------------ mode checks

def _tensor_of_scalars(t: KsType) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element, ScalarType) and t.element.name in DTYPES


def check_binding(b: Binding) -> None:
    """Every way a binding can fail to fit the jax target or its mode."""
    d = b.decl
    for t in [*d.params, d.return_type, *(x.return_type for x in (b.vjp_decl, b.jvp_decl) if x is not None)]:
        reason = unsupported_reason(t)
        if reason:
            binding_error(b, reason)
    check_mode(b, _tensor_of_scalars, lambda t: isinstance(t, ScalarType), shared_float_tangents=True,
               tuple_results_with_vjp=True)
    if b.result_shape is not None and (b.mode == "elementwise" or not _has_shaped_result(d.return_type)):
        binding_error(b, "result_shape is for results holding tensors whose shape cannot be found from the arguments' "
                      "shapes; this binding's result shape follows from its mode and type")


def _has_shaped_result(t: KsType) -> bool:
    return t.contains(lambda x: isinstance(x, TensorType))


# ------------------------------------------------------------ template values

def target_digest(signature: str, mode: Mode, role: HandlerRole) -> str:
    """What a handler's FFI target name (``ksbind.MODULE.SYMBOL.DIGEST``, docs/jax.md) carries of its
    ABI: 12 hex digits of the sha256 of the ks signature it calls (the ks name and types), the
    binding's mode, the handler's role and ``HANDLER_ABI``. Nothing of the build's content or cache
    folder, so an artifact of ``jax.export`` runs against any build of the module whose handler has
    the same ABI."""
    text = f"ksbind jax handler abi {HANDLER_ABI}\n{role}\n{mode}\n{signature}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]



@dataclass(frozen=True)
class JaxEntry:
    """One handler: its C++ symbol, kind and the ks call it makes."""

    name: str            # the entry point's name (the binding's, or its vjp's)
    ks_name: str         # the ks function it calls (structured name), for failure messages
    handler: str         # exported handler symbol
    probe: str | None    # exported shape probe symbol (plain/vmap primals)
    kind: Literal["call", "elementwise"]
    result_cpp: str
    params: tuple[tuple[str, str], ...]  # (ks C++ type, C++ name)
    py_names: tuple[str, ...]
    call: str            # the ks call, over the params' C++ names and `alloc`
    n_in: int
    n_out: int
    #: (C++ type, name, value): arguments of the ks call fixed in the handler, not passed
    fixed: tuple[tuple[str, str, str], ...] = ()
    #: the handler's ABI digest, in its stable FFI target name (``target_digest``)
    digest: str = ""
    #: The params as the templates print them after `alloc` (each item after ", "), made from
    #: ``params`` when first read; ``--dump-context`` shows them with the fields.
    DERIVED: ClassVar[tuple[str, ...]] = ("param_list", "arg_list", "type_list", "py_name_list", "fixed_decls")

    @cached_property
    def param_list(self) -> str:
        """``, T n, ...``: the C++ parameters."""
        return "".join(f", {t} {n}" for t, n in self.params)

    @cached_property
    def arg_list(self) -> str:
        """``, n, ...``: the names, as arguments."""
        return "".join(f", {n}" for _, n in self.params)

    @cached_property
    def py_name_list(self) -> str:
        """``"x", "y"``: the Python names as C++ strings (for messages)."""
        return ", ".join(cpp_string(n) for n in self.py_names)

    @cached_property
    def fixed_decls(self) -> str:
        """`` const T n = v;`` per fixed argument: declared before the ks call."""
        return "".join(f" const {t} {n} = {v};" for t, n, v in self.fixed)

    @cached_property
    def type_list(self) -> str:
        """``, T, ...``: the types, as template arguments."""
        return "".join(f", {t}" for t, _ in self.params)


def _jax_entry(e: EntryPoint, mode: Mode, result_type: KsType) -> JaxEntry:
    kind: Literal["call", "elementwise"] = "elementwise" if mode == "elementwise" else "call"
    n_out = len(result_type.elements) if isinstance(result_type, TupleType) else 1
    derivative = e.is_vjp or e.is_jvp  # no probe: its shapes are the primal's
    role: HandlerRole = "vjp" if e.is_vjp else "jvp" if e.is_jvp else "call"
    return JaxEntry(
        name=e.name, ks_name=e.ks_name, handler=f"ksbind_jax_{e.name}", probe=None if derivative or kind != "call" else
        f"ksbind_jax_probe_{e.name}", kind=kind, result_cpp=result_type.cpp,
        params=tuple((p.cpp_type, p.name) for p in e.params), py_names=tuple(p.py_name for p in e.params),
        call=e.call_with("alloc"), n_in=len(e.params), n_out=n_out, digest=target_digest(e.signature, mode, role))


def _jacobian_entry(vjp: EntryPoint, result_type: KsType) -> JaxEntry:
    """An elementwise vjp's handler at dret = 1: each argument's derivative, the
    residual the backward multiplies the cotangent by (a vjp is linear in dret), so
    a broadcast cotangent (jax.grad of a sum) is never materialized nor read by C++."""
    full = _jax_entry(vjp, "elementwise", result_type)
    dret = full.params[-1]
    return replace(full, name=f"{vjp.name}_jacobian", handler=f"ksbind_jax_{vjp.name}_jacobian",
                   params=full.params[:-1], py_names=full.py_names[:-1], n_in=full.n_in - 1,
                   fixed=((dret[0], dret[1], "1.0f"),), digest=target_digest(vjp.signature, "elementwise", "jacobian"))


def _binding_record(b: Binding, entries: dict[str, JaxEntry], primal: EntryPoint) -> JaxBindingRecord:
    """What ksbind/targets/jax/runtime/ needs to define one binding's function: the runtime's own
    record, which the wrapper's ``BINDINGS`` table is written as."""
    d = b.decl
    params = [JaxParamRecord(name=p.py_name, ks=str(t), tree=tree(t),
                             batched=b.mode == "vmap" and _tensor_of_scalars(t),  # vmap: mapped over its leading axis
                             differentiable=t.contains(lambda x: x == FLOAT))  # it holds a Float
              for p, t in zip(primal.params, d.params)]
    vjp = entries.get(b.vjp_name) if b.vjp_name else None
    jvp = entries.get(b.jvp_name) if b.jvp_name else None
    jac = entries[f"{b.vjp_name}_jacobian"] if vjp and b.mode == "elementwise" else None
    handlers = [e for e in (entries[b.name], vjp, jac, jvp) if e is not None]
    return JaxBindingRecord(
        name=b.name, ks_name=str(d.name), mode=b.mode, signature=d.signature, params=params,
        result=tree(d.return_type), result_shape=b.result_shape, handler=entries[b.name].handler,
        probe=entries[b.name].probe, vjp=b.vjp_name, vjp_handler=vjp.handler if vjp else None,
        jacobian_handler=jac.handler if jac else None,
        vjp_result=tree(b.vjp_decl.return_type) if b.vjp_decl else None, jvp=b.jvp_name if jvp else None,
        jvp_handler=jvp.handler if jvp else None,
        # the tangents' argument names, as the jvp's handler has them
        jvp_params=list(jvp.py_names[len(primal.params):]) if jvp else [],
        # handler symbol -> its ABI digest: the runtime registers each under
        # ``ksbind.MODULE.SYMBOL.DIGEST``, a name stable across rebuilds (docs/jax.md, "jax.export")
        target_digests={e.handler: e.digest for e in handlers})


def extra_context(bindings: Sequence[Binding], options: ModuleOptions) -> dict[str, Any]:
    for b in bindings:
        check_binding(b)
    entry_list = entry_points_for(list(bindings), crossing)
    by_name = {e.name: e for e in entry_list}
    jax_entries: dict[str, JaxEntry] = {}
    for b in bindings:
        jax_entries[b.name] = _jax_entry(by_name[b.name], b.mode, b.decl.return_type)
        if b.vjp_name and b.vjp_decl:
            jax_entries[b.vjp_name] = _jax_entry(by_name[b.vjp_name], b.mode, b.vjp_decl.return_type)
            if b.mode == "elementwise":
                jac = _jacobian_entry(by_name[b.vjp_name], b.vjp_decl.return_type)
                jax_entries[jac.name] = jac
        if b.jvp_name and b.jvp_decl:
            # [fwd F]: the arguments, then their tangents (no buffer for a tangent holding no
            # scalar); an elementwise binding's is a loop over 2 or 4 Float arrays.
            jax_entries[b.jvp_name] = _jax_entry(by_name[b.jvp_name], b.mode, b.jvp_decl.return_type)
    records = [_binding_record(b, jax_entries, by_name[b.name]) for b in bindings]
    entries = [_moded(e, b) for b in bindings for e in
               [by_name[b.name], *(by_name[n] for n in (b.vjp_name, b.jvp_name) if n)]]
    return {
        "entry_points": entries,
        "jax_entries": list(jax_entries.values()),
        "jax_bindings": records,
        "jax_bindings_literal": record_source(records, list[JaxBindingRecord], "_runtime."),
        **wrapper_imports(options),
    }


def _moded(e: EntryPoint, b: Binding) -> EntryPoint:
    """Stubs: every array argument is a jax.Array (a Python number too for a scalar)."""
    params = tuple(replace(p, py_type="jax.Array | float" if p.py_type == "jax.Array" and
                           p.ks_type == FLOAT else p.py_type) for p in e.params)
    return replace(e, params=params)


def crossing_problem(d: FunctionDecl) -> str | None:
    """Why d's arguments or result cannot cross as jax arrays (default bindings skip d), or None."""
    for t in [*d.params, d.return_type]:
        reason = unsupported_reason(t)
        if reason:
            return f"on the jax target, {reason}"
    return None


#: The package's folder: its templates/ and include/ (C++ headers) go into the record.
HERE = Path(__file__).parent

TARGET = Target(
    name=NAME, files=FILES, single_file=SINGLE_FILE, crossing=crossing, extra_context=extra_context,
    build="ksbind.targets.jax.build:JAX", tensors="jax.Array", stub_imports=("import jax",), compiled_name=lib_name,
    result_shapes=True, crossing_problem=crossing_problem, runtime_copy="{module}" + RUNTIME_SUFFIX,
    runtime_source="targets/jax/runtime",
    templates=HERE / "templates", include_dirs=(HERE / "include",), written_ahead=support_wiring.written_ahead,
)


__all__ = ["NAME", "TARGET", "FILES", "SINGLE_FILE", "LIB_SUFFIX", "OLDEST_JAXLIB", "HANDLER_ABI", "target_digest",
           "crossing", "tree", "py_type",
           "check_binding", "crossing_problem", "extra_context", "lib_name", "unsupported_reason", "JaxEntry",
           "RUNTIME_SUFFIX", "runtime_module_name", "wrapper_imports"]
