"""The contract between a generated jax wrapper and this runtime: the records its ``BINDINGS``
table holds, one ``JaxBindingRecord`` per binding, which ``install`` reads.

Declared here, once: the jax target's codegen (ksbind/targets/jax/target.py) writes the table as
calls of these records (``_runtime.JaxBindingRecord(name=..., ...)``, checked against them as it
writes), and the runtime's functions take them, so mypy checks both sides, and the generated
table, against one schema. Imports only typing, so codegen imports it without jax, and a wheel's
copy of the package loads it with no ksbind.
"""
from __future__ import annotations

from typing import Literal, TypedDict


class Tree(TypedDict, total=False):
    """A value's pytree: a leaf (an array of ``dtype`` and ``rank``), empty, or a tuple of parts."""

    kind: Literal["leaf", "empty", "tuple"]  # always there
    dtype: str          # leaf: float32, int32 or bool
    rank: int           # leaf
    parts: list[Tree]   # tuple


class JaxParamRecord(TypedDict):
    """One argument: its Python name, ks type, pytree, and how it maps and differentiates."""

    name: str
    ks: str
    tree: Tree
    batched: bool
    differentiable: bool


class JaxBindingRecord(TypedDict):
    """One binding: its handlers (FFI targets), pytrees, and vjp's and jvp's."""

    name: str
    ks_name: str
    mode: Literal["plain", "elementwise", "vmap"]
    signature: str
    params: list[JaxParamRecord]
    result: Tree
    result_shape: str | None
    handler: str
    probe: str | None
    vjp: str | None
    vjp_handler: str | None
    jacobian_handler: str | None
    vjp_result: Tree | None
    jvp: str | None
    jvp_handler: str | None
    jvp_params: list[str]
    target_digests: dict[str, str]  # handler symbol -> its ABI digest (ksbind.MODULE.SYMBOL.DIGEST)


__all__ = ["Tree", "JaxParamRecord", "JaxBindingRecord"]
