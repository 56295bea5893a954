"""Activation functions written in Python and compiled through ksc by ``ksbind.compile``,
with what ``python -m ksbind.bench`` needs to time them against PyTorch:

    KSC=/path/to/ksc python -m ksbind.bench examples/frontend/activations.py --png

For each compiled function NAME, ``NAME_bench_configs()`` yields its inputs (one
argument, or a tuple of arguments, per config) and ``NAME_pytorch``, where there
is one, is the PyTorch formula ksbind.bench runs eagerly and through
torch.compile (otherwise it runs the Python function itself).
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import torch

import ksbind

# ---------------------------------------------------------------- elementwise activations


def relu3(x: float) -> float:
    """A smooth ReLU: 0 below 0, x^3/3 up to 1, then the line x - 2/3 (continuous, with its slope)."""
    if x < 0.0:
        return 0.0
    elif x < 1.0:
        return 1 / 3 * x ** 3
    else:
        return x - 2 / 3


def gelu(x: float) -> float:
    """GELU, as Knossos's example wrote it (with erf; gelu_tanh is the tanh approximation)."""
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2)))


def gelu_tanh(x: float) -> float:
    """GELU's tanh approximation."""
    return 0.5 * x * (1.0 + math.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


#: relu3 and gelu applied to every element of a tensor of any shape, with their derivatives.
vrelu3 = ksbind.compile(relu3, mode="elementwise")
vgelu = ksbind.compile(gelu, mode="elementwise")


def vrelu3_pytorch(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 0.0, 0.0, torch.where(x < 1.0, x * x * x / 3, x - 2 / 3))


def vgelu_pytorch(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2)))


def vrelu3_bench_configs() -> Iterator[torch.Tensor]:
    yield torch.randn(1_000_000)
    yield torch.randn(16, 16)


def vgelu_bench_configs() -> Iterator[torch.Tensor]:
    yield torch.randn(1_000_000)
    yield torch.randn(16, 16)


# ---------------------------------------------------------------- a tensor function, and its vmap


def sqrl_python(x: torch.Tensor) -> torch.Tensor:
    """Knossos's sqrl: a branch on the sum, then the mean of sin(t) * t."""
    y = torch.sum(x)
    if y < 0.0:
        t = -0.125 * x
    else:
        t = 1 / 2 * x ** 2
    return torch.mean(torch.sin(t) * t)


sqrl = ksbind.compile(sqrl_python)
#: sqrl of each (16, 16) slice along the leading axis.
vsqrl = ksbind.compile(sqrl_python, mode="vmap")


def vsqrl_pytorch(x: torch.Tensor) -> torch.Tensor:
    return torch.vmap(sqrl_where)(x)


def sqrl_where(x: torch.Tensor) -> torch.Tensor:
    """sqrl without Python control flow on a tensor (torch.vmap and torch.compile need that)."""
    t = torch.where(torch.sum(x) < 0.0, -0.125 * x, 1 / 2 * x ** 2)
    return torch.mean(torch.sin(t) * t)


def sqrl_bench_configs() -> Iterator[torch.Tensor]:
    yield torch.randn(16, 16)


def vsqrl_bench_configs() -> Iterator[torch.Tensor]:
    yield torch.randn(1000, 16, 16)
    yield torch.randn(10, 16, 16)
