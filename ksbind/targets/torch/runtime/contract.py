"""The contract between a generated torch wrapper and this runtime: the records its ``BINDINGS``
table holds, one ``BindingRecord`` per binding, which ``install_stable`` reads.

They are declared here, once: the torch target's codegen (ksbind/targets/torch/target.py)
writes the table as calls of these records (``_runtime.BindingRecord(name=..., ...)``, by
ksbind/codegen/record_source.py, which checks what it writes against them), and the runtime's
functions take them, so mypy checks both sides, and the generated table, against one schema. A
TypedDict's call builds a plain dict, which the runtime reads; the package's ``__init__`` imports
this module without torch, so codegen imports it too.

The last two records are the runtime's own view of a binding for autograd.Function and the
vmap rules (``autograd_spec`` in calls.py makes it from a BindingRecord); codegen never sees them.
Imports only typing (the runtime's copy in a wheel imports nothing of ksbind).
"""
from __future__ import annotations

from typing import Any, Literal, TypedDict, TypeVar

_T = TypeVar("_T")

#: How an argument flattens into its op's leaves: "leaf", "empty", or a list of its parts' specs.
FlatSpec = Any
#: How a value packs into tensors (codegen's pack_spec): "none", "f", "i", "b", "s", ["t", rank,
#: dtype], ["v", inner], ["tuple", [parts]].
PackSpec = Any
Mode = Literal["plain", "elementwise", "vmap"]
LeafKind = Literal["tensor", "stacked", "zero_dim", "float", "int", "bool", "str", "packed"]


class ValueLeaf(TypedDict):
    """What converting a Python value for an op reads of its leaf."""

    kind: LeafKind
    where: str     # its Python name in messages: x, or x[1][0] inside a tuple


class LeafRecord(ValueLeaf):
    """One argument of an op."""

    name: str      # its schema name
    float: bool    # it holds Floats: autograd gives it a gradient
    batched: bool  # vmap mode: mapped over its leading dimension
    rank: int      # tensor, stacked: the tensor's rank


class ResultRecord(TypedDict, total=False):
    """How the op's tensors re-nest: a leaf (a tensor; a number as a 0-dim one), empty, or a tuple."""

    kind: Literal["leaf", "empty", "tuple"]  # always there
    dtype: str     # leaf
    rank: int      # leaf: its rank (-1: the broadcast shape's, elementwise)
    parts: list[ResultRecord]  # tuple


class PackRecord(TypedDict):
    """A packed binding's pack specs: its arguments' and result's, and its vjp's."""

    params: list[PackSpec]
    result: PackSpec
    vjp_params: list[PackSpec]
    vjp_result: PackSpec


class _BindingFields(TypedDict):
    name: str
    mode: Mode
    params: list[str]          # the Python argument names
    spec: list[FlatSpec]       # per argument
    leaves: list[LeafRecord]
    result: ResultRecord
    vjp: str | None
    vjp_leaves: list[LeafRecord]
    vjp_result: ResultRecord | None
    vjp_spec: list[FlatSpec]   # the vjp's arguments: the binding's, then dret
    doc: str
    packed: PackRecord | None  # a packed binding (an op of packed tensors, no schema of its values)
    ragged: PackRecord | None  # a binding with packed ops beside its ops, for lists of tensors


class BindingRecord(_BindingFields, total=False):
    """One binding: its op's leaves and result, its vjp's and jvp's, and how its arguments
    flatten. The keys below are there only when the binding has them (every other binding's
    literal stays as it was)."""

    mutates: list[str]         # the arguments its op writes into
    jvp: str                   # its jvp's op ([fwd F]): the binding's arguments, then their tangents
    jvp_leaves: list[LeafRecord]
    jvp_result: ResultRecord
    jvp_spec: list[FlatSpec]
    jvp_params: list[str]      # the tangents' argument names, as the jvp's entry point has them
    partials: str              # elementwise with a vjp: the op of its value and partial derivatives
    #                            (one tensor each: the result, then each argument's partial)


class ParamRecord(TypedDict):
    """The runtime's view: one argument, and whether vmap mode maps it."""

    name: str
    batched: bool


#: What a vmap rule reads of each argument: whether vmap mode maps it (a ParamRecord of a binding,
#: or a LeafRecord of an op: an op's arguments are its leaves).
Batched = ParamRecord | LeafRecord


class _AutogradFields(TypedDict):
    name: str
    vjp: str | None
    mode: Mode
    params: list[ParamRecord]


class AutogradSpec(_AutogradFields, total=False):
    """The runtime's view of a binding for autograd.Function, its jvp and the vmap rules."""

    jvp: str
    jvp_spec: list[FlatSpec]
    jvp_params: list[str]


def present(value: _T | None, what: str) -> _T:
    """An optional field of a record where the caller's binding has it (its vjp's name, its
    vjp's result): only code for bindings with a vjp reads them."""
    if value is None:
        raise AssertionError(f"the binding's record has no {what}")
    return value


__all__ = ["present", "ValueLeaf", "FlatSpec", "PackSpec", "Mode", "LeafKind", "LeafRecord", "ResultRecord",
           "PackRecord", "BindingRecord", "ParamRecord", "Batched", "AutogradSpec"]
