"""End to end: the torch target on structured values.

Tensors of tensors (one stacked tensor, viewed row by row, or a ragged list),
numbers as 0-dim tensors, and autograd through all of it, on the functions of
examples/nested (bound in the torch_ops and torch_ops_lib modules of
configs/torch_ops.yaml, built once per session and runtime). Tensors of tuples
(lists of tuples: packed ops) are in tests/test_torch_ops.py.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

from .e2e_support import gradcheck32  # noqa: E402

# ------------------------------------------------------------ tensors of tensors

def test_rows_of_a_stacked_argument_are_the_callers_memory(ops: ModuleType) -> None:
    """poke_rows writes rows[i][0] through the ks views: the caller's tensor changes,
    so the inner ks tensors point into its rows (a ragged list's tensors too)."""
    m = torch.zeros(3, 4)
    assert ops.poke_rows(m, 5.0).item() == 3
    assert m[:, 0].tolist() == [5.0, 5.0, 5.0] and m[:, 1:].abs().sum().item() == 0
    ragged = [torch.zeros(2), torch.zeros(0), torch.zeros(3)]
    assert ops.poke_rows(ragged, 1.0).item() == 2
    assert ragged[0].tolist() == [1.0, 0.0] and ragged[2].tolist() == [1.0, 0.0, 0.0]


def test_stacked_argument_is_viewed_not_copied(ops: ModuleType) -> None:
    """The inner ks tensors view the rows of the caller's tensor: rowsums of a
    stacked (3, 4) tensor equals the sums of its rows, and a view of a bigger
    tensor's rows (contiguous) is read where it lies."""
    big = torch.arange(20.0).reshape(5, 4)
    rows = big[1:4]  # contiguous rows of big, not a copy
    assert rows.is_contiguous() and rows.data_ptr() != big.data_ptr()
    torch.testing.assert_close(ops.rowsums(rows), rows.sum(1))


def test_ragged_list_argument_and_result(ops: ModuleType) -> None:
    rows = [torch.tensor([1.0, 2.0]), torch.tensor([3.0]), torch.tensor([4.0, 5.0, 6.0])]
    torch.testing.assert_close(ops.rowsums(rows), torch.tensor([3.0, 3.0, 15.0]))
    torch.testing.assert_close(ops.rowsums(tuple(rows)), torch.tensor([3.0, 3.0, 15.0]))
    prefixes = ops.prefixes(torch.tensor([1.0, 2.0, 3.0]))  # inner sizes differ: a list
    assert isinstance(prefixes, list) and [p.tolist() for p in prefixes] == [[1.0], [1.0, 2.0], [1.0, 2.0, 3.0]]
    one = ops.prefixes(torch.tensor([7.0]))  # a single row: every inner size agrees, so one stacked tensor
    assert isinstance(one, torch.Tensor) and one.shape == (1, 1)


def test_uniform_result_is_one_stacked_tensor(ops: ModuleType) -> None:
    grad = ops.rowsums_vjp(torch.zeros(3, 4), torch.tensor([1.0, 2.0, 3.0]))
    assert isinstance(grad, torch.Tensor) and grad.shape == (3, 4)
    torch.testing.assert_close(grad, torch.tensor([[1.0] * 4, [2.0] * 4, [3.0] * 4]))
    empty = ops.rowsums_vjp(torch.zeros(0, 4), torch.zeros(0))
    assert isinstance(empty, torch.Tensor) and empty.shape == (0, 0)


def test_rank_three_nesting(ops: ModuleType) -> None:
    c = torch.randn(2, 3, 4)
    torch.testing.assert_close(ops.cube_sum(c), c.sum(), rtol=1e-5, atol=1e-5)
    ragged = [torch.ones(2, 3), [torch.ones(1), torch.ones(5)]]  # stacked and list forms mix at any level
    assert ops.cube_sum(ragged).item() == 12.0


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.rowsums(torch.zeros(3, 4, dtype=torch.float64)), TypeError, ["torch.float32", "(Tensor 1 (Tensor 1 Float))"]),
    (lambda m: m.rowsums(torch.zeros(3)), ValueError, ["2-dimensional"]),
    (lambda m: m.rowsums([torch.zeros(2, 2)]), ValueError, ["'arg0[0]'", "1-dimensional"]),
    (lambda m: m.rowsums([torch.zeros(2), "x"]), TypeError, ["rowsums"]),
    (lambda m: m.weighted(torch.zeros(2, 2), torch.zeros(2), torch.zeros(2)), ValueError, ["'arg2'", "0-dimensional"]),
    (lambda m: m.weighted(torch.zeros(2, 2), torch.zeros(2), torch.tensor(1)), TypeError, ["'arg2'", "floating"]),
])
def test_bad_structured_arguments_raise(ops: ModuleType, call: Any, error: type, words: list[str]) -> None:
    with pytest.raises(error) as info:
        call(ops)
    for w in words:
        assert w in str(info.value)


# ------------------------------------------------------------ numbers are 0-dim tensors

def test_scalar_results_are_zero_dim_tensors(ops: ModuleType) -> None:
    n = ops.count_true(torch.tensor([True, False, True]))
    assert isinstance(n, torch.Tensor) and n.dim() == 0 and n.dtype == torch.int32 and n.item() == 2
    total, count, twice = ops.split_stats(torch.tensor([1.0, -2.0, 3.0]))
    assert total.dtype == torch.float32 and total.dim() == 0 and total.item() == 2.0
    assert count.dtype == torch.int32 and count.item() == 2 and twice.tolist() == [2.0, -4.0, 6.0]


