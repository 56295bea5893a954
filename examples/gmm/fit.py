"""Fit a Gaussian mixture to synthetic clustered data with torch.optim.Adam,
through the ks GMM objective (examples/gmm/gmm.ks, ksc's committed output)
bound on the torch target: the loss and its gradients come from ks.

    python examples/gmm/fit.py [--steps 40] [--n 400] [--d 2] [--k 3]

Prints the loss at every step; exits 1 if it did not fall.

The loss is the ADBench objective negated and divided by N: the negative
log-likelihood per point (the objective is a log-likelihood, to be
maximised), plus ADBench's Wishart term with its sign flipped as well (in
ADBench the term is added to the log-likelihood as written). With gamma = 1
that term is small next to the likelihood of a few hundred points.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import reference  # noqa: E402  (examples/gmm/reference.py)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.3)
    parser.add_argument("--n", type=int, default=400, help="data points")
    parser.add_argument("--d", type=int, default=2, help="dimension")
    parser.add_argument("--k", type=int, default=3, help="mixture components")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import ksbind

    m = ksbind.build(HERE / "gmm.yaml", name="gmm_torch")  # generate + compile (cached) + import

    x64, centres = reference.clustered_data(args.n, args.d, args.k, seed=args.seed)
    x = x64.to(torch.float32)
    wishart = (1.0, 0)  # (gamma, m)

    # Start: equal weights, unit covariances, means at k data points far apart
    # (a random one, then each time the point farthest from those chosen).
    g = torch.Generator().manual_seed(args.seed + 1)
    start = [int(torch.randint(args.n, (1,), generator=g))]
    for _ in range(args.k - 1):
        start.append(int(torch.cdist(x, x[start]).min(1).values.argmax()))
    alphas = torch.zeros(args.k, requires_grad=True)
    means = x[start].clone().requires_grad_()
    qs = torch.zeros(args.k, args.d, requires_grad=True)
    ls = torch.zeros(args.k, reference.tri(args.d), requires_grad=True)
    params = [alphas, means, qs, ls]
    opt = torch.optim.Adam(params, lr=args.lr)

    losses = []
    for step in range(args.steps):
        opt.zero_grad()
        loss = -m.gmm_objective(x, alphas, means, qs, ls, wishart) / args.n
        loss.backward()
        opt.step()
        losses.append(loss.item())
        print(f"step {step:3d}  loss {losses[-1]:.5f}")

    with torch.no_grad():
        final = -m.gmm_objective(x, alphas, means, qs, ls, wishart).item() / args.n
        a64, mu64, q64, l64 = (p.detach().double() for p in params)
        check = -reference.gmm_objective(x64, a64, mu64, q64, l64, wishart).item() / args.n
    print(f"loss {losses[0]:.5f} -> {final:.5f} (PyTorch reference at the fitted parameters: {check:.5f})")
    order = torch.cdist(centres, means.detach().double()).argmin(1)
    print("true centres -> nearest fitted mean:")
    for c, i in zip(centres.tolist(), order.tolist()):
        print(f"  {[round(v, 2) for v in c]} -> {[round(v, 2) for v in means[i].tolist()]}")
    fell = final < losses[0]
    print("the loss fell" if fell else "the loss did not fall")
    return 0 if fell else 1


if __name__ == "__main__":
    sys.exit(main())
