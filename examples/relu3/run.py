"""The README's main job: generate, build and call the relu3 example.

Builds configs/relu3.yaml (ks target; the first run compiles, later runs
import the cached module), calls vrelu3 and its vjp on a numpy array and
prints the inputs, results and gradient, checked against numpy.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    import ksbind

    t0 = time.perf_counter()
    m = ksbind.build(REPO / "configs" / "relu3.yaml")  # generate + compile (cached) + import
    print(f"built {m.__name__} in {time.perf_counter() - t0:.2f} s: {m.__file__}")

    x = np.array([-1.0, -0.25, 0.0, 0.5, 0.9, 1.0, 2.0, 3.5], dtype=np.float32)
    dret = np.ones_like(x)
    y = np.array(m.vrelu3(x))               # a copy: results live in the arena until reset_allocator()
    dx = np.array(m.vrelu3_vjp(x, dret))    # the vjp: gradient of sum(vrelu3(x)) with respect to x
    m.reset_allocator()

    expected_y = np.where(x < 0, 0, np.where(x < 1, x ** 3 / 3, x - 2 / 3))
    expected_dx = np.where(x < 0, 0, np.where(x < 1, x * x, 1))
    np.set_printoptions(precision=4, suppress=True)
    print("x               =", x)
    print("vrelu3(x)       =", y)
    print("vrelu3_vjp(x, 1)=", dx)
    ok = np.allclose(y, expected_y, atol=1e-6) and np.allclose(dx, expected_dx, atol=1e-6)
    print("matches numpy:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
