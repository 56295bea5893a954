"""ksbind's elementwise and vmap kernels against
torch.compile (inductor, CPU) of the same PyTorch formula, with eager PyTorch
as a second reference; at 2 threads (the targets) and at 1 thread (reported).

The three sides of a row are timed interleaved (A, B, C, A, B, C, ...) after
a warm-up that also compiles the inductor graphs, outside the timing.
Rows of benchmarks/run.py (its "vs inductor" group).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from benchmarks.timing import Row, interleaved


@dataclass(frozen=True)
class Shapes:
    elements: int                  # relu3 rows: a 1-d tensor of this many floats
    broadcast: int                 # (n, 1) against (1, n)
    rows: tuple[int, int]          # vmap rownorm over (rows, columns)
    number: int                    # calls per timed batch
    repeats: int                   # timed batches per side


FULL = Shapes(1_000_000, 1000, (4096, 256), 20, 15)
QUICK = Shapes(10_000, 100, (64, 32), 2, 2)

#: (row, target at 2 threads)
TARGETS = {"relu3 forward": "<= 0.9", "relu3 forward+backward": "<= 0.75",
           "broadcast muladd_relu": "<= 1.0", "vmap rownorm": "<= 1.2", "vmap rownorm, fast_math": "<= 1.2"}


def relu3(x: Any) -> Any:
    import torch

    return torch.where(x < 0, 0.0, torch.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))


def muladd_relu(x: Any, y: Any) -> Any:
    import torch

    return x * y + torch.where(x > y, x - y, 0.0)


def rownorm(x: Any) -> Any:
    import torch

    e = torch.exp(x - x.max(dim=1, keepdim=True).values)
    return e / e.sum(dim=1, keepdim=True)


def measure(module: ModuleType, shapes: Shapes, log: Callable[[str], None], inductor: bool = True,
            fast_module: ModuleType | None = None) -> list[Row]:
    """Rows for `module` (bench_torch: relu3 with a vjp and muladd_relu in
    elementwise mode, rownorm in vmap mode), and with `fast_module` (rownorm in
    vmap mode built with `fast_math: true`) a row for it too. inductor=False:
    eager is both references (only for a --quick run that must not spend a
    minute compiling)."""
    import torch

    g = torch.Generator().manual_seed(14)
    x = torch.randn(shapes.elements, generator=g) * 2
    xg = x.clone().requires_grad_(True)
    dy = torch.randn(shapes.elements, generator=g)
    a = torch.randn(shapes.broadcast, 1, generator=g)
    b = torch.randn(1, shapes.broadcast, generator=g)
    m = torch.randn(*shapes.rows, generator=g) * 3

    def fwd_bwd(f: Callable[[Any], Any]) -> Callable[[], object]:
        return lambda: torch.autograd.grad(f(xg), xg, dy)

    compiled: dict[str, Callable[..., Any]] = {}
    for name, fn in (("relu3", relu3), ("relu3_grad", relu3), ("muladd_relu", muladd_relu), ("rownorm", rownorm)):
        compiled[name] = torch.compile(fn) if inductor else fn
    cases: list[tuple[str, str, list[Callable[[], object]], Any, Any]] = [
        ("relu3 forward", f"elementwise relu3, {shapes.elements:,} floats",
         [lambda: module.relu3(x), lambda: compiled["relu3"](x), lambda: relu3(x)],
         lambda: module.relu3(x), lambda: relu3(x)),
        ("relu3 forward+backward", f"elementwise relu3 + its vjp (autograd), {shapes.elements:,} floats",
         [fwd_bwd(module.relu3), fwd_bwd(compiled["relu3_grad"]), fwd_bwd(relu3)],
         fwd_bwd(module.relu3), fwd_bwd(relu3)),
        ("broadcast muladd_relu", f"elementwise x*y + relu(x-y), ({shapes.broadcast}, 1) with (1, {shapes.broadcast})",
         [lambda: module.muladd_relu(a, b), lambda: compiled["muladd_relu"](a, b), lambda: muladd_relu(a, b)],
         lambda: module.muladd_relu(a, b), lambda: muladd_relu(a, b)),
        ("vmap rownorm", f"vmap of a ks softmax per row, {shapes.rows[0]} x {shapes.rows[1]}",
         [lambda: module.rownorm(m), lambda: compiled["rownorm"](m), lambda: rownorm(m)],
         lambda: module.rownorm(m), lambda: rownorm(m)),
    ]
    if fast_module is not None:
        cases.append(("vmap rownorm, fast_math", "the same, module built with fast_math: true",
                      [lambda: fast_module.rownorm(m), lambda: compiled["rownorm"](m), lambda: rownorm(m)],
                      lambda: fast_module.rownorm(m), lambda: rownorm(m)))
    for _, _, _, ours, ref in cases:  # same answers before timing
        torch.testing.assert_close(ours(), ref(), rtol=1e-5, atol=1e-6)
    reference = "torch.compile (inductor)" if inductor else "eager (torch.compile skipped in --quick)"
    before = torch.get_num_threads()
    rows = []
    try:
        for threads in (2, 1):
            torch.set_num_threads(threads)
            for name, what, fns, _, _ in cases:
                log(f"vs inductor: {name}, {threads} thread{'s' if threads > 1 else ''}")
                # the warm-up compiles the inductor graphs, outside the timing
                t_ks, t_compiled, t_eager = interleaved(fns, shapes.number, shapes.repeats,
                                                        warmup=max(2, shapes.number // 5))
                rows.append(Row(f"vs inductor: {name}, {threads} thr", what, f"{reference} of the PyTorch formula",
                                     t_ks * 1e6, t_compiled * 1e6, "us", TARGETS[name], eager_value=t_eager * 1e6))
    finally:
        torch.set_num_threads(before)
    return rows
