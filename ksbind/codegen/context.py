"""Builds the values templates see (documented in docs/templates.md).

Everything that needs a decision (C++ types, conversions, names) is computed
here and in codegen/targets/ (each target's record); templates only lay these
values out.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass
from functools import lru_cache
from typing import Any

from ksbind._version import TEMPLATE_API, __version__
from ksbind.codegen.targets.common import SCALAR_PY, EntryPoint, entry_points_for
from ksbind.codegen.targets.record import Target
from ksbind.errors import BindingError, ConfigError, closest
from ksbind.lang.identifiers import identifier_problem
from ksbind.lang.types import KsType, ScalarType, TensorType
from ksbind.spec import LAYOUTS, Binding, Mode, ModuleOptions
from ksbind.support import SUPPORT_FUNCTIONS, ArenaKind, SupportParam
from ksbind.targets.registry import get_target


@dataclass(frozen=True)
class TensorTypeInfo:
    rank: int
    element: str       # ks element type, e.g. Float
    element_cpp: str   # e.g. ks::Float
    py_name: str       # e.g. Tensor_1_Float
    py_element: str = "float"       # Python type of one element
    py_list: str = "list[float]"    # what tolist() returns: nested lists, one level per dimension
    py_size: str = "int"            # what size() returns: an int (rank 1) or a tuple of ints
    py_shape: str = "tuple[int]"    # the shape property's type


#: A parameter as the stub declares it (name and annotation): the support table's record, so the
#: support functions' parameters pass through as they are.
StubParam = SupportParam


@dataclass(frozen=True)
class StubFunction:
    """One module-level function in the generated .pyi stub."""

    name: str
    params: tuple[StubParam, ...]
    returns: str
    doc: str
    positional_only: bool = False  # pybind functions defined without pybind11::arg names


@dataclass(frozen=True)
class SupportInfo(StubFunction):
    """One support function (ksbind/support.py) as this module has it: its stub's view, its
    signature line and the C++ function that the module registers under its name."""

    signature: str = ""
    cpp: str = ""


def support_infos(target: Target) -> list[SupportInfo]:
    """The support functions of a module on ``target``, each with its doc and C++ for the target's arena."""
    arena: ArenaKind = "thread" if target.arena_per_call else "module"
    # Positional-only in the stub: pybind11 (the ks target) defines them without keyword names.
    return [SupportInfo(f.name, f.params, f.returns, f.doc(arena),
                        positional_only=bool(f.params), signature=f.signature, cpp=f.cpp(arena))
            for f in SUPPORT_FUNCTIONS if target.cpu_kernels or not f.kernels_only]


@dataclass(frozen=True)
class KsFunction:
    """A ks function the entry points call, for its C++ declaration."""

    symbol: str
    ks_name: str
    cpp_return: str
    cpp_params: tuple[str, ...]


@dataclass(frozen=True)
class BindingInfo:
    name: str
    ks_name: str
    mode: Mode
    primal: EntryPoint
    vjp: EntryPoint | None
    jvp: EntryPoint | None = None


def build_context(bindings: Sequence[Binding], options: ModuleOptions) -> dict[str, Any]:
    problem = identifier_problem(options.name)
    if problem:
        raise ConfigError(f"module name {problem}")
    if options.layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {options.layout!r}; expected one of {', '.join(LAYOUTS)}")
    target = get_target(options.target)
    for b in bindings:
        if b.result_shape is not None and not target.result_shapes:
            raise BindingError(f"binding {b.name!r}: result_shape is for targets that must know result shapes "
                               f"when tracing; the {options.target} target finds them by calling", b.location)
        if b.mutates and not target.torch_library:
            raise BindingError(f"binding {b.name!r}: mutates is for the torch target, whose op schemas say which "
                               f"arguments an op writes into; the {options.target} target has no such schema",
                               b.location)
    # Many bindings share types: decide each (type, role) crossing once.
    entries = entry_points_for(list(bindings), lru_cache(maxsize=None)(target.crossing))
    # A target may refine the entry points (the torch target's elementwise/vmap modes
    # show tensors); the bindings and the stub follow whichever entry points are final.
    extra = target.extra_context(bindings, options)
    entries = [target.decided(e) for e in extra.pop("entry_points", entries)]
    by_name = {e.name: e for e in entries}
    infos = [BindingInfo(b.name, str(b.decl.name), b.mode, by_name[b.name],
                         by_name[b.vjp_name] if b.vjp_name else None,
                         by_name[b.jvp_name] if b.jvp_name else None) for b in bindings]
    functions: dict[str, KsFunction] = {}
    for b in bindings:
        for d in b.decls:
            symbol = d.cpp_symbol
            if symbol not in functions:
                functions[symbol] = KsFunction(symbol, str(d.name), d.cpp_return_type, tuple(d.cpp_param_types))
    files = {"entry_points_h": "entry_points.h", "entry_points_cpp": "entry_points.cpp",
             "module_cpp": "module.cpp"}
    ctx: dict[str, Any] = {
        "template_api": TEMPLATE_API,
        "ksbind_version": __version__,
        "module": options,
        "module_name": options.name,
        "target": target.name,  # the record's name: another name (torch_stable) renders as its target
        "single_file": options.layout == "single",
        "files": files,
        "bindings": infos,
        "entry_points": entries,
        "ks_functions": list(functions.values()),
        "tensor_types": _tensor_types(bindings, options.tensor_types),
        "logging": options.logging,
        "arena_bytes": options.arena_bytes,
        "arena_per_call": target.arena_per_call,
        "entry_headers": list(target.entry_headers),
        # torch ops release the GIL on every call (a fixed cost, whatever the
        # tensor size); ks/python entries only for calls with enough data.
        "release_gil_always": target.release_gil_always,
        "torch_library": options.torch_library,
        "target_options": target_options(target, options.target_options),
        "module_doc": f"ksbind {target.name}-target bindings for: "
                      + ", ".join(str(b.decl.name) for b in bindings),
    }
    # What the .pyi stub declares.
    ctx["stub_functions"] = stub_functions(entries)
    # The module's own functions, from ksbind/support.py's table (`allocator_functions`: their old name).
    ctx["support_functions"] = ctx["allocator_functions"] = support_infos(target)
    # Only the ks target's module declares tensor classes (python: nested lists; torch: torch.Tensor).
    ctx["stub_classes"] = ctx["tensor_types"] if target.tensor_classes else []
    ctx.update(extra)
    uses_sequence = any("Sequence[" in p.py_type for f in ctx["stub_functions"] for p in f.params)
    ctx.setdefault("stub_imports", stub_imports(target, ctx["stub_classes"], uses_sequence))
    return ctx


