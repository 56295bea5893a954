"""Per-CPU-capability kernels (ksbind/include/ksbind/cpu_capability.h): the
elementwise and vmap loops of a torch-target module are compiled for default,
AVX2 and AVX-512 and the best one this CPU runs is chosen at module load;
KSBIND_CPU_CAPABILITY caps it. Every capability this machine has must give the
same results. Uses the session's torch_ops modules (no build of its own).
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tests.e2e_support import PYTHON, REPO, built

NAMES = ("default", "avx2", "avx512")


def prefixed(prefix: str) -> Callable[[str], str]:
    """torch.testing.assert_close's msg: its message, after what was compared."""
    return lambda message: f"{prefix}: {message}"


def machine_capabilities() -> list[str]:
    """What this CPU runs, from /proc/cpuinfo (independent of the module's own check)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return ["default"]
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        pytest.skip("no /proc/cpuinfo to check the module's CPU detection against")
    flags = set(next(line for line in text.splitlines() if line.startswith("flags")).split(":", 1)[1].split())
    caps = ["default"]
    if {"avx2", "fma"} <= flags:
        caps.append("avx2")
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
            caps.append("avx512")
    return caps


@pytest.fixture
def ops(torch_ops: ModuleType) -> Iterator[ModuleType]:
    """The session's torch_ops module, its capability put back afterwards."""
    before = torch_ops.cpu_capability()
    yield torch_ops
    torch_ops._set_cpu_capability(before)


def test_detects_this_cpus_capabilities_and_uses_the_best(ops: ModuleType) -> None:
    expected = machine_capabilities()
    if platform.machine() == "x86_64" and sys.platform == "linux":
        assert ops.cpu_capabilities() == expected
    assert ops.cpu_capabilities()[0] == "default"
    assert ops.cpu_capability() == ops.cpu_capabilities()[-1]  # the session sets no KSBIND_CPU_CAPABILITY


def _cases() -> list[tuple[str, Callable[[ModuleType], object], bool]]:
    """(name, call, exact): exact where only +-*/ and comparisons run (no FMA
    contraction: the builds are strict ISO C++), else within float rounding
    (sin runs through libmvec's per-capability variants)."""
    g = torch.Generator().manual_seed(14)

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 2

    x, y, z = r(37, 129), r(3, 1, 5), r(4, 1)
    rows, a, b = r(9, 1001), r(5, 67), r(5, 67)
    d = r(3, 4, 5)
    return [
        ("relu3", lambda m: m.relu3(x), True),
        ("relu3 0-dim and empty", lambda m: (m.relu3(torch.tensor(0.5)), m.relu3(torch.zeros(0, 3))), True),
        ("relu3_vjp", lambda m: m.relu3_vjp(x, x.flip(0)), True),
        ("mulsin broadcast", lambda m: m.mulsin(y, z), False),
        ("mulsin_vjp broadcast", lambda m: m.mulsin_vjp(y, z, d), False),
        ("mulsin (1000, 1) x (1, 1000)", lambda m: m.mulsin(r(1000, 1), r(1, 1000)), False),
        ("vrelu3_rows", lambda m: m.vrelu3_rows(rows), True),
        ("sumsq_rows", lambda m: m.sumsq_rows(rows), False),
        ("scale_add_rows", lambda m: m.scale_add_rows(a, b, 3), True),
        ("stats_rows", lambda m: m.stats_rows(rows), False),
    ]


def test_every_capability_gives_the_same_results(ops: ModuleType) -> None:
    results: dict[str, list[object]] = {}
    for cap in ops.cpu_capabilities():
        assert ops._set_cpu_capability(cap) == cap and ops.cpu_capability() == cap
        results[cap] = [call(ops) for _, call, _ in _cases()]
    base = results["default"]
    for cap, got in results.items():
        for (name, _, exact), want, have in zip(_cases(), base, got):
            if exact:
                torch.testing.assert_close(have, want, rtol=0, atol=0, msg=prefixed(f"{cap}, {name}"))
            else:
                torch.testing.assert_close(have, want, rtol=1e-6, atol=1e-6, msg=prefixed(f"{cap}, {name}"))


@pytest.mark.parametrize("xs, ys", [((3, 1, 5), (4, 1)), ((), (2, 3)), ((2, 3), ()), ((1,), (5, 1, 1)),
                                    ((0, 3), (1, 3)), ((6, 1), (1, 7)), ((2, 1, 3), (2, 4, 3))])
def test_broadcasting_reads_inputs_in_place_like_eager(ops: ModuleType, xs: tuple[int, ...],
                                                       ys: tuple[int, ...]) -> None:
    x, y = torch.randn(xs), torch.randn(ys)
    for cap in ops.cpu_capabilities():
        ops._set_cpu_capability(cap)
        torch.testing.assert_close(ops.mulsin(x, y), x * torch.sin(y))
        if x.dim() == 2:  # the same values, not contiguous
            xt = x.t().contiguous().t()
            assert not xt.is_contiguous() or x.numel() <= 1 or 1 in x.shape
            torch.testing.assert_close(ops.mulsin(xt, y), x * torch.sin(y))


