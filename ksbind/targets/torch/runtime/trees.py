"""Nested arguments and results as tensor leaves and a spec that rebuilds them (what autograd.Function and
the vmap rules see), and the dtypes by name.

Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch and nothing of
ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch

_DTYPES = {"float32": torch.float32, "int32": torch.int32, "bool": torch.bool}


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


class _Box:
    """The result's spec, which forward (or the vmap rule) fills in: an object,
    not a list, so that torch.func's pytree maps pass it on as it is."""

    __slots__ = ("spec",)

    def __init__(self) -> None:
        self.spec: Any = None
