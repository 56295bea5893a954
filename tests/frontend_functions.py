"""Python functions the front-end tests compile: one per construct of docs/frontend.md's table,
and Knossos's own examples (relu3, gelu, sqrl) in their Python, unchanged but for the decorator.

They live in a module of their own because ksbind.compile reads a function's source file.
"""
from __future__ import annotations

import math
from math import erf, sqrt

import torch

import ksbind

SCALE = 0.5  # a module-level constant
OFFSET = 3


# ------------------------------------------------------------------ Knossos's examples


def relu3(x: float) -> float:
    """Like ReLu, but smoother."""
    if x < 0.0:
        return 0.0
    elif x < 1.0:
        return 1 / 3 * x ** 3
    else:
        return x - 2 / 3


def vrelu3_pytorch(x: torch.Tensor) -> torch.Tensor:
    mask1_inf = x > 1.0
    mask0_1 = (x > 0.0) & ~mask1_inf
    val_0_1 = 1 / 3 * x ** 3
    val_1_inf = x - 2 / 3
    return mask0_1 * val_0_1 + mask1_inf * val_1_inf


def gelu(x: float) -> float:
    return 0.5 * x * (1.0 + erf(x / sqrt(2)))


def two_branches(x: float, y: float) -> float:
    """Two floats, an if/elif/else chain (mode='elementwise': selects in the forward kernel)."""
    if x < y:
        return x * y
    elif x > 2.0 * y:
        return math.exp(y) - x
    else:
        return y / x


def branch_calls_a_function(x: float) -> float:
    """A branch that calls another def: its branches stay ks ifs (the def could do anything)."""
    if x < 0.0:
        return helper_square(x)
    return x


def sqrl(x: torch.Tensor):
    """sqrl: Squared Leaky Relu."""
    y = torch.sum(x)
    if y < 0.0:
        t = -0.125 * x
    else:
        t = 1 / 2 * x ** 2
    return torch.mean(torch.sin(t) * t)


def sum_and_values(x: torch.Tensor, a: torch.Tensor):
    """Elementwise code summed (one loop adding up, no tensor made) and returned (a tensor)."""
    y = torch.sin(x) * a
    return torch.sum(y), torch.mean(x * x * a), y


def three_values(x: torch.Tensor, a: torch.Tensor):
    """Three results reading the same tensor and number (each its own let: ksc has no dup$3)."""
    return torch.cos(x) * 2.0, torch.exp(x) * a, a * 1.5, a * 2.0 + torch.sum(x), a * 3.0


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def gelu_approx_sigmoid(x: float) -> float:
    return sigmoid(1.702 * x) * x


def bar(a: int, x: float):
    """A scalar branch on an integer argument, a tensor constant's rank, math.sin of a scalar."""
    y = torch.tensor([[1.1, -1.2], [2.1, 2.2]])
    b = len(y.size())
    if a < 0:
        t = -0.125 * x
    else:
        t = 1 / 2 * x * float(b)
    return math.sin(t) * t


def far(x: torch.Tensor, y: torch.Tensor):
    """torch.cat along a dim, a mean, and a branch on the data."""
    xx = torch.cat([x, y], dim=1)
    xbar = torch.mean(xx)
    if xbar < 0.0:
        t = -0.125 * x
    else:
        t = 1 / 2 * x ** 2
    return torch.mean(torch.sin(t) * xbar * t)


# ------------------------------------------------------------------ constructs


def arithmetic(x: float, y: float):
    return (x + y) * (x - y) / (1.0 + y * y) - -x + x ** 2 + SCALE * y ** 3 + x ** -2 + abs(y) ** 0.5


def integers(n: int, m: int):
    return n // m + n % m + (n + OFFSET) * 2 - m


def comparisons(x: float, y: float):
    if 0.0 < x < 1.0 and not y > 0.5 or x == y:
        return x * y
    elif x != 2.0:
        return x + 1.0 if y >= 0.0 else x - 1.0
    return y


def branch_reassign(x: float, k: int):
    s = x
    if k > 0:
        s = s * 2.0
        t = s + 1.0
    else:
        t = s - 1.0
    return s * t


def math_calls(x: float):
    return (math.sin(x) + math.cos(x) + math.exp(x / 4) + math.log(1.0 + x * x) + math.tanh(x)
            + math.sqrt(1.0 + x * x) + math.erf(x) + math.log1p(x * x) + math.tan(x / 4))


def tensor_calls(x: torch.Tensor):
    return torch.sum(torch.sigmoid(x) * torch.tanh(x) + torch.relu(x) + torch.exp(-x * x) + x.abs())


def where_max(x: torch.Tensor, y: torch.Tensor):
    return torch.where(x > y, x * 2.0, torch.maximum(x, -y)) + torch.minimum(x, y)


def reductions(x: torch.Tensor):
    return torch.sum(x, dim=0) + x.mean(1) * 2.0 + torch.prod(x[0]) + x.sum()


def matrix_ops(m: torch.Tensor, v: torch.Tensor):
    w = m @ v
    return torch.dot(w, v) + (v @ m.t()).sum() + torch.sum(m @ m.T)


def shapes_and_indexing(x: torch.Tensor):
    n = x.shape[0]
    m = x.size(1)
    return x[0, 0] * float(n) + x[n - 1, m - 1] + x[-1][0] + float(len(x)) + float(x.ndim)


def generator_sum(v: torch.Tensor):
    return sum(v[i] * v[i] for i in range(v.shape[0]))


def comprehension(v: torch.Tensor):
    n = v.shape[0]
    return torch.stack([v[i] * float(i) for i in range(n)]) + v


def accumulate(v: torch.Tensor, n: int):
    total = 0.0
    last = 1.0
    for i in range(n):
        total = total + v[i] * last  # type: ignore[assignment]
        last = v[i]  # type: ignore[assignment]
    return total + last


def loop_over_tensor(v: torch.Tensor):
    best = 0.0
    for x in v:
        best = max(best, x * x)
    return best


def helper_square(x):
    return x * x


#: a ksbind.compile function called from another: translated into the caller's program as a def
compiled_square = ksbind.compile(helper_square, quiet=True)


def calls_compiled(x: torch.Tensor):
    return torch.sum(compiled_square(x) + 1.0)


def calls_helper(x: torch.Tensor):
    return torch.sum(helper_square(x)) + helper_square(2.0)


def stacked(x: torch.Tensor, y: torch.Tensor):
    s = torch.stack([torch.sum(x), torch.sum(y), torch.sum(x * y)])
    return torch.cat([x, y, x]) * 2.0, s


# ------------------------------------------------------------------ refused


def uses_while(x: float):
    while x > 1.0:
        x = x / 2
    return x


def uses_print(x: float):
    print(x)
    return x


def mutates_list(x: float):
    out = [x]
    out.append(x)
    return x


def assigns_element(x: torch.Tensor):
    x[0] = 1.0
    return x


def slices(x: torch.Tensor):
    return torch.sum(x[1:])


def unknown_call(x: float):
    return math.gamma(x)


def truthiness(x: float):
    if x:
        return 1.0
    return 0.0


def no_return(x: float):
    if x > 0.0:
        return x
