"""ksbind.compile end to end with the real ksc: each construct's values against the same Python
run by PyTorch (or by Python on floats), gradients against autograd's (or central differences
in float64), on many random inputs that reach both sides of every branch; Knossos's examples
unchanged but for the decorator; the python and jax targets; a later process reusing the build."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy
import pytest
import torch

import ksbind
from tests import frontend_functions as ff
from tests.test_ksc import KSC, RUNTIME, needs_ksc

pytestmark = [needs_ksc, pytest.mark.slow]
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compile-cache")


@pytest.fixture(autouse=True)
def _ksc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KSC", str(KSC))
    monkeypatch.setenv("KSC_RUNTIME", str(RUNTIME))
    yield


def compiled(fn: Callable[..., Any], cache: Path, **options: Any) -> ksbind.compile_api.CompiledFunction:
    return ksbind.compile(fn, cache_dir=cache, quiet=True, **options)


def scalar_grads(fn: Callable[..., Any], args: list[float], h: float = 1e-4) -> list[float]:
    """Central differences of a Python function of floats, in float64."""
    grads = []
    for k in range(len(args)):
        up, down = list(args), list(args)
        up[k] += h
        down[k] -= h
        grads.append((fn(*up) - fn(*down)) / (2 * h))
    return grads


def test_sqrl_values_and_gradients_on_both_branches(cache: Path) -> None:
    sqrl = compiled(ff.sqrl, cache)
    torch.manual_seed(0)
    signs = set()
    for k in range(24):
        x = (torch.randn(4, 4) + (2.0 if k % 2 else -2.0) * torch.rand(())).requires_grad_()
        signs.add(bool(torch.sum(x) < 0))
        value = sqrl(x)
        value.backward()
        ref_x = x.detach().clone().requires_grad_()
        ref = ff.sqrl(ref_x)
        ref.backward()
        torch.testing.assert_close(value, ref, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-5, atol=1e-6)
    assert signs == {True, False}
    assert sqrl.ks is not None and "(def sqrl Float" in sqrl.ks
    assert sqrl.__wrapped__ is ff.sqrl


def test_relu3_and_gelu_elementwise_against_torch(cache: Path) -> None:
    relu3 = compiled(ff.relu3, cache, mode="elementwise")
    gelu = compiled(ff.gelu, cache, mode="elementwise")
    x = torch.linspace(-3, 3, 600).reshape(3, 200).requires_grad_()  # every branch of relu3
    y = relu3(x)
    y.sum().backward()
    ref_x = x.detach().clone().requires_grad_()
    ff.vrelu3_pytorch(ref_x).sum().backward()
    torch.testing.assert_close(y, ff.vrelu3_pytorch(x.detach()), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-5, atol=1e-5)
    g = gelu(x.detach())
    torch.testing.assert_close(g, torch.nn.functional.gelu(x.detach()), rtol=1e-5, atol=1e-6)
    assert torch.autograd.gradcheck(lambda t: gelu(t.float()).double(), torch.randn(5, dtype=torch.float64,
                                                                                  requires_grad=True),
                                    eps=1e-3, atol=1e-2, rtol=1e-2)


def test_elementwise_selects_compute_what_the_branches_do(cache: Path) -> None:
    """mode='elementwise' runs its branches as selects in the forward (every branch computed, one chosen):
    the same floats as the branches, bit for bit, and the vjp of the branches as written: where the
    branch not taken overflows (x ** 3 below -1.8e19, whose derivative is inf), the gradient is the taken
    branch's, not 0 * inf."""
    relu3 = compiled(ff.relu3, cache, mode="elementwise")
    x = torch.tensor([-1e20, -3e12, -1.0, -0.0, 0.0, 1e-3, 0.5, 0.999, 1.0, 1.5, 1e20, float("inf")],
                     requires_grad=True)
    y = relu3(x)
    assert str(relu3.ks).count("(ksb_select ") == 2
    f32 = numpy.float32
    expected = [f32(0.0) if v < 0 else f32(0.3333333333333333) * ((v * v) * v) if v < 1 else v - f32(0.6666666666666666)
                for v in x.detach().numpy()]
    assert torch.equal(y.detach(), torch.tensor(numpy.array(expected, dtype=numpy.float32))), (y, expected)
    y.sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all()), x.grad
    torch.testing.assert_close(x.grad, torch.where(x < 0, 0.0, torch.where(x < 1, x * x, 1.0)).detach())
    two = compiled(ff.two_branches, cache, mode="elementwise")
    torch.manual_seed(5)
    a = (torch.rand(300) + 0.2) * torch.sign(torch.randn(300))
    b = (torch.rand(300) + 0.2) * torch.sign(torch.randn(300))
    got = two(a, b).tolist()
    for i in range(0, 300, 7):  # each against the Python function, and its gradient against differences
        assert got[i] == pytest.approx(ff.two_branches(float(a[i]), float(b[i])), rel=1e-5)
    ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
    two(ag, bg).sum().backward()
    assert ag.grad is not None and bg.grad is not None
    for i in range(0, 300, 7):
        fd = scalar_grads(ff.two_branches, [float(a[i]), float(b[i])], h=1e-6)
        assert [float(ag.grad[i]), float(bg.grad[i])] == pytest.approx(fd, rel=1e-3, abs=1e-3), i


