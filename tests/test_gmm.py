"""examples/gmm: the ks GMM objective (ksc's committed output, built on the
bundled runtime without ksc) against the PyTorch reference
(examples/gmm/reference.py, float64): through the torch target (value and
.backward() into every argument, as fit.py uses it; bad shapes); ksc's
own programs/gmm.ks objective on the torch target against the same reference;
fit.py lowers the loss; the committed output is what ksc makes of gmm.ks today.

Two module builds (gmm_torch, ksc's gmm on the torch target), each once per
session. (The example's python-target module, gmm.yaml's `gmm`, is not built
here: CI's time; its vjp is what .backward() uses on the torch target.)
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import ksbind
from ksbind.pipeline import build_spec
from tests.e2e_support import REPO, session_cache_dir, session_output_dir
from tests.test_ksc import KSC, PROGRAMS, RUNTIME, needs_ksc

GMM = REPO / "examples" / "gmm"

#: float32 ks against float64 torch: what the example promises (measured: ~1e-6).
RTOL = 1e-4
#: (n, d, k) of the random problems, and the Wishart parameters.
SIZES = [(5, 3, 4), (40, 4, 3), (120, 6, 5), (60, 2, 7)]
WISHART = (1.3, 2)


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gmm_reference", GMM / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


R = _reference()


def _build(config: Path, name: str) -> ModuleType:
    spec = next(s for s in ksbind.load_config(config) if s.name == name)
    spec = dataclasses.replace(spec, output=session_output_dir() / "gmm" / name)
    return build_spec(spec, cache_dir=session_cache_dir(), quiet=True)


def _ksc_gmm(folder: Path, target: str) -> ModuleType:
    """ksc's own programs/gmm.ks objective (`objective`) and examples/gmm/gmm_fast.ks's
    (`fast`), compiled by ksc, on ksc's runtime: one module, one build."""
    if not KSC.is_file():
        pytest.skip(f"ksc is not in {KSC.parent.parent} (shared/ksc absent)")
    name = f"ksc_gmm_{target}"
    cfg = folder / f"{name}.yaml"
    cfg.write_text(f"name: {name}\ntarget: {target}\n"
                   f"ks: [{PROGRAMS / 'gmm.ks'}, {GMM / 'gmm_fast.ks'}]\nksc: {{path: {KSC}, runtime: {RUNTIME}}}\n"
                   "bindings:\n  - {name: objective, function: gmm_knossos_gmm_objective, vjp: objective_vjp}\n"
                   "  - {name: fast, function: gmm_objective, vjp: fast_vjp}\n")
    return _build(cfg, name)


