"""PyTorch reference for examples/gmm/gmm.ks: ADBench's GMM objective and
Wishart prior, in plain differentiable torch (use float64 for checking), and
random data and parameters to call it with.

Arguments as the ks function takes them: x (N, D), alphas (K,), means (K, D),
qs (K, D) (log of Q's diagonal), ls (K, D(D-1)/2) (Q's strict lower triangle,
packed column by column), wishart = (gamma, m).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch


class GmmInputs(NamedTuple):
    x: torch.Tensor
    alphas: torch.Tensor
    means: torch.Tensor
    qs: torch.Tensor
    ls: torch.Tensor
    wishart: tuple[float, int]


def tri(d: int) -> int:
    """Entries in the strict lower triangle of a d x d matrix."""
    return d * (d - 1) // 2


def make_q(q: torch.Tensor, l: torch.Tensor) -> torch.Tensor:  # noqa: E741 (ADBench's name for it)
    """Q (..., D, D), lower triangular: exp(q) on the diagonal, l below it
    column by column (ADBench's packing; torch.tril_indices is row by row)."""
    d = q.shape[-1]
    rows, cols = [], []
    for col in range(d):
        for row in range(col + 1, d):
            rows.append(row)
            cols.append(col)
    lower = q.new_zeros(*q.shape[:-1], d, d)
    lower[..., rows, cols] = l
    return lower + torch.diag_embed(torch.exp(q))


def log_multigamma(a: float, p: int) -> float:
    """log Gamma_p(a)."""
    return 0.25 * p * (p - 1) * math.log(math.pi) + sum(math.lgamma(a - 0.5 * j) for j in range(p))


def wishart_prior(qs: torch.Tensor, ls: torch.Tensor, wishart: tuple[float | torch.Tensor, int]) -> torch.Tensor:
    """ADBench's log_wishart_prior summed over the K components (its sign convention)."""
    gamma, m = wishart
    k, p = qs.shape
    n = p + m + 1
    gamma_t = torch.as_tensor(gamma, dtype=qs.dtype)
    c = n * p * (torch.log(gamma_t) - 0.5 * math.log(2.0)) - log_multigamma(0.5 * n, p)
    frobenius = torch.exp(2 * qs).sum(1) + (ls * ls).sum(1)
    return (0.5 * gamma_t * gamma_t * frobenius - m * qs.sum(1)).sum() - k * c


def gmm_objective(x: torch.Tensor, alphas: torch.Tensor, means: torch.Tensor, qs: torch.Tensor,
                  ls: torch.Tensor, wishart: tuple[float | torch.Tensor, int]) -> torch.Tensor:
    """ADBench's GMM objective: log-likelihood of x (constant included) plus the prior term."""
    n, d = x.shape
    centered = x[:, None, :] - means[None, :, :]                       # (N, K, D)
    qx = torch.einsum("kij,nkj->nki", make_q(qs, ls), centered)        # Q_k (x_i - mu_k)
    main = alphas + qs.sum(1) - 0.5 * (qx * qx).sum(2)                 # (N, K)
    loglik = torch.logsumexp(main, 1).sum() - n * torch.logsumexp(alphas, 0)
    return loglik - n * d * 0.5 * math.log(2 * math.pi) + wishart_prior(qs, ls, wishart)


def random_inputs(n: int, d: int, k: int, seed: int = 0, dtype: torch.dtype = torch.float64,
                  wishart: tuple[float, int] = (1.0, 0)) -> GmmInputs:
    """Random data and parameters of the given sizes (fixed seed). Scales keep
    every term O(1..100) so that float32 ks agrees with float64 to ~1e-5."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)

    return GmmInputs(x=rand(n, d), alphas=rand(k), means=rand(k, d), qs=rand(k, d, scale=0.1),
                     ls=rand(k, tri(d), scale=0.5), wishart=wishart)


def clustered_data(n: int, d: int, k: int, seed: int = 0, spread: float = 4.0) -> tuple[torch.Tensor, torch.Tensor]:
    """n points (float64, (n, d)) around k random centres `spread` apart, and the centres."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(k, d, generator=g, dtype=torch.float64) * spread
    labels = torch.randint(0, k, (n,), generator=g)
    scales = 0.5 + torch.rand(k, d, generator=g, dtype=torch.float64)
    x = centres[labels] + torch.randn(n, d, generator=g, dtype=torch.float64) * scales[labels]
    return x, centres
