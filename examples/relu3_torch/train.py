"""relu3 (compiled ks code) as the activation of a small PyTorch model.

Builds configs/relu3_torch.yaml (cached after the first run), puts the
elementwise ``relu3`` in an ``nn.Module``, and trains an MLP for a few steps
on synthetic data; gradients flow through relu3's vjp. Prints the loss,
which goes down.

    python examples/relu3_torch/train.py
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "relu3_torch.yaml"


class Relu3(nn.Module):
    """relu3(x) = 0 for x < 0, x^3/3 for 0 <= x < 1, x - 2/3 above: a smooth ReLU."""

    def __init__(self, ops: ModuleType) -> None:
        super().__init__()
        self.ops = ops

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ops.relu3(x)


def make_model(ops: ModuleType) -> nn.Module:
    return nn.Sequential(nn.Linear(4, 32), Relu3(ops), nn.Linear(32, 32), Relu3(ops), nn.Linear(32, 1))


def train(ops: ModuleType, steps: int = 60, seed: int = 0) -> list[float]:
    """Fit y = sin(x0) + x1 * x2 - |x3| on random inputs; returns the loss per step."""
    torch.manual_seed(seed)
    x = torch.randn(256, 4)
    y = (torch.sin(x[:, 0]) + x[:, 1] * x[:, 2] - x[:, 3].abs()).unsqueeze(1)
    model = make_model(ops)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main(ops: ModuleType | None = None) -> list[float]:
    if ops is None:
        import ksbind
        ops = ksbind.build(CONFIG)
    losses = train(ops)
    for step in (0, len(losses) // 2, len(losses) - 1):
        print(f"step {step:3d}: loss {losses[step]:.4f}")
    return losses


if __name__ == "__main__":
    losses = main()
    sys.exit(0 if losses[-1] < losses[0] else 1)
