"""examples/gmm on the jax target: ksc's GMM objective and its gradient from
JAX (jax.grad through the vjp's handler, under jax.jit too) match the torch
target's to 1e-5 relative, and examples/gmm/fit_jax.py lowers the loss.
Skips without jax except in CI (as tests/test_jax.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from types import ModuleType

import numpy as np
import pytest
import torch

from tests.e2e_support import session_cache_dir
from tests.test_gmm import GMM, WISHART, R, _build, gmm_torch  # noqa: F401  (gmm_torch: a fixture)

jax = pytest.importorskip("jax") if not os.environ.get("CI") else __import__("jax")
import jax.numpy as jnp  # noqa: E402


@pytest.fixture(scope="module")
def gmm_jax() -> ModuleType:
    return _build(GMM / "gmm.yaml", "gmm_jax")


def _rel(a: object, b: object) -> float:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a64 - b64).max() / max(np.abs(b64).max(), 1e-30))


@pytest.mark.parametrize("n, d, k", [(40, 4, 3), (120, 6, 5)])
def test_objective_and_gradient_match_the_torch_target(gmm_jax: ModuleType, gmm_torch: ModuleType,  # noqa: F811
                                                       n: int, d: int, k: int) -> None:
    inputs = R.random_inputs(n, d, k, dtype=torch.float32, wishart=WISHART)
    tensors = [t.clone().requires_grad_(True) for t in inputs[:5]]
    value = gmm_torch.gmm_objective(*tensors, inputs.wishart)
    value.backward()
    arrays = [jnp.asarray(t.detach().numpy()) for t in inputs[:5]]
    wishart = (jnp.float32(WISHART[0]), jnp.int32(WISHART[1]))

    def objective(*a: object) -> object:
        return gmm_jax.gmm_objective(*a, wishart)

    assert _rel(objective(*arrays), value.item()) < 1e-5
    grads = jax.jit(jax.grad(objective, argnums=tuple(range(5))))(*arrays)
    for g, t in zip(grads, tensors):
        assert t.grad is not None
        assert _rel(g, t.grad.numpy()) < 1e-5


def test_fit_jax_lowers_the_loss() -> None:
    env = {**os.environ, "KSBIND_CACHE_DIR": str(session_cache_dir())}  # the test cache, not the user's
    proc = subprocess.run([sys.executable, str(GMM / "fit_jax.py"), "--steps", "30"], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, last = (float(line.split()[-1]) for line in proc.stdout.splitlines() if line.startswith(("start", "end")))
    assert last < first