@pytest.fixture(scope="module")
def ksc_gmm_torch(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return _ksc_gmm(tmp_path_factory.mktemp("ksc_gmm"), "torch")


def _rel(actual: Any, expected: torch.Tensor) -> float:
    """Largest error relative to the largest magnitude of the expected value."""
    a = torch.as_tensor(actual, dtype=torch.float64)
    return float((a - expected).abs().max() / expected.abs().max())


def _reference_and_grads(inputs: Any, dret: float) -> tuple[float, list[torch.Tensor]]:
    leaves = [t.clone().requires_grad_() for t in inputs[:5]]
    gamma = torch.tensor(inputs.wishart[0], dtype=torch.float64, requires_grad=True)
    value = R.gmm_objective(*leaves, (gamma, inputs.wishart[1]))
    (value * dret).backward()
    return value.item(), [t.grad for t in leaves] + [gamma.grad]


@needs_ksc
def test_committed_ksc_output_is_current() -> None:
    """gmm.kso/gmm.cpp/ksbind-edefs.h are what ksc makes of gmm.ks now
    (after editing gmm.ks, run examples/gmm/regenerate.py)."""
    env = {**os.environ, "KSC": str(KSC)}
    done = subprocess.run([sys.executable, str(GMM / "regenerate.py"), "--check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "current" in done.stdout


# ------------------------------------------------------------ the torch target


@pytest.fixture(scope="module")
def gmm_torch() -> ModuleType:
    """examples/gmm/gmm.yaml's torch module (what fit.py imports)."""
    return _build(GMM / "gmm.yaml", "gmm_torch")


def _check_torch_against_reference(objective: Any, sizes: Sequence[tuple[int, int, int]]) -> list[float]:
    """Rank-2 float32 tensors for the Vec (Vec Float) arguments, a 0-dim result,
    gradients by .backward() for every tensor, gamma (a 0-dim tensor) included:
    all within RTOL of the reference. The errors seen."""
    errors = []
    for seed, (n, d, k) in enumerate(sizes):
        inputs = R.random_inputs(n, d, k, seed=seed, wishart=WISHART)
        leaves = [t.to(torch.float32).requires_grad_() for t in inputs[:5]]
        gamma = torch.tensor(WISHART[0], requires_grad=True)
        value = objective(*leaves, (gamma, WISHART[1]))
        assert value.shape == () and value.dtype == torch.float32
        (value * 0.75).backward()
        expected, grads = _reference_and_grads(inputs, dret=0.75)
        errors.append(abs(value.item() - expected) / abs(expected))
        assert errors[-1] < RTOL, ((n, d, k), value, expected)
        for name, leaf, ref in zip(["x", "alphas", "means", "qs", "ls", "gamma"], [*leaves, gamma], grads):
            assert leaf.grad is not None and leaf.grad.shape == leaf.shape, name
            errors.append(_rel(leaf.grad, ref))
            assert errors[-1] < RTOL, ((n, d, k), name, leaf.grad, ref)
    return errors


def test_bad_shapes_raise_not_crash(gmm_torch: ModuleType) -> None:
    inputs = R.random_inputs(4, 3, 2, seed=0, wishart=WISHART)
    x, alphas, means, qs, ls = [t.to(torch.float32) for t in inputs[:5]]
    with pytest.raises(RuntimeError, match="Assert failed"):  # ls rows of the wrong length for d = 3
        gmm_torch.gmm_objective(x, alphas, means, qs, ls[:, :2], inputs.wishart)
    with pytest.raises(RuntimeError, match="Assert failed"):  # more weights than means: an index out of range
        gmm_torch.gmm_objective(x, torch.cat([alphas, torch.zeros(1)]), means, qs, ls, inputs.wishart)
    assert gmm_torch.allocator_top() == 0
    assert gmm_torch.gmm_objective(x, alphas, means, qs, ls, inputs.wishart).item() == pytest.approx(
        R.gmm_objective(*inputs).item(), rel=RTOL)


def test_torch_objective_and_backward_match_the_reference(gmm_torch: ModuleType) -> None:
    errors = _check_torch_against_reference(gmm_torch.gmm_objective, SIZES)
    print(f"examples/gmm (torch) vs reference: largest relative error {max(errors):.2e}")


def test_ksc_own_gmm_on_the_torch_target(ksc_gmm_torch: ModuleType) -> None:
    """ksc's programs/gmm.ks computes ADBench's formula with the same conventions
    (Q's strict lower triangle packed column by column; the prior added as ADBench
    writes it), so the same reference holds for it."""
    errors = _check_torch_against_reference(ksc_gmm_torch.objective, SIZES[:2])
    print(f"ksc's gmm.ks (torch) vs reference: largest relative error {max(errors):.2e}")


#: gmm_fast.ks against the float64 reference: what the example promises.
FAST_RTOL = 1e-5


def test_fast_gmm_matches_the_reference_to_1e5(ksc_gmm_torch: ModuleType) -> None:
    """examples/gmm/gmm_fast.ks (the form docs/ks.md teaches), through ksc and the torch
    target: objective and every gradient (.backward(), gamma's too) within 1e-5 of
    float64 PyTorch, on sizes up to N=300, D=8, K=10 (and D=1: no lower triangle)."""
    errors = []
    for seed, (n, d, k) in enumerate([*SIZES, (300, 8, 10), (7, 1, 3)]):
        inputs = R.random_inputs(n, d, k, seed=seed, wishart=WISHART)
        leaves = [t.to(torch.float32).requires_grad_() for t in inputs[:5]]
        gamma = torch.tensor(WISHART[0], requires_grad=True)
        value = ksc_gmm_torch.fast(*leaves, (gamma, WISHART[1]))
        (value * 0.75).backward()
        expected, grads = _reference_and_grads(inputs, dret=0.75)
        errors.append(abs(value.item() - expected) / abs(expected))
        assert errors[-1] < FAST_RTOL, ((n, d, k), value.item(), expected)
        for name, leaf, ref in zip(["x", "alphas", "means", "qs", "ls", "gamma"], [*leaves, gamma], grads):
            assert leaf.grad is not None and leaf.grad.shape == leaf.shape, name
            errors.append(_rel(leaf.grad, ref) if ref.numel() else 0.0)
            assert errors[-1] < FAST_RTOL, ((n, d, k), name, leaf.grad, ref)
    print(f"gmm_fast.ks (torch) vs reference: largest relative error {max(errors):.2e}")


def test_fast_gmm_agrees_with_ksc_own_gmm(ksc_gmm_torch: ModuleType) -> None:
    """The same objective and gradients as ksc's programs/gmm.ks, to 1e-5 (both float32)."""
    inputs = R.random_inputs(50, 5, 4, seed=11, wishart=WISHART)
    args = [t.to(torch.float32) for t in inputs[:5]]
    ours, theirs = ksc_gmm_torch.fast(*args, WISHART), ksc_gmm_torch.objective(*args, WISHART)
    assert ours.item() == pytest.approx(theirs.item(), rel=FAST_RTOL)
    g_ours = ksc_gmm_torch.fast_vjp(*args, WISHART, 1.0)
    g_theirs = ksc_gmm_torch.objective_vjp(*args, WISHART, 1.0)
    for a, b in zip(g_ours[:5], g_theirs[:5]):
        assert a.shape == b.shape
        assert _rel(a, b.to(torch.float64)) < FAST_RTOL
    assert g_ours[5][0].item() == pytest.approx(g_theirs[5][0].item(), rel=FAST_RTOL)  # d gamma


def test_the_two_ks_objectives_agree(gmm_torch: ModuleType, ksc_gmm_torch: ModuleType) -> None:
    inputs = R.random_inputs(30, 3, 4, seed=7, wishart=(0.8, 0))
    args = [t.to(torch.float32) for t in inputs[:5]]
    assert gmm_torch.gmm_objective(*args, inputs.wishart).item() == pytest.approx(
        ksc_gmm_torch.objective(*args, inputs.wishart).item(), rel=1e-5)


def test_fit_lowers_the_loss(gmm_torch: ModuleType) -> None:
    """examples/gmm/fit.py, as a user runs it (its module comes from the test cache)."""
    env = {**os.environ, "KSBIND_CACHE_DIR": str(session_cache_dir())}
    done = subprocess.run([sys.executable, str(GMM / "fit.py"), "--steps", "30"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = [line for line in done.stdout.splitlines() if line.startswith("step")]
    assert len(steps) == 30
    summary = next(line for line in done.stdout.splitlines() if line.startswith("loss "))
    before, after = (float(v) for v in summary.split()[1:4:2])
    assert after < 0.7 * before, summary
    print(summary)