# (function, argument maker): tensor functions are checked against PyTorch's autograd
TENSOR_CASES: list[tuple[Callable[..., Any], Callable[[], list[torch.Tensor]]]] = [
    (ff.tensor_calls, lambda: [torch.randn(3, 4)]),
    (ff.where_max, lambda: [torch.randn(7), torch.randn(7)]),
    (ff.reductions, lambda: [torch.randn(3, 3)]),
    (ff.matrix_ops, lambda: [torch.randn(3, 3), torch.randn(3)]),
    (ff.shapes_and_indexing, lambda: [torch.randn(3, 4)]),
    (ff.generator_sum, lambda: [torch.randn(6)]),
    (ff.comprehension, lambda: [torch.randn(5)]),
    (ff.loop_over_tensor, lambda: [torch.randn(6)]),
    (ff.calls_helper, lambda: [torch.randn(5)]),
    (ff.calls_compiled, lambda: [torch.randn(5)]),
    (ff.far, lambda: [torch.randn(2, 3), torch.randn(2, 5)]),
    (ff.stacked, lambda: [torch.randn(4), torch.randn(4)]),
    # sums of elementwise code: 20 columns (sixteen running sums and a tail of four), then 5 (ksc's order)
    (ff.sum_and_values, lambda: [torch.randn(3, 20), torch.randn(())]),
    (ff.sum_and_values, lambda: [torch.randn(3, 5), torch.randn(())]),
    (ff.three_values, lambda: [torch.randn(4), torch.randn(())]),
]


@pytest.mark.parametrize("fn,make", TENSOR_CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(TENSOR_CASES)])
def test_tensor_constructs_match_pytorch(fn: Callable[..., Any], make: Callable[[], list[torch.Tensor]],
                                         cache: Path) -> None:
    c = compiled(fn, cache)
    torch.manual_seed(1)
    for _ in range(8):
        args = [a.requires_grad_() for a in make()]
        ref_args = [a.detach().clone().requires_grad_() for a in args]
        out, ref = c(*args), fn(*ref_args)
        outs = out if isinstance(out, tuple) else (out,)
        refs = ref if isinstance(ref, tuple) else (ref,)
        for o, r in zip(outs, refs):
            torch.testing.assert_close(o, torch.as_tensor(r, dtype=torch.float32), rtol=1e-5, atol=1e-5)
        torch.stack([o.sum() for o in outs]).sum().backward()
        torch.stack([torch.as_tensor(r).sum() for r in refs]).sum().backward()
        for a, r in zip(args, ref_args):
            torch.testing.assert_close(a.grad, r.grad, rtol=1e-4, atol=1e-5)


