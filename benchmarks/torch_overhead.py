"""Torch target speed, measured side by side in one run.

1. elementwise relu3 over 1M float32 (ksbind ``mode: elementwise``) vs an
   eager PyTorch composite of the same formula (``torch.where``).
2. per-call overhead on a 10-element tensor: ksbind's torch entry point
   (the raw extension function, and the autograd-aware function users call)
   vs a hand-written ``torch.utils.cpp_extension.load_inline`` equivalent.
3. the entry's cost with a do-nothing kernel (``poke``: touches one element)
   on 1 vs 1M elements: equal times mean the input is not copied.

Details behind the torch rows of benchmarks/run.py (the table of record).
Run: python -m benchmarks.torch_overhead  (builds configs/torch_ops.yaml and
the inline extension the first time; later runs use the caches).
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable

import torch

import ksbind
from benchmarks import REPO

# The hand-written load_inline reference is the one benchmarks/run.py uses.
from benchmarks.run import HAND_TORCH as INLINE_CPP


def best_per_call(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Best mean seconds per call over `repeat` runs of `number` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def eager_relu3(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 0, torch.zeros_like(x), torch.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))


def eager_relu3_clamp(x: torch.Tensor) -> torch.Tensor:
    """The same function without torch.where (faster in eager PyTorch)."""
    return x.clamp(0, 1).pow(3) / 3 + (x - 1).clamp(min=0)


def main() -> int:
    torch.manual_seed(0)
    m = ksbind.build(REPO / "configs" / "torch_ops.yaml", name="torch_ops", quiet=True)
    from torch.utils.cpp_extension import load_inline

    inline = load_inline("ksbind_bench_inline", cpp_sources=[INLINE_CPP], extra_cflags=["-O3"], verbose=False)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    x = torch.randn(1_000_000)
    assert torch.allclose(m.relu3(x), eager_relu3(x), atol=1e-6)
    assert torch.allclose(m.relu3(x), eager_relu3_clamp(x), atol=1e-5)
    threads = torch.get_num_threads()
    for n_threads in sorted({1, threads}):
        torch.set_num_threads(n_threads)
        ks_t = best_per_call(lambda: m.relu3(x), 50)
        eager_t = best_per_call(lambda: eager_relu3(x), 50)
        clamp_t = best_per_call(lambda: eager_relu3_clamp(x), 50)
        print(f"elementwise relu3, 1M float32, {n_threads} thread(s): ksbind {ks_t * 1e3:.3f} ms, "
              f"eager torch.where {eager_t * 1e3:.3f} ms, ratio {ks_t / eager_t:.2f} "
              f"(eager clamp form {clamp_t * 1e3:.3f} ms, ratio {ks_t / clamp_t:.2f})")
    torch.set_num_threads(threads)

    small = torch.randn(10)
    assert torch.allclose(m.vrelu3(small), inline.vrelu3(small))
    n = 100_000
    # m.vrelu3 is the C++ entry itself (it checks grad mode in C++). Alternate the
    # two measurements to share any drift in machine load.
    entry_t = inline_t = float("inf")
    for _ in range(3):
        entry_t = min(entry_t, best_per_call(lambda: m.vrelu3(small), n))
        inline_t = min(inline_t, best_per_call(lambda: inline.vrelu3(small), n))
    print(f"per call, 10 elements: ksbind entry {entry_t * 1e6:.2f} us, load_inline {inline_t * 1e6:.2f} us, "
          f"ratio {entry_t / inline_t:.2f}")
    needs_grad = torch.randn(10, requires_grad=True)
    grad_t = best_per_call(lambda: m.vrelu3(needs_grad), n // 10)
    lib = ksbind.build(REPO / "configs" / "torch_ops.yaml", name="torch_ops_lib", quiet=True)
    op_t = best_per_call(lambda: lib.vrelu3(small), n // 10)
    print(f"  for reference: with requires_grad (builds the autograd graph) {grad_t * 1e6:.2f} us; "
          f"as torch.ops.ksbind_ops.vrelu3 (torch.library) {op_t * 1e6:.2f} us")

    one, big = torch.zeros(1), torch.zeros(1_000_000)
    one_t = big_t = float("inf")
    for _ in range(3):
        one_t = min(one_t, best_per_call(lambda: m.poke(one, 1.0), n // 5))
        big_t = min(big_t, best_per_call(lambda: m.poke(big, 1.0), n // 5))
    copy_t = best_per_call(lambda: big.clone(), 200)
    print(f"do-nothing kernel: 1 element {one_t * 1e6:.2f} us, 1M elements {big_t * 1e6:.2f} us "
          f"(ratio {big_t / one_t:.2f}; copying the 1M input would add ~{copy_t * 1e6:.0f} us: no copy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
