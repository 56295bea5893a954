"""End to end: the torch target (ops on PyTorch's stable ABI), built and imported.

Two modules of configs/torch_ops.yaml (plain, elementwise and vmap bindings;
and the same functions as torch.library ops) plus configs/relu3_torch.yaml
(the nn.Module example) are built once per session and runtime, against the
bundled runtime and against ksc's (tests/e2e_support.py). What only a dispatcher
op gives, and the packed bindings, are in tests/test_torch_ops.py.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

from .e2e_support import (  # noqa: E402
    REPO,
    assert_names_arena_and_remedies,
    built,
    gradcheck32,
    session_cache_dir,
    small_arena,
)


@pytest.fixture
def lib(torch_lib: ModuleType) -> ModuleType:
    return torch_lib


def relu3_ref(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 0, torch.zeros_like(x), torch.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))


def away_from_kinks(*shape: int) -> torch.Tensor:
    """Random values not within eps of relu3's joins at 0 and 1 (finite differences)."""
    x = torch.rand(*shape) * 4 - 2
    x = torch.where((x.abs() < 0.05) | ((x - 1).abs() < 0.05), x + 0.2, x)
    return x.requires_grad_()


# ------------------------------------------------------------ plain mode: values and crossings

def test_vrelu3_values_and_new_result_tensor(ops: ModuleType) -> None:
    x = torch.randn(100)
    r = ops.vrelu3(x)
    assert r.dtype == torch.float32 and r.shape == x.shape
    torch.testing.assert_close(r, relu3_ref(x))
    assert r.data_ptr() != x.data_ptr()
    # The result was copied out of the arena, and the arena reset: a later call does not clobber it.
    keep = r.clone()
    ops.vrelu3(torch.randn(100))
    torch.testing.assert_close(r, keep)
    assert ops.allocator_top() == 0


def test_arena_stays_flat_over_many_calls(ops: ModuleType) -> None:
    x = torch.randn(1000)
    ops.vrelu3(x)
    peak = ops.allocator_peak()
    for _ in range(2000):
        ops.vrelu3(x)
    assert ops.allocator_peak() == peak and ops.allocator_top() == 0


def test_zero_copy_input(ops: ModuleType) -> None:
    """poke writes into t[0] through the ks view: the caller's tensor changes."""
    t = torch.zeros(5)
    assert ops.poke(t, 7.5) == 0.0
    assert t[0].item() == 7.5
    big = torch.zeros(1_000_000)
    ops.poke(big, 2.0)
    assert big[0].item() == 2.0
    # A view with an offset is contiguous too: the ks function sees its own data.
    base = torch.zeros(10)
    ops.poke(base[3:], 1.0)
    assert base[3].item() == 1.0


def test_non_contiguous_input_is_made_contiguous(ops: ModuleType) -> None:
    m = torch.randn(6, 4)
    col = m[:, 1]
    assert not col.is_contiguous()
    torch.testing.assert_close(ops.vrelu3(col), relu3_ref(col))
    # The ks function worked on a contiguous copy, not on m.
    before = m.clone()
    ops.poke(col, 99.0)
    torch.testing.assert_close(m, before)
    mt = torch.randn(3, 5).t()
    torch.testing.assert_close(ops.transpose(mt), mt.t())