def test_loop_with_an_integer_argument(cache: Path) -> None:
    c = compiled(ff.accumulate, cache)
    v = torch.randn(6, requires_grad=True)
    out = c(v, 4)
    out.backward()
    ref_v = v.detach().clone().requires_grad_()
    ff.accumulate(ref_v, 4).backward()
    torch.testing.assert_close(out, ff.accumulate(v.detach(), 4))
    torch.testing.assert_close(v.grad, ref_v.grad)


# scalar functions: values against Python on floats, gradients against central differences
SCALAR_CASES: list[tuple[Callable[..., Any], Callable[[random.Random], list[Any]]]] = [
    (ff.arithmetic, lambda r: [r.uniform(0.5, 2), r.uniform(-2, 2)]),
    (ff.comparisons, lambda r: [r.choice([r.uniform(-1, 2), 2.0]), r.uniform(-1, 1)]),
    (ff.math_calls, lambda r: [r.uniform(-2, 2)]),
    (ff.gelu_approx_sigmoid, lambda r: [r.uniform(-3, 3)]),
    (ff.relu3, lambda r: [r.uniform(-2, 2)]),
]


@pytest.mark.parametrize("fn,make", SCALAR_CASES, ids=[f.__name__ for f, _ in SCALAR_CASES])
def test_scalar_constructs_on_the_python_target(fn: Callable[..., Any], make: Callable[[random.Random], list[Any]],
                                                cache: Path) -> None:
    c = compiled(fn, cache, target="python")
    rng = random.Random(2)
    for _ in range(30):
        args = make(rng)
        assert c(*args) == pytest.approx(fn(*args), rel=1e-5, abs=1e-5)
        if 2.0 in args:
            continue  # at comparisons' x == 2.0 the function jumps: no finite difference
        grads = c.vjp(*args, 1.0)
        grads = grads if isinstance(grads, tuple) else (grads,)
        assert list(grads) == pytest.approx(scalar_grads(fn, args), rel=2e-3, abs=2e-3)


def test_integers_and_an_integer_branch(cache: Path) -> None:
    ints = compiled(ff.integers, cache, target="python")
    for n, m in [(7, 3), (-7, 3), (7, -3), (-7, -3), (0, 5), (9, 9)]:
        assert ints(n, m) == ff.integers(n, m)  # Python's floor // and %
    bar = compiled(ff.bar, cache, target="python")
    for a, x in [(1, 12.34), (-1, 0.7), (0, -2.5)]:
        assert bar(a, x) == pytest.approx(ff.bar(a, x), rel=1e-5)
        assert bar.vjp(a, x, 1.0)[1] == pytest.approx(scalar_grads(ff.bar, [a, x])[1], rel=2e-3)
    reassign = compiled(ff.branch_reassign, cache, target="python")
    for x, k in [(1.5, 1), (1.5, -1), (-0.5, 0)]:
        assert reassign(x, k) == pytest.approx(ff.branch_reassign(x, k))


def test_vmap_mode_maps_sqrl_over_the_leading_axis(cache: Path) -> None:
    vsqrl = compiled(ff.sqrl, cache, mode="vmap")
    x = torch.randn(6, 4, 4, requires_grad=True)
    out = vsqrl(x)
    out.sum().backward()
    ref_x = x.detach().clone().requires_grad_()
    ref = torch.stack([ff.sqrl(ref_x[i]) for i in range(6)])
    ref.sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # inductor's own use of torch.jit
def test_torch_func_and_compile_on_a_compiled_function(cache: Path) -> None:
    sqrl = compiled(ff.sqrl, cache)
    x = torch.randn(4, 4)
    grad = torch.func.grad(sqrl)(x)
    torch.testing.assert_close(grad, torch.func.grad(ff.sqrl)(x), rtol=1e-5, atol=1e-6)
    opt = torch.compile(lambda t: sqrl(t) * 2.0, fullgraph=True)
    torch.testing.assert_close(opt(x), ff.sqrl(x) * 2.0, rtol=1e-5, atol=1e-6)


