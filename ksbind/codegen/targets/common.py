"""Plain values the templates render: entry points, parameters, call arguments.

A target decides how each ks type crosses the boundary (the entry point's C++
parameter type and the converter that turns it into the ks value); this module
turns a Binding into EntryPoints using those decisions, so templates only lay
the values out.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal, NoReturn, Protocol

from ksbind.errors import BindingError
from ksbind.lang.identifiers import cpp_string, identifier_problem
from ksbind.lang.model import FunctionDecl
from ksbind.lang.types import EMPTY_TUPLE, FLOAT, KsType, ScalarType, TensorType, TupleType
from ksbind.spec import Binding, GilPolicy, Mode, ModuleOptions

#: A ks scalar's Python type, for stubs and messages.
SCALAR_PY = {"Float": "float", "Integer": "int", "Bool": "bool", "String": "str"}


def holds_no_scalar(t: KsType) -> bool:
    """Types built of tuples and tensors only: the tangents of discrete values (``()`` in Python)."""
    return not t.contains(lambda x: isinstance(x, ScalarType))

@dataclass(frozen=True)
class Crossing:
    """How one ks type crosses between Python and the ks function.

    entry_type: the C++ type the entry point takes or returns.
    converter: C++ function converting it (``conv(&g_alloc, value, "name")`` on the
    way in, ``conv(value)`` on the way out); empty when no conversion is needed.
    py_type: the Python annotation for stubs.
    """

    entry_type: str
    converter: str = ""
    py_type: str = "object"


@dataclass(frozen=True)
class Param:
    name: str          # C++ parameter name of the entry point (arg0, arg1, ...)
    py_name: str       # keyword name from Python, used in error messages
    ks_type: KsType    # its ks type (prints as the canonical ks spelling)
    cpp_type: str      # the ks function's C++ type for it
    entry_type: str    # the entry point's C++ type for it
    converter: str     # see Crossing
    ks_value: str      # C++ identifier holding the ks value (arg0 or arg0_ks)
    py_type: str
    differentiable: bool = True


def ks_call(symbol: str, alloc: str, args: Sequence[str]) -> str:
    """The one spelling of a call of a ks function in C++: ``ks::SYMBOL(ALLOC, ARGS...)``
    (ksc's calling convention: the allocator first)."""
    return f"ks::{symbol}({', '.join([alloc, *args])})"


@dataclass(frozen=True)
class CallArg:
    """One C++ argument of the ks call: a value, or several packed as a ks::Tuple."""

    values: tuple[str, ...]
    packed: bool = False

    @property
    def cpp(self) -> str:
        """The argument as C++: the value, or the values in ``ks::make_Tuple(...)``."""
        return f"ks::make_Tuple({', '.join(self.values)})" if self.packed else self.values[0]


@dataclass(frozen=True)
class Result:
    ks_type: KsType    # the result's ks type (prints as the canonical ks spelling)
    cpp_type: str
    entry_type: str
    converter: str
    py_type: str
    holds_tensor: bool

    def convert(self, value: str) -> str:
        """C++ turning ``value`` (the ks result) into what the entry point returns."""
        return f"{self.converter}({value})" if self.converter else value


@dataclass(frozen=True)
class EntryPoint:
    name: str                    # C++ function name and Python name
    symbol: str                  # the ks function's C++ symbol
    ks_name: str                 # structured name, e.g. [vrelu3 (Tensor 1 Float)]
    signature: str               # ks signature for docstrings
    params: tuple[Param, ...]
    call_args: tuple[CallArg, ...]
    result: Result
    is_vjp: bool = False
    is_jvp: bool = False         # [fwd F]: the binding's arguments, then one tangent of each
    primal: str = ""             # for a vjp or jvp: the primal binding's name
    primal_symbol: str = ""      # for a vjp: the primal's C++ symbol (a full arena's message runs it)
    mode: Mode = "plain"
    doc: str = ""
    release_gil: GilPolicy = "auto"  # the binding's GIL policy: auto, always or never
    long_call: bool = False      # the binding is marked long: `auto` releases the GIL for every call
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    #: C++ bool expression: whether the ks call runs with the GIL released (the target record
    #: decides it from ``release_gil`` and ``long_call``: see release_gil_cpp below).
    release_gil_cpp: str = "false"
    #: The C++ the templates print, made from the fields above when first read (a replaced entry
    #: point makes its own); ``ksbind generate --dump-context`` shows them with the fields.
    DERIVED: ClassVar[tuple[str, ...]] = ("call_arg_list", "call", "probe_call", "param_list", "declaration",
                                          "converted_ret", "py_arg_list", "logged_args", "call_site")

    @cached_property
    def call_arg_list(self) -> str:
        """The ks call's arguments after the allocator."""
        return ", ".join(a.cpp for a in self.call_args)

    @cached_property
    def call(self) -> str:
        """The ks call, with the module's allocator (``&g_alloc``)."""
        return self.call_with("&g_alloc")

    @cached_property
    def probe_call(self) -> str:
        """A vjp's primal called on its arguments with ``probe`` as allocator, or ""."""
        return ks_call(self.primal_symbol, "probe", self.call_args[0].values) if self.is_vjp and self.primal_symbol \
            else ""

    @cached_property
    def param_list(self) -> str:
        """The entry point's C++ parameters."""
        return ", ".join(f"{p.entry_type} {p.name}" for p in self.params)

    @cached_property
    def declaration(self) -> str:
        """Its C++ signature: result type, name, parameters."""
        return f"{self.result.entry_type} {self.name}({self.param_list})"

    @cached_property
    def converted_ret(self) -> str:
        """``ret`` (the ks result) as the entry point returns it."""
        return self.result.convert("ret")

    @cached_property
    def py_arg_list(self) -> str:
        """``, pybind11::arg("x"), ...``: the keyword names a pybind11 ``m.def`` gives after the docstring."""
        return "".join(f', pybind11::arg("{p.py_name}")' for p in self.params)

    @cached_property
    def logged_args(self) -> str:
        """``<< ksbind::logged(arg0) << ", " ...``: the ks values a logged call prints (a ``std::cerr`` chain)."""
        return '<< ", " '.join(f"<< ksbind::logged({p.ks_value}) " for p in self.params)

    @cached_property
    def call_site(self) -> str:
        """The ``NAME_site`` declaration that names the binding and the ks function in a failure's
        message (ksbind/ks_failure.h)."""
        return self.call_site_as(self.name)

    def call_site_as(self, name: str) -> str:
        """The call site declared as ``name``_site (a second op of this entry point, e.g. a packed
        one), still naming this binding and ks function in a failure's message."""
        names = f"{cpp_string(self.name)}, {cpp_string(self.ks_name)}"
        return f"static constexpr ksbind::CallSite {name}_site{{{names}}};"

    def call_with(self, alloc: str) -> str:
        """The ks call with ``alloc`` (a C++ ``ks::allocator*``) as its allocator."""
        return ks_call(self.symbol, alloc, [a.cpp for a in self.call_args])


def release_gil_cpp(e: EntryPoint, always: bool) -> str:
    """Whether e's ks call runs with the GIL released, as a C++ bool expression: the binding's
    ``release_gil``; under ``auto``, every call when the target releases it always (``always``) or the
    binding is marked long, else a call whose tensor arguments hold enough data (ksbind::large_call)."""
    if e.release_gil == "always" or (e.release_gil == "auto" and (always or e.long_call)):
        return "true"
    if e.release_gil == "never":
        return "false"
    return f"ksbind::large_call({', '.join(p.ks_value for p in e.params)})"


#: Which way a value crosses: an argument in, a result out, or a vjp's gradients out.
CrossingRole = Literal["param", "result", "gradient"]


class CrossingRule(Protocol):
    def __call__(self, t: KsType, role: CrossingRole) -> Crossing: ...


def primal_entry(b: Binding, crossing: CrossingRule) -> EntryPoint:
    d = b.decl
    names = _py_names(d)
    params = tuple(_param(i, names[i], t, crossing) for i, t in enumerate(d.params))
    call_args = tuple(CallArg((p.ks_value,)) for p in params)
    return EntryPoint(
        name=b.name, symbol=d.cpp_symbol, ks_name=str(d.name), signature=d.signature,
        params=params, call_args=call_args, result=_result(d.return_type, crossing),
        mode=b.mode, doc=f"{d.signature}", release_gil=b.release_gil, long_call=b.long_call,
    )


def vjp_entry(b: Binding, crossing: CrossingRule) -> EntryPoint:
    """``name_vjp(a, k, dret) -> (da, dk)`` calling ``[sufrev f](Tuple(a, k), dret)``."""
    primal, vjp = b.decl, b.vjp_decl
    assert vjp is not None and b.vjp_name is not None
    if len(vjp.params) != 2 or vjp.params[0] != primal.arg_type:
        raise BindingError(
            f"{vjp.name} takes {vjp.arg_type}; a vjp of {primal.name} must take "
            f"(Tuple {primal.arg_type} {primal.return_type.tangent})", b.location)
    names = _py_names(primal) + ["dret"]
    primal_types = list(primal.params)
    params = tuple(_param(i, names[i], t, crossing) for i, t in enumerate(primal_types + [vjp.params[1]]))
    primal_values = tuple(p.ks_value for p in params[:-1])
    packed = isinstance(primal.arg_type, TupleType)
    call_args = (CallArg(primal_values, packed=packed) if packed else CallArg(primal_values),
                 CallArg((params[-1].ks_value,)))
    return EntryPoint(
        name=b.vjp_name, symbol=vjp.cpp_symbol, ks_name=str(vjp.name), signature=vjp.signature,
        params=params, call_args=call_args, result=_result(vjp.return_type, crossing, role="gradient"),
        is_vjp=True, primal=b.name, primal_symbol=primal.cpp_symbol, mode=b.mode, release_gil=b.release_gil,
        long_call=b.long_call,
        doc=f"vjp of {primal.name}: gradient of each argument given the result's gradient. "
            f"Calls {vjp.signature}",
    )


def jvp_entry(b: Binding, crossing: CrossingRule) -> EntryPoint:
    """``name_jvp(a, k, da, dk) -> dret`` calling ``[fwd f](Tuple(a, k), Tuple(da, dk))``."""
    primal, jvp = b.decl, b.jvp_decl
    assert jvp is not None and b.jvp_name is not None
    tangents = primal.arg_type.tangent
    if len(jvp.params) != 2 or jvp.params[0] != primal.arg_type or jvp.params[1] != tangents:
        raise BindingError(
            f"{jvp.name} takes {jvp.arg_type}; a jvp of {primal.name} must take "
            f"(Tuple {primal.arg_type} {tangents})", b.location)
    names = _py_names(primal)
    names = names + tangent_names(names)
    types = list(primal.params) + [t.tangent for t in primal.params]
    params = tuple(_param(i, names[i], t, crossing) for i, t in enumerate(types))
    n = len(primal.params)
    packed = isinstance(primal.arg_type, TupleType)
    call_args = tuple(CallArg(tuple(p.ks_value for p in part), packed=packed)
                      for part in (params[:n], params[n:]))
    return EntryPoint(
        name=b.jvp_name, symbol=jvp.cpp_symbol, ks_name=str(jvp.name), signature=jvp.signature,
        params=params, call_args=call_args, result=_result(jvp.return_type, crossing, role="gradient"),
        is_jvp=True, primal=b.name, mode=b.mode, release_gil=b.release_gil, long_call=b.long_call,
        doc=f"jvp of {primal.name}: the result's tangent given each argument's tangent. Calls {jvp.signature}",
    )


def binding_error(b: Binding, message: str) -> NoReturn:
    """A binding that does not fit its target: a BindingError naming it and its ks function."""
    raise BindingError(f"binding {b.name!r} ({b.decl.name}): {message}", b.location)


def check_mode(b: Binding, tensor_of_scalars: Callable[[KsType], bool], stackable_scalar: Callable[[KsType], bool],
               *, shared_float_tangents: bool, tuple_results_with_vjp: bool) -> None:
    """The rules of the framework targets' modes, for a binding: ``elementwise`` maps a scalar
    Float function over tensors; ``vmap`` maps over the leading axis of tensor arguments (the
    target's ``tensor_of_scalars``), shares scalar ones, and stacks each step's result (tensors,
    scalars that are ``stackable_scalar``, or a tuple of them). Where the targets differ: whether
    a Float shared by every step carries a tangent (``shared_float_tangents``: a jax number
    does, a torch one crosses as a number) and whether a result tuple can have a vjp."""
    d = b.decl
    if b.mode == "elementwise":
        if not 1 <= len(d.params) <= 2 or any(p != FLOAT for p in d.params) or d.return_type != FLOAT:
            binding_error(b, f"mode elementwise needs a scalar function Float -> Float or (Float, Float) -> Float; "
                             f"this one is {d.signature}")
    elif b.mode == "vmap":
        if not any(tensor_of_scalars(p) for p in d.params):
            binding_error(b, f"mode vmap maps over the leading axis of tensor arguments, and {d.signature} takes "
                             f"no tensor")
        for p in d.params:
            if not (tensor_of_scalars(p) or isinstance(p, ScalarType)):
                binding_error(b, f"mode vmap takes tensors (batched) and scalars (shared by every step); argument "
                                 f"type {p} is neither")
            if b.vjp_decl is not None and p == FLOAT:
                binding_error(b, "mode vmap with a vjp: a Float argument shared by every step would need its "
                                 "gradient summed over the batch; pass it as a tensor instead")
            if b.jvp_decl is not None and p == FLOAT and not shared_float_tangents:
                binding_error(b, "mode vmap with a jvp: a Float argument shared by every step crosses as a number, "
                                 "which carries no tangent; pass it as a tensor instead")
        r = d.return_type
        parts = r.elements if isinstance(r, TupleType) else (r,)
        tuples = tuple_results_with_vjp or b.vjp_decl is None
        ok = all(tensor_of_scalars(x) or stackable_scalar(x) for x in parts)
        if not ok or (isinstance(r, TupleType) and (not parts or not tuples)):
            binding_error(b, f"mode vmap stacks each step's result: it must be a tensor of Float/Integer/Bool, one "
                             f"of those scalars{', or a tuple of them' if tuples else ''}; found {r}")


def tangent_names(names: Sequence[str]) -> list[str]:
    """Each argument's tangent's parameter name: ``d`` + the argument's, with more ``d``s until it
    is no argument's and no other tangent's (``x, dx`` -> ``ddx, dddx``). Made here only, for the jvp's
    entry point; the targets' records copy them from it (``jvp_params``) for the runtimes."""
    taken = set(names)
    out: list[str] = []
    for name in names:
        t = f"d{name}"
        while t in taken:
            t = f"d{t}"
        taken.add(t)
        out.append(t)
    return out


def _py_names(d: FunctionDecl) -> list[str]:
    """The def's parameter names when they fit, else arg0, arg1, ..."""
    n = len(d.params)
    names = list(d.param_names)
    if len(names) == n and all(identifier_problem(x) is None for x in names) and "dret" not in names:
        return names
    return [f"arg{i}" for i in range(n)]


def _param(i: int, py_name: str, t: KsType, crossing: CrossingRule) -> Param:
    c = crossing(t, "param")
    name = f"arg{i}"
    return Param(name=name, py_name=py_name, ks_type=t, cpp_type=t.cpp, entry_type=c.entry_type,
                 converter=c.converter, ks_value=f"{name}_ks" if c.converter else name,
                 py_type=c.py_type, differentiable=t.tangent != EMPTY_TUPLE)


def _result(t: KsType, crossing: CrossingRule, role: CrossingRole = "result") -> Result:
    c = crossing(t, role)
    holds_tensor = t.contains(lambda x: isinstance(x, TensorType))
    return Result(ks_type=t, cpp_type=t.cpp, entry_type=c.entry_type, converter=c.converter,
                  py_type=c.py_type, holds_tensor=holds_tensor)


def runtime_copy_import(options: ModuleOptions, runtime_module: str) -> str:
    """A standalone wrapper's import of its own runtime copy beside it (a wheel needs no
    ksbind): relative to its package, else by top-level name."""
    if options.package:
        return f"from . import {runtime_module} as _runtime"
    return f"import {runtime_module} as _runtime"


def entry_points_for(bindings: list[Binding], crossing: CrossingRule) -> list[EntryPoint]:
    out: list[EntryPoint] = []
    for b in bindings:
        out.append(primal_entry(b, crossing))
        if b.vjp_decl is not None:
            out.append(vjp_entry(b, crossing))
        if b.jvp_decl is not None:
            out.append(jvp_entry(b, crossing))
    return out


__all__ = ["SCALAR_PY", "runtime_copy_import", "Crossing", "CrossingRole", "CrossingRule",
           "Param", "CallArg", "Result", "EntryPoint", "primal_entry", "vjp_entry", "jvp_entry",
           "entry_points_for", "holds_no_scalar", "ks_call", "release_gil_cpp"]