def test_integer_bool_rank2_tuple_crossings(ops: ModuleType) -> None:
    v = torch.arange(-3, 4, dtype=torch.int32)
    r = ops.add_int(v, 10)
    assert r.dtype == torch.int32 and r.tolist() == [7, 8, 9, 10, 11, 12, 13]
    assert ops.count_true(torch.tensor([True, False, True, True])) == 3
    m = torch.randn(3, 5)
    torch.testing.assert_close(ops.transpose(m), m.t().contiguous())
    total, running = ops.stats(torch.tensor([1.0, 2.0, 3.0]))
    assert total == pytest.approx(6.0) and running.tolist() == [1.0, 3.0, 6.0]
    assert ops.tsum((torch.tensor([1.0, 2.0]), 0.5), 3) == pytest.approx(10.5)
    assert ops.scale_add(a=torch.ones(2), b=torch.full((2,), 2.0), n=3).tolist() == [7.0, 7.0]


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.vrelu3(torch.zeros(3, dtype=torch.float64)), TypeError, ["'t'", "torch.float32", "torch.float64"]),
    (lambda m: m.add_int(torch.zeros(3, dtype=torch.int64), 1), TypeError, ["'v'", "torch.int32", "torch.int64"]),
    (lambda m: m.count_true(torch.zeros(3, dtype=torch.int32)), TypeError, ["'b'", "torch.bool"]),
    (lambda m: m.vrelu3(torch.zeros(2, 3)), ValueError, ["'t'", "1-dimensional", "[2, 3]"]),
    (lambda m: m.transpose(torch.zeros(4)), ValueError, ["'m'", "2-dimensional"]),
    (lambda m: m.vrelu3(torch.zeros(3, device="meta")), ValueError, ["'t'", "CPU", "meta"]),
    (lambda m: m.tsum((torch.zeros(2, dtype=torch.float64), 1.0), 1), TypeError, ["'p[0]'", "torch.float32"]),
    (lambda m: m.vrelu3([1.0, 2.0]), TypeError, ["vrelu3"]),
    (lambda m: m.add_int(torch.zeros(3, dtype=torch.int32), 1.5), TypeError, ["add_int"]),
    (lambda m: m.relu3(torch.zeros(3, dtype=torch.float64)), TypeError, ["'x'", "torch.float32"]),
    (lambda m: m.mulsin(torch.zeros(3), torch.zeros(4)), ValueError, ["'y'", "broadcast"]),
    (lambda m: m.sumsq_rows(torch.zeros(3)), ValueError, ["'v'", "2-dimensional"]),
    (lambda m: m.scale_add(torch.zeros(3), torch.zeros(4), 1), RuntimeError, ["Assert failed", "b.size() == len"]),
])
def test_bad_arguments_raise_python_errors(ops: ModuleType, call: Callable[[ModuleType], object],
                                           error: type[Exception], words: list[str]) -> None:
    with pytest.raises(error) as info:
        call(ops)
    for w in words:
        assert w in str(info.value)
    assert ops.allocator_top() == 0  # a failed call leaves the arena as it was


SMALL_ARENA = 65536