def test_a_new_signature_compiles_again(cache: Path) -> None:
    c = compiled(ff.helper_square, cache, target="python")
    assert c(3.0) == 9.0
    first = c.ks
    assert c(3) == 9 and c.ks != first and "Integer" in (c.ks or "")
    assert c([1.0, 2.0]) == [1.0, 4.0]


def test_jax_target(cache: Path) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def jsum(x):
        return jnp.sum(jnp.sin(x) * x)

    c = compiled(jsum, cache, target="jax")
    x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32)
    assert float(c(x)) == pytest.approx(float(jsum(x)), rel=1e-5)
    assert jnp.allclose(jax.grad(c)(x), jax.grad(jsum)(x), atol=1e-5)
    assert float(jax.jit(c)(x)) == pytest.approx(float(jsum(x)), rel=1e-5)


def test_a_later_process_reuses_the_build_without_ksc(cache: Path, tmp_path: Path) -> None:
    compiled(ff.sqrl, cache)(torch.randn(4, 4))
    code = (f"import sys, torch, ksbind; sys.path.insert(0, {str(REPO)!r}); "
            "from tests import frontend_functions as ff; "
            f"f = ksbind.compile(ff.sqrl, cache_dir={str(cache)!r}); x = torch.randn(4, 4); "
            "assert torch.allclose(f(x), ff.sqrl(x)); print('ok')")
    env = {k: v for k, v in os.environ.items() if k not in ("KSC", "KSC_RUNTIME")}
    env["PATH"] = str(tmp_path)  # no ksc, no compiler: only the cache can answer
    env["KSBIND_VERBOSE"] = "1"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout
    assert "compiling" not in done.stderr and "(run 1)" not in done.stderr, done.stderr


def test_without_ksc_the_first_call_says_how_to_point_at_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSC")
    monkeypatch.delenv("KSC_RUNTIME")
    monkeypatch.setenv("PATH", str(tmp_path))
    c = ksbind.compile(ff.sqrl, cache_dir=tmp_path / "empty", quiet=True)
    with pytest.raises(ksbind.KsbindError, match="ksbind.compile"):
        c(torch.randn(2, 2))
    x = torch.randn(2, 2)
    torch.testing.assert_close(ff.sqrl(x), c.__wrapped__(x))  # the Python function is untouched


def test_torch_export_records_the_op(cache: Path) -> None:
    sqrl = compiled(ff.sqrl, cache)

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return sqrl(x) * 2.0

    x = torch.randn(4, 4)
    exported = torch.export.export(Model(), (x,))
    assert ".sqrl.default" in exported.graph_module.code
    torch.testing.assert_close(exported.module()(x), ff.sqrl(x) * 2.0, rtol=1e-5, atol=1e-6)


def test_jax_jit_grad_and_vmap(cache: Path) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def jf(x):
        return jnp.sum(jnp.sin(x) * x)

    plain = compiled(jf, cache, target="jax")
    mapped = compiled(jf, cache, target="jax", mode="vmap")
    xs = jax.random.normal(jax.random.PRNGKey(0), (3, 5), dtype=jnp.float32)
    expected = jax.vmap(jf)(xs)
    assert jnp.allclose(jax.vmap(plain)(xs), expected, atol=1e-5)
    assert jnp.allclose(mapped(xs), expected, atol=1e-5)
    assert jnp.allclose(jax.jit(jax.vmap(jax.grad(plain)))(xs), jax.vmap(jax.grad(jf))(xs), atol=1e-5)
    assert jnp.allclose(jax.grad(lambda a: mapped(a).sum())(xs), jax.vmap(jax.grad(jf))(xs), atol=1e-5)