def test_set_capability_rejects_unknown_names(ops: ModuleType) -> None:
    before = ops.cpu_capability()
    with pytest.raises(ValueError, match="must be one of default, avx2, avx512, found 'sse9'"):
        ops._set_cpu_capability("sse9")
    assert ops.cpu_capability() == before


# ------------------------------------------------------------ KSBIND_CPU_CAPABILITY, in fresh processes

PROBE = """
import sys, warnings
sys.path.insert(0, {folder!r})
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import {name} as m
import torch
x = torch.linspace(-2, 2, 4099)
want = torch.where(x < 0, 0.0, torch.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))
torch.testing.assert_close(m.relu3(x), want)
print("capability", m.cpu_capability())
print("warnings", [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)])
"""


def test_environment_variable_caps_the_capability() -> None:
    """Each name forces that capability (or, where this CPU lacks it, the best one
    below, with a RuntimeWarning); another value fails the import, naming it."""
    mod = built("torch_ops.yaml", "torch_ops")
    code = PROBE.format(folder=str(Path(str(mod.__file__)).parent), name=mod.__name__)
    have = machine_capabilities()
    values = [*NAMES, "sse9"]
    procs = {v: subprocess.Popen([PYTHON, "-c", code], cwd=REPO, env=_env(v), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for v in values}  # in parallel: each imports torch
    out = {v: p.communicate(timeout=300) + (p.returncode,) for v, p in procs.items()}
    for v in NAMES:
        stdout, stderr, rc = out[v]
        assert rc == 0, stderr[-2000:]
        want = v if v in have else have[-1]  # have: a prefix of NAMES
        assert f"capability {want}\n" in stdout, stdout
        if want == v:
            assert "warnings []" in stdout, stdout
        else:
            assert f"KSBIND_CPU_CAPABILITY asks for '{v}'" in stdout and f"using '{want}'" in stdout, stdout
    stdout, stderr, rc = out["sse9"]
    assert rc != 0
    # an ImportError, as docs/torch.md says (the configure op's ValueError, turned into one)
    assert "ImportError: " in stderr and "ValueError" not in stderr, stderr[-2000:]
    assert "KSBIND_CPU_CAPABILITY must be one of default, avx2, avx512, found 'sse9'" in stderr, stderr


def _env(value: str) -> dict[str, str]:
    return {**os.environ, "KSBIND_CPU_CAPABILITY": value}


# ------------------------------------------------------------ fast_math: true


def test_fast_math_rownorm_is_a_softmax_on_every_capability(rownorm_fast: ModuleType) -> None:
    """With reductions reordered (fast_math), each capability sums in its own
    order: results agree with torch.softmax and each other to float rounding."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(33, 257, generator=g) * 5
    x[0] = -80.0  # a constant row far from zero: exp underflow guarded by the max
    before = rownorm_fast.cpu_capability()
    try:
        for cap in rownorm_fast.cpu_capabilities():
            assert rownorm_fast._set_cpu_capability(cap) == cap
            torch.testing.assert_close(rownorm_fast.rownorm(x), torch.softmax(x, dim=1), rtol=1e-5, atol=1e-7,
                                       msg=prefixed(cap))
    finally:
        rownorm_fast._set_cpu_capability(before)


def test_fast_math_flags_reach_only_the_users_ks_code(tmp_path: Path) -> None:
    """The units holding the user's C++ get FAST_MATH_FLAGS; ksbind's conversions (the torch
    target's op registration, the python target's generated unit) never do."""
    import dataclasses

    from ksbind import load_config
    from ksbind.backend.native import compile_plan, plan_toolchain, plan_units
    from ksbind.backend.toolchain import FAST_MATH_FLAGS
    from ksbind.codegen.output import write_generated
    from ksbind.pipeline import render_spec
    from ksbind.targets.torch import build as build_torch

    [spec] = load_config(REPO / "configs" / "torch_rownorm_fast.yaml")
    spec = dataclasses.replace(spec, output=tmp_path / "torch")
    generated = write_generated(spec.output, render_spec(spec))
    units = {u.source.name: u for u in build_torch.stable_units(spec, generated, None)}
    assert set(FAST_MATH_FLAGS) <= set(units[build_torch.UNIT].flags)
    assert not set(FAST_MATH_FLAGS) & set(units[build_torch.OPS].flags)
    strict = dataclasses.replace(spec, fast_math=False)
    assert not any(set(FAST_MATH_FLAGS) & set(u.flags) for u in build_torch.stable_units(strict, generated, None))
    torch_plan = build_torch.stable_plan(spec)
    assert (build_torch.cache_key(spec, render_spec(spec), torch_plan)
            != build_torch.cache_key(strict, render_spec(strict), torch_plan))

    python = dataclasses.replace(spec, target="python", output=tmp_path / "python")
    plan = compile_plan(python, write_generated(python.output, render_spec(python)))
    flags = {u.source.name: u.flags for u in plan_units(plan, plan_toolchain(plan), None)}
    assert set(FAST_MATH_FLAGS) <= set(flags["rownorm.cpp"])
    assert not any(set(FAST_MATH_FLAGS) & set(f) for name, f in flags.items() if name != "rownorm.cpp")