def target_options(target: Target, given: Sequence[tuple[str, str | bool | int]]) -> dict[str, str | bool | int]:
    """Each of the target's own options (Target.options) with its given value or its default; a
    key it does not declare, or a value not of its kind, is a ConfigError (a config's are reported
    at their line when it is read: ksbind/config.py)."""
    values = {key: option.default for key, option in target.options.items()}
    for key, value in given:
        option = target.options.get(key)
        if option is None:
            raise ConfigError(f"target {target.name!r} has no option {key!r}{closest(key, target.options)}; its "
                              f"options: {', '.join(target.options) or 'none'}")
        if not option.holds(value):
            raise ConfigError(f"target option {key!r} must be a {option.kind} value ({option.doc}), "
                              f"found {value!r}")
        values[key] = value
    return values


def _tensor_types(bindings: Sequence[Binding], configured: Sequence[tuple[int, str]]) -> list[TensorTypeInfo]:
    """Configured tensor types, then every other scalar-element tensor a binding uses."""
    seen: dict[tuple[int, str], None] = dict.fromkeys((int(r), str(e)) for r, e in configured)
    types: dict[KsType, None] = {}  # each distinct type once, in first-use order
    for b in bindings:
        for d in b.decls:
            types.update(dict.fromkeys(d.params))
            types[d.return_type] = None
    for t in types:
        for sub in t.walk():
            if isinstance(sub, TensorType) and isinstance(sub.element, ScalarType):
                seen.setdefault((sub.rank, sub.element.name), None)
    return [_tensor_info(r, e) for r, e in seen]


def _tensor_info(rank: int, element: str) -> TensorTypeInfo:
    py = SCALAR_PY[element]
    nested = py
    for _ in range(rank):
        nested = f"list[{nested}]"
    shape = "tuple[" + ", ".join(["int"] * rank) + "]"
    return TensorTypeInfo(rank, element, ScalarType(element).cpp, f"Tensor_{rank}_{element}", py, nested,
                          "int" if rank == 1 else shape, shape)


def stub_functions(entries: Sequence[EntryPoint]) -> list[StubFunction]:
    """The stub's view of each entry point: Python names and types, docstring."""
    return [StubFunction(e.name, tuple(StubParam(p.py_name, p.py_type) for p in e.params), e.result.py_type,
                         e.doc) for e in entries]


def stub_imports(target: Target, tensor_types: Sequence[TensorTypeInfo], uses_sequence: bool = False) -> list[str]:
    """Import lines the stub needs for the annotations the target produces."""
    lines = ["from collections.abc import Sequence", ""] if uses_sequence else []
    if tensor_types:
        lines += ["from typing import Any, Protocol, TypeAlias", "", "from typing_extensions import Buffer"]
    if target.stub_imports:
        lines += ["", *target.stub_imports] if lines else list(target.stub_imports)
    return lines


def context_to_json(ctx: dict[str, Any]) -> Any:
    """The context as plain JSON values (for ``ksbind generate --dump-context``)."""
    def plain(v: Any) -> Any:
        if is_dataclass(v) and not isinstance(v, type):
            # The fields, then the values made from them (EntryPoint.DERIVED: what templates print).
            names = [f.name for f in fields(v)] + list(getattr(v, "DERIVED", ()))
            return {k: plain(getattr(v, k)) for k in names}
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, KsType):
            return str(v)
        return v
    return {k: plain(v) for k, v in ctx.items() if not callable(v)}