def test_calls_after_the_first_follow_each_signature(cache: Path) -> None:
    c = compiled(ff.helper_square, cache)
    assert float(c(3.0)) == 9.0
    assert c.ks is not None and "Float" in c.ks
    v = torch.arange(3, dtype=torch.float32)
    torch.testing.assert_close(c(v), v * v)
    assert c.ks is not None and "(Tensor 1 Float)" in c.ks
    assert float(c(2.0)) == 4.0 and "(Tensor 1 Float)" not in (c.ks or "")  # .ks follows the last call
    with pytest.raises(ksbind.KsbindError, match="float64"):
        c(v.double())


def test_one_function_built_in_two_caches_in_one_process(cache: Path, tmp_path: Path) -> None:
    """A torch op library's namespace is its module's name: the two builds must not share one."""
    first = compiled(ff.relu3, cache, mode="elementwise")
    second = compiled(ff.relu3, tmp_path / "other-cache", mode="elementwise")
    x = torch.linspace(-2, 2, 9)
    torch.testing.assert_close(first(x), second(x))
    assert first.module_for(x).__name__ != second.module_for(x).__name__


@pytest.mark.parametrize("fn,make,mode", [
    (ff.sqrl, lambda: [torch.randn(4, 4)], "plain"),               # zip helpers (ksc derives their fwd)
    (ff.where_max, lambda: [torch.randn(5), torch.randn(5)], "plain"),
    (ff.accumulate, lambda: [torch.randn(6), 4], "plain"),         # a loop: a fold, translated inline
    (ff.sqrl, lambda: [torch.randn(3, 4, 4)], "vmap"),
    (ff.relu3, lambda: [torch.randn(7) * 2], "elementwise"),
])
def test_compile_with_jvp_gives_forward_mode(fn: Callable[..., Any], make: Callable[[], list[Any]], mode: str,
                                             cache: Path) -> None:
    """ksbind.compile(..., jvp=True): torch.func.jvp and jacfwd of the compiled function agree with the
    Python function's own forward mode, run by PyTorch."""
    c = compiled(fn, cache, jvp=True, mode=mode)
    torch.manual_seed(4)
    for _ in range(3):
        args = make()
        floats = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        tangents = [torch.randn_like(args[i]) for i in floats]

        def of_floats(*ts: torch.Tensor, f: Callable[..., Any], args: list[Any] = args,
                      floats: list[int] = floats) -> Any:
            full = list(args)
            for i, t in zip(floats, ts):
                full[i] = t
            return f(*full)

        primals = tuple(args[i] for i in floats)
        got = torch.func.jvp(lambda *ts: of_floats(*ts, f=c), primals, tuple(tangents))
        if mode == "plain":
            ref = torch.func.jvp(lambda *ts: of_floats(*ts, f=fn), primals, tuple(tangents))
        elif mode == "vmap":
            ref = torch.func.jvp(lambda t: torch.stack([fn(r) for r in t]), primals, tuple(tangents))
        else:
            ref = torch.func.jvp(lambda t: torch.stack([torch.as_tensor(fn(float(v))) for v in t]).float(),
                                 primals, tuple(tangents))
            # relu3's derivative by hand: Python's floats carry no torch tangent
            x, dx = primals[0], tangents[0]
            ref = (ref[0], torch.where(x < 0, 0.0, torch.where(x < 1, x * x, 1.0)) * dx)
        torch.testing.assert_close(got[0], torch.as_tensor(ref[0]).to(got[0].dtype), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got[1], torch.as_tensor(ref[1]).to(got[1].dtype), rtol=1e-4, atol=1e-5)


def test_compile_without_jvp_says_how_to_get_forward_mode(cache: Path) -> None:
    c = compiled(ff.helper_square, cache)
    x = torch.tensor([1.0, 2.0])
    with pytest.raises(NotImplementedError, match=r"ksbind.compile\(\.\.\., jvp=True\)"):
        torch.func.jvp(c, (x,), (torch.ones(2),))
    with pytest.raises(ksbind.errors.KsbindError, match="has no jvp \\(compile it with jvp=True\\)"):
        c.jvp(x, torch.ones(2))
    jc = compiled(ff.helper_square, cache, jvp=True, target="python")
    assert jc.jvp(3.0, 1.0) == pytest.approx(6.0)
