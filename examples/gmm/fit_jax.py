"""Fit a Gaussian mixture to synthetic clustered data from JAX, through the ks
GMM objective (examples/gmm/gmm.ks, ksc's committed output) bound on the jax
target: the loss and its gradient (jax.grad through the vjp's FFI handler)
come from ks, inside one jax.jit-compiled optimiser step (optax's Adam when
optax is installed, else plain gradient steps).

    python examples/gmm/fit_jax.py [--steps 40] [--n 400] [--d 2] [--k 3]

Prints the loss at every step; exits 1 if it did not fall. The loss is the one
fit.py minimises (the objective negated, divided by N).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import reference  # noqa: E402  (examples/gmm/reference.py: the data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.3)
    parser.add_argument("--n", type=int, default=400, help="data points")
    parser.add_argument("--d", type=int, default=2, help="dimension")
    parser.add_argument("--k", type=int, default=3, help="mixture components")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import jax
    import jax.numpy as jnp
    import numpy as np

    import ksbind

    m = ksbind.build(HERE / "gmm.yaml", name="gmm_jax")  # generate + compile (cached) + import

    x64, _ = reference.clustered_data(args.n, args.d, args.k, seed=args.seed)
    x = jnp.asarray(x64.numpy().astype(np.float32))
    wishart = (jnp.float32(1.0), jnp.int32(0))
    rng = np.random.default_rng(args.seed + 1)
    start = [int(rng.integers(args.n))]
    xs = np.asarray(x)
    for _ in range(args.k - 1):  # each next mean: the point farthest from those chosen
        start.append(int(np.min(((xs[:, None, :] - xs[start][None]) ** 2).sum(-1), 1).argmax()))
    params = (jnp.zeros(args.k, jnp.float32), jnp.asarray(xs[start]), jnp.zeros((args.k, args.d), jnp.float32),
              jnp.zeros((args.k, reference.tri(args.d)), jnp.float32))

    def loss(p: tuple[jax.Array, ...]) -> jax.Array:
        return -m.gmm_objective(x, *p, wishart) / args.n

    try:
        import optax
    except ImportError:
        optax = None
    if optax is not None:
        opt = optax.adam(args.lr)
        state = opt.init(params)

        @jax.jit
        def step(p: tuple[jax.Array, ...], s: object) -> tuple[tuple[jax.Array, ...], object, jax.Array]:
            value, grads = jax.value_and_grad(loss)(p)
            updates, s = opt.update(grads, s)
            return optax.apply_updates(p, updates), s, value
    else:
        state = None

        @jax.jit
        def step(p: tuple[jax.Array, ...], s: object) -> tuple[tuple[jax.Array, ...], object, jax.Array]:
            value, grads = jax.value_and_grad(loss)(p)
            return tuple(a - args.lr * 0.1 * g for a, g in zip(p, grads)), s, value

    losses = []
    for i in range(args.steps):
        params, state, value = step(params, state)
        losses.append(float(value))
        print(f"step {i:3d} loss {losses[-1]:.6f}")
    final = float(loss(params))
    print(f"start loss {losses[0]:.6f}")
    print(f"end loss {final:.6f}")
    print(f"optimiser: {'optax.adam' if optax is not None else 'plain gradient steps'}")
    return 0 if final < losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
