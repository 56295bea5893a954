"""Forward+backward of elementwise relu3 on 1M float32 (autograd through the binding's
vjp) on the torch target (configs/torch_ops.yaml) against torch.compile (inductor) of
the PyTorch formula, at the machine's threads, timed interleaved after a warm-up that
compiles the inductor graph.

Run: python -m benchmarks.stable_relu3 [--quick]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

import ksbind
from benchmarks import REPO
from benchmarks.inductor_rows import relu3
from benchmarks.timing import interleaved, log, parser


def fwd_bwd(f: Callable[[Any], Any], x: torch.Tensor) -> Callable[[], object]:
    def run() -> object:
        x.grad = None
        f(x).sum().backward()
        return x.grad

    return run


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("--quick", action="store_true", help="10,000 elements, fewer batches")
    quick = bool(cli.parse_args().quick)
    n = 10_000 if quick else 1_000_000
    m = ksbind.build(REPO / "configs" / "torch_ops.yaml", name="torch_ops", quiet=True)
    compiled = torch.compile(relu3)
    x = (torch.rand(n) * 4 - 2).requires_grad_()
    log("compiling the inductor graph (forward and backward)")
    sides = [fwd_bwd(m.relu3, x), fwd_bwd(compiled, x)]
    ours, inductors = (side() for side in sides)
    torch.testing.assert_close(ours, inductors)
    t_ours, t_inductor = interleaved(sides, 5 if quick else 20, 5 if quick else 15)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {n:,} float32; medians per call")
    print(f"torch target {t_ours * 1e3:.3f} ms, inductor {t_inductor * 1e3:.3f} ms; "
          f"torch target / inductor {t_ours / t_inductor:.2f}  (target <= 0.75)")


if __name__ == "__main__":
    main()