def test_scalar_arguments_take_numbers_and_zero_dim_tensors(ops: ModuleType) -> None:
    rows, w = torch.randn(3, 2), torch.rand(3)
    by_number = ops.weighted(rows, w, 2)
    for a in (2.0, torch.tensor(2.0), torch.tensor(2.0, dtype=torch.float64)):
        torch.testing.assert_close(ops.weighted(rows, w, a), by_number)
    torch.testing.assert_close(by_number, 2 * (w[:, None] * rows * rows).sum())


# ------------------------------------------------------------ autograd

def test_backward_reaches_every_float_tensor(ops: ModuleType) -> None:
    """A scalar result's .backward() gives gradients to a stacked argument, a
    vector and a 0-dim float argument; the same through a ragged list."""
    rows = torch.randn(3, 4, requires_grad=True)
    w = torch.rand(3, requires_grad=True)
    a = torch.tensor(1.5, requires_grad=True)
    y = ops.weighted(rows, w, a)
    assert y.dim() == 0 and y.requires_grad
    y.backward()
    r, w2, a2 = rows.detach().requires_grad_(), w.detach().requires_grad_(), a.detach().requires_grad_()
    (a2 * (w2[:, None] * r * r).sum()).backward()
    for got, want in [(rows.grad, r.grad), (w.grad, w2.grad), (a.grad, a2.grad)]:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    ragged = [torch.randn(2, requires_grad=True), torch.randn(5, requires_grad=True)]
    (ops.rowsums(ragged) * torch.tensor([1.0, 3.0])).sum().backward()
    assert ragged[0].grad is not None and ragged[1].grad is not None
    assert ragged[0].grad.tolist() == [1.0, 1.0] and ragged[1].grad.tolist() == [3.0] * 5


def test_gradcheck_nested_tuple_and_ragged(ops: ModuleType) -> None:
    torch.manual_seed(0)
    rows = torch.randn(3, 4, requires_grad=True)
    w = torch.rand(3, requires_grad=True)
    a = torch.tensor(0.7, requires_grad=True)
    assert gradcheck32(ops.weighted, rows, w, a)
    r0, r1 = torch.randn(2, requires_grad=True), torch.randn(3, requires_grad=True)
    assert gradcheck32(lambda x, y: ops.rowsums([x, y]), r0, r1)
    assert gradcheck32(lambda v: sum(p.sum() * (i + 1) for i, p in enumerate(ops.prefixes(v))),
                       torch.randn(4, requires_grad=True))
    assert gradcheck32(ops.cube_sum, torch.randn(2, 2, 3, requires_grad=True))


def test_tuple_result_with_discrete_part(ops: ModuleType) -> None:
    """(Float, Integer, Vec Float): the Integer part has no gradient (its tangent is ()),
    the others flow back through the vjp."""
    v = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    total, count, twice = ops.split_stats(v)
    assert not count.requires_grad
    (total * 2 + (twice * torch.tensor([1.0, 2.0, 3.0])).sum()).backward()
    assert v.grad is not None and v.grad.tolist() == [4.0, 6.0, 8.0]


# ------------------------------------------------------------ torch.library

def test_library_ops_for_scalar_tuple_and_nested_results(torch_lib: ModuleType, ns: Any) -> None:
    assert torch_lib.weighted.op is ns.weighted and torch_lib.stats.op is ns.stats  # m.NAME calls the op
    assert ns.count_true(torch.tensor([True, True])).item() == 2
    total, running = ns.stats(torch.tensor([1.0, 2.0]))
    assert total.dim() == 0 and total.item() == 3.0 and running.tolist() == [1.0, 3.0]
    rows, w = torch.randn(3, 2, requires_grad=True), torch.rand(3, requires_grad=True)
    # The op of a binding with a vjp takes a Float as a 0-dim tensor (schema `Tensor`), which
    # autograd can give a gradient; m.weighted takes a number too.
    a = torch.tensor(1.5, requires_grad=True)
    torch.testing.assert_close(torch_lib.weighted(rows, w, 1.5), ns.weighted(rows, w, a))
    for op, args in [(ns.weighted.default, (rows, w, a)), (ns.cube_sum.default, (torch.randn(2, 3, 2, requires_grad=True),)),
                     (ns.split_stats.default, (torch.randn(4, requires_grad=True),)),
                     (ns.stats.default, (torch.randn(3),))]:
        result = torch.library.opcheck(op, args)
        assert all(v == "SUCCESS" for v in result.values()), (op, result)


def test_scalar_result_ops_under_torch_compile_fullgraph(torch_lib: ModuleType, ns: Any) -> None:
    def f(rows: torch.Tensor, w: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        total, count, twice = ns.split_stats(w)
        return (ns.weighted(rows, w, a) + torch_lib.weighted(rows, w, 2.0) + total * count + twice.sum()
                + ns.cube_sum(rows[None]))

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    rows, w = torch.randn(3, 2, requires_grad=True), torch.rand(3, requires_grad=True)
    a = torch.tensor(2.0, requires_grad=True)
    r2, w2, a2 = (t.detach().clone().requires_grad_() for t in (rows, w, a))
    out, expected = compiled(rows, w, a), f(r2, w2, a2)
    assert out.dim() == 0
    torch.testing.assert_close(out, expected)
    out.backward()
    expected.backward()
    torch.testing.assert_close(rows.grad, r2.grad)
    torch.testing.assert_close(w.grad, w2.grad)
    torch.testing.assert_close(a.grad, a2.grad)