def test_full_small_arena_is_memory_error_naming_size_and_remedies(ops: ModuleType) -> None:
    """Plain and vmap entry points: a full arena is a MemoryError (whichever way the
    runtime reports it), the arena is left empty and the next call works."""
    with small_arena(ops, SMALL_ARENA):
        with pytest.raises(MemoryError) as info:
            ops.vrelu3(torch.ones(SMALL_ARENA // 2))  # a 128 KB result
        assert_names_arena_and_remedies(info.value, SMALL_ARENA)
        with pytest.raises(MemoryError):  # below ksc's overrun peak, still past the end
            ops.vrelu3(torch.ones(SMALL_ARENA // 4 + 16))
        with pytest.raises(MemoryError) as info:
            ops.vrelu3_rows(torch.ones(3, SMALL_ARENA // 2))  # vmap: each step's result is 128 KB
        assert_names_arena_and_remedies(info.value, SMALL_ARENA)
        assert ops.allocator_top() == 0 and ops.allocator_peak() < SMALL_ARENA
        torch.testing.assert_close(ops.vrelu3(torch.full((1000,), 2.0)), torch.full((1000,), 2 - 2 / 3))
        torch.testing.assert_close(ops.vrelu3_rows(torch.full((3, 1000), 2.0)), torch.full((3, 1000), 2 - 2 / 3))


# ------------------------------------------------------------ autograd

def test_gradcheck_vrelu3(ops: ModuleType) -> None:
    x = away_from_kinks(20)
    assert gradcheck32(ops.vrelu3, x)
    # And against torch.func.vjp of the eager reference.
    g = torch.randn(20)
    (out, ks_grad), (ref_out, ref_grad) = [
        (f(x), torch.autograd.grad(f(x), x, g)[0]) for f in (ops.vrelu3, relu3_ref)]
    torch.testing.assert_close(out, ref_out)
    _, vjp_fn = torch.func.vjp(relu3_ref, x.detach())[:2]  # (no aux)
    torch.testing.assert_close(ks_grad, vjp_fn(g)[0])
    torch.testing.assert_close(ks_grad, ref_grad)


def test_gradcheck_two_tensor_arguments_and_an_integer(ops: ModuleType) -> None:
    a = torch.randn(8, requires_grad=True)
    b = torch.randn(8, requires_grad=True)
    assert gradcheck32(lambda a, b: ops.scale_add(a, b, 3), a, b)
    # The Integer argument gets no gradient; the vjp binding returns one per argument.
    da, db, dn = ops.scale_add_vjp(a.detach(), b.detach(), 3, torch.ones(8))
    assert dn == ()
    torch.testing.assert_close(da, 3 * b.detach() + 1)
    out = ops.scale_add(a, b, 3)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    torch.testing.assert_close(a.grad, 3 * b.detach() + 1)
    torch.testing.assert_close(b.grad, 3 * a.detach())


def test_gradcheck_elementwise_two_arguments_with_broadcasting(ops: ModuleType) -> None:
    x = torch.randn(3, 1, requires_grad=True)
    y = torch.randn(1, 4, requires_grad=True)
    assert gradcheck32(ops.mulsin, x, y)
    x2, y2 = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    (x2 * torch.sin(y2)).sum().backward()
    ops.mulsin(x, y).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(y.grad, y2.grad)


def test_elementwise_backward_multiplies_the_partials_its_forward_kept(ops: ModuleType) -> None:
    """An eager call that needs a gradient runs the op of the value and its partials (one loop),
    keeps the partial of each argument that needs a gradient (a broadcast's full shape), and
    backward multiplies: gradients equal eager PyTorch's, summed back to each argument's shape;
    a second backward through the graph (retain_graph) gives them again, from the vjp op."""
    x = torch.randn(3, 1, requires_grad=True)
    y = torch.randn(1, 4)  # needs no gradient: no partial of it is kept
    out = ops.mulsin(x, y)
    assert type(out.grad_fn)._forward_cls.__name__ == "mulsin_Partials"
    kept = out.grad_fn.partials
    assert kept[1] is None and kept[0].shape == (3, 4)
    torch.testing.assert_close(out, x.detach() * torch.sin(y))
    dy = torch.randn(3, 4)
    (gx,) = torch.autograd.grad(out, x, dy)
    torch.testing.assert_close(gx, (dy * torch.sin(y)).sum(1, keepdim=True))
    y.requires_grad_()
    out = ops.mulsin(x, y)
    first = torch.autograd.grad(out, (x, y), dy, retain_graph=True)
    assert out.grad_fn.partials is None  # used: backward wrote the gradients into them
    gx, gy = torch.autograd.grad(out, (x, y), dy)
    torch.testing.assert_close(gy, (dy * x.detach() * torch.cos(y.detach())).sum(0, keepdim=True))
    torch.testing.assert_close((gx, gy), first)
    torch.testing.assert_close(gx, (dy * torch.sin(y.detach())).sum(1, keepdim=True))
    with torch.no_grad():  # without a gradient: the value's op alone, no graph
        assert ops.mulsin(x, y).grad_fn is None


def test_elementwise_gradient_is_at_the_forward_point_after_an_in_place_change(ops: ModuleType) -> None:
    """The partials are taken when forward runs, so an argument written in place afterwards leaves
    the gradient the one at the forward's values (the first backward reads only the partials; a
    second one would need the argument, and autograd refuses it, as for any saved tensor)."""
    x = away_from_kinks(20)
    before = x.detach().clone()
    out = ops.relu3(x)
    with torch.no_grad():
        x.mul_(-1.0)
    (g,) = torch.autograd.grad(out.sum(), x, retain_graph=True)
    torch.testing.assert_close(g, torch.where(before < 0, 0.0, torch.where(before < 1, before * before, 1.0)))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(out.sum(), x)


def test_elementwise_gradients_under_saved_tensor_hooks_and_checkpointing(ops: ModuleType) -> None:
    """The partials are the Function's own, not saved tensors: under save_on_cpu and inside a
    non-reentrant activation checkpoint (which drops saved tensors and runs forward again in
    backward) the gradients are the same as without."""
    from torch.utils.checkpoint import checkpoint

    x = away_from_kinks(6, 5)
    dy = torch.randn(6, 5)

    def f(t: torch.Tensor) -> torch.Tensor:
        return ops.relu3(t) * 2.0

    (plain,) = torch.autograd.grad(f(x), x, dy)
    with torch.autograd.graph.save_on_cpu():
        (hooked,) = torch.autograd.grad(f(x), x, dy)
    (checkpointed,) = torch.autograd.grad(checkpoint(f, x, use_reentrant=False), x, dy)
    torch.testing.assert_close(hooked, plain)
    torch.testing.assert_close(checkpointed, plain)
    torch.testing.assert_close(plain, 2.0 * dy * torch.where(x < 0, 0.0, torch.where(x < 1, x * x, 1.0)).detach())


def test_elementwise_relu3_gradient(ops: ModuleType) -> None:
    x = away_from_kinks(4, 5, 3)
    assert gradcheck32(ops.relu3, x)


def test_vmap_gradients(ops: ModuleType) -> None:
    v = torch.randn(5, 7, requires_grad=True)
    assert gradcheck32(ops.sumsq_rows, v)
    ops.sumsq_rows(v).sum().backward()
    torch.testing.assert_close(v.grad, 2 * v.detach())
    r = away_from_kinks(4, 6)
    assert gradcheck32(ops.vrelu3_rows, r)


def test_logging_prints_each_ks_call_with_its_arguments(ops: ModuleType, capfd: pytest.CaptureFixture[str]) -> None:
    """m.logging(True): a plain op's kernel writes the ks call (symbol and arguments) to stderr
    before it runs; a tuple call's arguments are comma-separated; logging(False) stops it."""
    ops.logging(True)
    try:
        ops.vrelu3(torch.tensor([1.0, -2.0, 3.0]))
        ops.scale_add(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]), 4)
    finally:
        ops.logging(False)
    ops.vrelu3(torch.tensor([5.0]))
    err = capfd.readouterr().err
    assert "vrelu3$aT1f(tensor[3](1, -2, 3))" in err.splitlines()
    assert any(line.startswith("scale_add$a") and line.count(", ") >= 2 for line in err.splitlines()), err
    assert "tensor[1](5)" not in err


def test_no_graph_without_grad(ops: ModuleType) -> None:
    x = torch.randn(5, requires_grad=True)
    with torch.no_grad():
        assert not ops.vrelu3(x).requires_grad
    assert not ops.vrelu3(torch.randn(5)).requires_grad
    assert ops.vrelu3(x).requires_grad


# ------------------------------------------------------------ modes against eager PyTorch

SHAPES = [(), (1,), (7,), (3, 4), (2, 3, 5), (2, 1, 4, 3), (0, 3), (40_000,)]


@pytest.mark.parametrize("shape", SHAPES)
def test_elementwise_matches_eager(ops: ModuleType, shape: tuple[int, ...]) -> None:
    gen = torch.Generator().manual_seed(len(shape) * 31 + sum(shape))
    x = torch.randn(shape, generator=gen) * 2
    y = torch.randn(shape, generator=gen)
    r = ops.relu3(x)
    assert r.shape == x.shape
    torch.testing.assert_close(r, relu3_ref(x))
    torch.testing.assert_close(ops.mulsin(x, y), x * torch.sin(y))
    torch.testing.assert_close(ops.relu3_vjp(x, y), torch.where(x < 0, 0.0, torch.where(x < 1, x * x, 1.0)) * y)


def test_elementwise_random_shapes_and_broadcasts(ops: ModuleType) -> None:
    gen = torch.Generator().manual_seed(4)
    for _ in range(20):
        rank = int(torch.randint(0, 4, (1,), generator=gen))
        shape = [int(s) for s in torch.randint(1, 6, (rank,), generator=gen)]
        other = [1 if torch.rand(1, generator=gen) < 0.4 else s for s in shape]
        x, y = torch.randn(shape, generator=gen), torch.randn(other, generator=gen)
        torch.testing.assert_close(ops.mulsin(x, y), x * torch.sin(y))
        torch.testing.assert_close(ops.relu3(x.t() if rank == 2 else x), relu3_ref(x.t() if rank == 2 else x))


def _copies_made(call: Callable[[], object]) -> list[str]:
    """The copying aten ops that running call() dispatched."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        call()
    return [e.key for e in prof.key_averages() if e.key in ("aten::contiguous", "aten::clone", "aten::copy_")]


def test_elementwise_reads_expanded_inputs_in_place(ops: ModuleType) -> None:
    """An expanded tensor (stride 0, e.g. the gradient autograd gives a sum's result)
    is read in place by an elementwise op; a transposed one is still copied first."""
    gen = torch.Generator().manual_seed(9)
    x, y = torch.randn(5, 6, generator=gen), torch.randn(6, generator=gen)
    for expanded in (y.expand(5, 6), torch.randn(5, 1, generator=gen).expand(5, 6),
                     torch.tensor(2.5).expand(5, 6), torch.randn(1, 6, generator=gen).expand(5, 6)[1:]):
        assert not expanded.is_contiguous()
        want = x[:expanded.shape[0]] * torch.sin(expanded.contiguous())
        torch.testing.assert_close(ops.mulsin(x[:expanded.shape[0]], expanded), want)
        # the expanded side alone: the result takes its full (expanded) shape
        torch.testing.assert_close(ops.relu3(expanded), relu3_ref(expanded))
        assert ops.relu3(expanded).shape == expanded.shape
        rows = x[:expanded.shape[0]]
        assert _copies_made(functools.partial(ops.mulsin, rows, expanded)) == []
    # The backward of a sum hands the vjp an expanded gradient: no copy of it either.
    xg = torch.randn(1000, generator=gen).requires_grad_()
    assert _copies_made(lambda: ops.relu3(xg).sum().backward()) == []
    torch.testing.assert_close(xg.grad, torch.where(xg < 0, 0.0, torch.where(xg < 1, xg * xg, 1.0)).detach())
    # Not dense (a transpose): copied, and still right.
    t = torch.randn(6, 5, generator=gen).t()
    assert _copies_made(lambda: ops.mulsin(x, t)) != []
    torch.testing.assert_close(ops.mulsin(x, t), x * torch.sin(t))


def test_vmap_matches_eager_on_random_shapes(ops: ModuleType) -> None:
    gen = torch.Generator().manual_seed(7)
    for batch, n in [(1, 1), (3, 5), (16, 2), (5, 0), (int(torch.randint(1, 9, (1,), generator=gen)),
                                                     int(torch.randint(1, 9, (1,), generator=gen)))]:
        v = torch.randn(batch, n, generator=gen)
        torch.testing.assert_close(ops.sumsq_rows(v), (v * v).sum(dim=1))
        torch.testing.assert_close(ops.vrelu3_rows(v), relu3_ref(v))
        torch.testing.assert_close(ops.vrelu3_rows(v), torch.func.vmap(relu3_ref)(v))
        d = torch.randn(batch, generator=gen)
        torch.testing.assert_close(ops.sumsq_rows_vjp(v, d), 2 * v * d[:, None])
    assert ops.allocator_top() == 0
    # Tuple results stack part by part; scalar arguments are shared by every step.
    v = torch.randn(4, 6, generator=gen)
    totals, running = ops.stats_rows(v)
    torch.testing.assert_close(totals, v.sum(dim=1))
    torch.testing.assert_close(running, v.cumsum(dim=1))
    ints = torch.randint(-5, 5, (3, 4), dtype=torch.int32, generator=gen)
    assert torch.equal(ops.add_int_rows(ints, 7), ints + 7)
    with pytest.raises(ValueError, match="'v'.*2-dimensional"):
        ops.add_int_rows(torch.zeros(4, dtype=torch.int32), 1)
    # Two batched tensors and a shared Integer; gradients per row, None for the Integer.
    a = torch.randn(5, 3, generator=gen, requires_grad=True)
    b = torch.randn(5, 3, generator=gen, requires_grad=True)
    torch.testing.assert_close(ops.scale_add_rows(a, b, 2), 2 * a * b + a)
    assert gradcheck32(lambda a, b: ops.scale_add_rows(a, b, 2), a, b)
    da, db, dn = ops.scale_add_rows_vjp(a.detach(), b.detach(), 2, torch.ones(5, 3))
    assert dn == ()
    torch.testing.assert_close(db, 2 * a.detach())
    with pytest.raises(ValueError, match="'b'.*batch size 4 differs from argument 'a' \\(5\\)"):
        ops.scale_add_rows(torch.zeros(5, 3), torch.zeros(4, 3), 1)
    # An empty batch runs no step, so nothing tells the shape of a step's result:
    # documented as size 0 in every dimension.
    assert ops.vrelu3_rows(torch.zeros(0, 4)).shape == (0, 0)
    assert ops.sumsq_rows(torch.zeros(0, 4)).shape == (0,)


# ------------------------------------------------------------ torch.library

def test_library_ops_registered_with_autograd_and_fake(lib: ModuleType, ns: Any) -> None:
    assert lib.vrelu3.op is ns.vrelu3 and lib.vrelu3.op.default is ns.vrelu3.default
    for op, args in [(ns.vrelu3.default, (away_from_kinks(6),)),
                     (ns.relu3.default, (away_from_kinks(3, 4),)),
                     (ns.mulsin.default, (torch.randn(3, 1, requires_grad=True), torch.randn(4, requires_grad=True))),
                     (ns.scale_add.default, (torch.randn(5, requires_grad=True), torch.randn(5, requires_grad=True),
                                             2)),
                     (ns.vrelu3_rows.default, (away_from_kinks(3, 4),))]:
        result = torch.library.opcheck(op, args)
        assert all(v == "SUCCESS" for v in result.values()), (op, result)
    x = away_from_kinks(10)
    assert gradcheck32(lib.vrelu3, x)


def test_torch_compile_fullgraph_on_registered_ops(lib: ModuleType, ns: Any) -> None:
    """fullgraph=True fails on any graph break. backend aot_eager traces forward and
    backward through the fake implementations without inductor's C++ compile
    (inductor works too, about 25 s more on 2 cores)."""
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        h = lib.relu3(a) * 2 + ns.mulsin(a, b)  # the module's name for the op too
        return h.sum() + ns.vrelu3(b[0]).sum() + ns.vrelu3_rows(h).mean() + ns.scale_add(a[1], b[1], 3).sum()

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for shape in [(3, 4), (5, 2)]:
        a = torch.randn(shape, requires_grad=True)
        b = torch.randn(shape, requires_grad=True)
        a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        out = compiled(a, b)
        expected = f(a2, b2)
        torch.testing.assert_close(out, expected)
        out.backward()
        expected.backward()
        torch.testing.assert_close(a.grad, a2.grad)
        torch.testing.assert_close(b.grad, b2.grad)


def test_every_binding_is_a_function_over_its_op(ops: ModuleType) -> None:
    """m.NAME is a Python function named after its binding, holding its op (m.NAME.op), with
    the binding's parameter names and the ks signature as its docstring."""
    import inspect

    # sumsq_rows binds the ks function sumsq (in vmap mode): its docstring is sumsq's signature.
    for name, function in [("vrelu3", "vrelu3"), ("relu3", "relu3"), ("scale_add", "scale_add"),
                           ("sumsq_rows", "sumsq"), ("stats", "stats"), ("rowsums", "rowsums"), ("count", "count")]:
        f = getattr(ops, name)
        assert f.__name__ == name and f.__module__ == ops.__name__, (f.__name__, f.__module__)
        assert f.op is getattr(ops.ops, name) and f.op.default is getattr(ops.ops, name).default
        assert f.__doc__ and f.__doc__.startswith(f"[{function} "), (name, f.__doc__)
    assert str(inspect.signature(ops.vrelu3)) == "(t)"
    assert str(inspect.signature(ops.scale_add)) == "(a, b, n)"
    assert ops.vrelu3.__doc__ == "[vrelu3 (Tensor 1 Float)] : (Tensor 1 Float) -> (Tensor 1 Float)"
    assert ops.stats.__doc__ == "[stats (Tensor 1 Float)] : (Tensor 1 Float) -> (Tuple Float (Tensor 1 Float))"


def test_library_ops_show_the_bindings_signature_and_docstring_in_help(lib: ModuleType, ns: Any) -> None:
    """m.NAME is the op behind a function with the binding's parameters and the ks docstring
    (an OpOverloadPacket alone has no __doc__, and help() shows its class)."""
    import inspect
    import pydoc

    assert lib.scale_add.op is ns.scale_add
    assert str(inspect.signature(lib.scale_add)) == "(a, b, n)"
    assert lib.vrelu3.__doc__ == "[vrelu3 (Tensor 1 Float)] : (Tensor 1 Float) -> (Tensor 1 Float)"
    text = pydoc.plain(pydoc.render_doc(lib.vrelu3))
    assert "vrelu3(t)" in text and lib.vrelu3.__doc__ in text and "OpOverloadPacket" not in text, text
    assert lib.vrelu3.__name__ == "vrelu3" and lib.vrelu3.__module__ == lib.__name__


# ------------------------------------------------------------ cache, example

def test_cached_build_in_a_new_process_skips_cpp_extension() -> None:
    built("torch_ops.yaml", "torch_ops")  # the cache mechanism is the same for every runtime: the bundled build
    script = textwrap.dedent(f"""
        import sys, time, torch
        from ksbind import load_config
        from ksbind.pipeline import build_spec
        import dataclasses, tempfile
        spec = next(s for s in load_config({str(REPO / 'configs' / 'torch_ops.yaml')!r}) if s.name == "torch_ops")
        spec = dataclasses.replace(spec, output=__import__("pathlib").Path(tempfile.mkdtemp()) / spec.name)
        start = time.perf_counter()
        m = build_spec(spec, cache_dir={str(session_cache_dir())!r}, quiet=False)
        took = time.perf_counter() - start
        assert "torch.utils.cpp_extension" not in sys.modules, "cpp_extension was imported"
        r = m.vrelu3(torch.tensor([-1.0, 0.5, 2.0]))
        assert torch.allclose(r, torch.tensor([0.0, 0.125 / 3, 2.0 - 2.0 / 3])), r
        print("took", took)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    # What a cache hit is, said by events rather than a time bound that a loaded machine would flake:
    # no compiler ran (the build logs each compile) and cpp_extension was never imported (above).
    assert "compiling" not in proc.stderr, proc.stderr


def test_relu3_nn_module_example_trains(relu3_torch: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    path = REPO / "examples" / "relu3_torch" / "train.py"
    spec = importlib.util.spec_from_file_location("relu3_train_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    losses = example.main(relu3_torch)
    assert losses[-1] < 0.5 * losses[0]
    assert sum(losses[-5:]) < sum(losses[:5])
    assert "loss" in capsys.readouterr().out
