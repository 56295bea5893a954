"""The torch target under torch.func and against tensor metadata: the module of
configs/torch_ops.yaml (built once per session and runtime, shared with
tests/test_torch.py) under torch.func.grad, vjp, jacrev and vmap; tensors with
the negative or conjugate bit set; tensors whose memory cannot be viewed, and
tensor subclasses and FakeTensors (torch's own op semantics: the bindings are
dispatcher ops); double backward; version counters. No module is built here.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402


def relu3_ref(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 0, torch.zeros_like(x), torch.where(x < 1, x * x * x / 3, x - 2.0 / 3.0))


def neg(t: torch.Tensor) -> torch.Tensor:
    """-t as torch._neg_view gives it: the memory holds t, the negative bit says negate."""
    v = torch._neg_view(t)
    assert v.is_neg() and v.data_ptr() == t.data_ptr()
    return v


# ------------------------------------------------------------ negative and conjugate bits

def test_negative_bit_is_resolved_on_every_kind_of_argument(ops: ModuleType) -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -0.25])
    expected = relu3_ref(-x)
    torch.testing.assert_close(ops.vrelu3(neg(x)), expected)  # plain
    torch.testing.assert_close(ops.relu3(neg(x)), expected)  # elementwise
    col, row = torch.randn(3, 1), torch.randn(1, 4)
    torch.testing.assert_close(ops.mulsin(neg(col), row), -col * torch.sin(row))  # elementwise, broadcast
    torch.testing.assert_close(ops.mulsin(col, neg(row)), col * torch.sin(-row))
    m = torch.randn(3, 5)
    torch.testing.assert_close(ops.transpose(neg(m)), -m.t())  # rank 2
    torch.testing.assert_close(ops.transpose(neg(m.t())), -m)  # rank 2, not contiguous as well
    rows = torch.randn(4, 3)
    torch.testing.assert_close(ops.vrelu3_rows(neg(rows)), relu3_ref(-rows))  # vmap mode
    torch.testing.assert_close(ops.rowsums(neg(rows)), -rows.sum(dim=1))  # stacked tensor of tensors
    torch.testing.assert_close(ops.rowsums([neg(rows[0]), rows[1]]), torch.stack([-rows[0].sum(), rows[1].sum()]))
    # 0-dim tensors for Integer and Float arguments.
    n = torch.tensor(3, dtype=torch.int32)
    a, b = torch.randn(5), torch.randn(5)
    torch.testing.assert_close(ops.scale_add(a, b, neg(n)), -3 * a * b + a)
    t = torch.zeros(2)
    ops.poke(t, neg(torch.tensor(2.5)))
    assert t[0].item() == -2.5
    assert ops.allocator_top() == 0


def test_conjugate_views_imaginary_part_reads_its_sign(ops: ModuleType) -> None:
    """.conj().imag of a complex tensor is a float view with the negative bit set."""
    z = torch.tensor([2 + 0.5j, 1 - 1.5j, -1 + 0.25j])
    imag = z.conj().imag
    assert imag.is_neg()
    torch.testing.assert_close(ops.vrelu3(imag), relu3_ref(torch.tensor([-0.5, 1.5, -0.25])))
    torch.testing.assert_close(ops.relu3(imag), relu3_ref(torch.tensor([-0.5, 1.5, -0.25])))
    torch.testing.assert_close(ops.vrelu3(z.conj().real), relu3_ref(z.real))


def test_resolving_the_negative_bit_is_a_copy_and_lazy_zeros_are_zeros(ops: ModuleType) -> None:
    """A ks function writing into a negative view writes into the resolved copy,
    as into a non-contiguous argument's contiguous copy (docs/torch.md)."""
    base = torch.ones(3)
    ops.poke(neg(base), 9.0)
    assert base.tolist() == [1.0, 1.0, 1.0]
    zeros = torch._efficientzerotensor(4)
    assert zeros._is_zerotensor()
    torch.testing.assert_close(ops.vrelu3(zeros), torch.zeros(4))
    torch.testing.assert_close(ops.relu3(zeros), torch.zeros(4))


# ------------------------------------------------------------ tensors that cannot be viewed

class Wrapper(torch.Tensor):
    """A wrapper subclass: no storage of its own, the data in an attribute."""

    @staticmethod
    def __new__(cls, inner: torch.Tensor) -> Wrapper:
        made: Wrapper = torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)
        return made

    def __init__(self, inner: torch.Tensor) -> None:
        self.wrapped = inner  # (not `inner`: that is a Tensor method)

    # torch's stub types Tensor.__torch_dispatch__ as a plain function attribute; torch calls
    # (and documents) it as a classmethod, so mypy sees an override that is not one.
    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Iterable[type], args: tuple[Any, ...] = (),  # type: ignore[override]
                           kwargs: dict[Any, Any] | None = None) -> Any:
        return func(*[a.wrapped if isinstance(a, Wrapper) else a for a in args], **(kwargs or {}))


def _fake(t: torch.Tensor) -> torch.Tensor:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        return mode.from_tensor(t)


def test_wrapper_subclasses_and_fake_tensors_go_through_the_dispatcher(ops: ModuleType) -> None:
    """A binding is a dispatcher op: a wrapper subclass's __torch_dispatch__ gets the op (and here
    runs it on the wrapped tensor); a FakeTensor outside its mode runs an elementwise op's fake
    kernel, which knows its result's shape (other bindings refuse it, below)."""
    from torch._subclasses.fake_tensor import FakeTensor

    x = torch.randn(3)
    torch.testing.assert_close(ops.vrelu3(Wrapper(x)), relu3_ref(x))
    fake = ops.relu3(_fake(torch.randn(2, 3)))
    assert isinstance(fake, FakeTensor) and fake.shape == (2, 3) and fake.dtype == torch.float32
    assert ops.allocator_top() == 0


def test_vmap_of_a_vjp_binding_is_the_loop(ops: ModuleType) -> None:
    """A vjp binding is an op as any other: torch.vmap runs it row by row."""
    t, d = torch.randn(2, 3), torch.randn(2, 3)
    relu3_slope = torch.where(t < 0, 0.0, torch.where(t < 1, t * t, 1.0))
    torch.testing.assert_close(torch.vmap(ops.vrelu3_vjp)(t, d), relu3_slope * d)


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.vrelu3(_fake(torch.randn(3))), TypeError, ["'t'", "FakeTensor outside its FakeTensorMode"]),
    (lambda m: m.scale_add(torch.ones(2), torch.ones(2), _fake(torch.tensor(2))), TypeError, ["'n'", "FakeTensor"]),
    (lambda m: m.vrelu3(torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], layout=torch.strided)),
     ValueError, ["'t'", "nested tensor"]),
    (lambda m: m.vrelu3_rows(torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], layout=torch.strided)),
     ValueError, ["'t'", "nested tensor"]),
])
def test_unviewable_tensors_are_refused_naming_the_argument(ops: ModuleType, call: Callable[[ModuleType], Any],
                                                            error: type[Exception], words: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the nested-tensor constructor's "prototype" warning
        with pytest.raises(error) as info:
            call(ops)
    text = str(info.value)
    for w in words:
        assert w in text, text
    assert "not allocated yet" not in text and "file an issue" not in text.lower()
    assert ops.allocator_top() == 0


# ------------------------------------------------------------ double backward, version counters

@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
@pytest.mark.parametrize("name, make", [
    ("vrelu3", lambda: torch.randn(6)),
    ("relu3", lambda: torch.randn(2, 3)),
    ("sumsq_rows", lambda: torch.randn(3, 4)),
    ("rowsums", lambda: torch.randn(3, 4)),
])
def test_double_backward_is_a_clear_error(ops: ModuleType, name: str, make: Callable[[], torch.Tensor]) -> None:
    f = getattr(ops, name)
    x = make().requires_grad_()

    def total(t: torch.Tensor) -> torch.Tensor:
        return f(t).sum()

    with pytest.raises(RuntimeError, match=f"{name}: double backward is not supported"):
        torch.autograd.grad(f(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        f(x).sum().backward(create_graph=True)
    # Second order through torch.func: raised where the vjp's gradient is needed.
    with pytest.raises(RuntimeError, match=f"{name}: double backward is not supported"):
        torch.func.jacrev(torch.func.grad(total))(x.detach())
    with pytest.raises(NotImplementedError, match=f"{name}: forward-mode AD .* is not supported"):
        torch.func.jvp(f, (x.detach(),), (torch.ones_like(x),))
    # First order is unaffected.
    (g,) = torch.autograd.grad(f(x).sum(), x)
    assert not g.requires_grad and g.shape == x.shape


@pytest.mark.parametrize("name, make", [
    ("vrelu3", lambda: torch.tensor([0.5, 1.5])),        # plain, with a vjp (the fast path's binding)
    ("relu3", lambda: torch.tensor([[0.5, 1.5]])),       # elementwise, with a vjp
    ("vrelu3_rows", lambda: torch.tensor([[0.5, 1.5]])),  # vmap, with a vjp
    ("transpose", lambda: torch.tensor([[0.5, 1.5]])),   # no vjp
])
def test_forward_ad_dual_tensors_are_never_dropped(ops: ModuleType, name: str, make: Any) -> None:
    """torch.autograd.forward_ad: a dual argument's tangent used to be dropped without a word (the
    result had no tangent, and `m.relu3(d) + d` a tangent of d's alone). It reaches the Function's jvp,
    which says the binding has no forward mode; inside the dual level a call without tangents works."""
    import torch.autograd.forward_ad as fwAD

    f = getattr(ops, name)
    x = make()
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(NotImplementedError, match=f"{name}: forward-mode AD .* is not supported"):
            f(dual)
        torch.testing.assert_close(f(x), f(x.clone()))  # no tangent: an ordinary call


def test_writing_into_an_argument_does_not_bump_its_version(ops: ModuleType) -> None:
    """Documented in docs/torch.md: ksbind cannot know which calls write (ks code
    does not; a C++ edef such as poke may), and bumping every viewed argument's
    version would make every saved input look modified. A caller whose function
    writes bumps it with torch.autograd.graph.increment_version."""
    y = torch.randn(4, requires_grad=True)
    z = y * y  # saves y for backward
    ops.vrelu3(y).sum().backward()  # a pure call (through autograd) leaves z's backward intact
    before = y._version
    ops.poke(y.detach(), 5.0)  # writes y[0] through its view (detach shares the version counter)
    assert y._version == before and y[0].item() == 5.0
    z.sum().backward(retain_graph=True)  # autograd cannot see the write...
    torch.autograd.graph.increment_version(y)  # ...until the caller says so
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# ------------------------------------------------------------ torch.func

def _grads(f: Callable[..., torch.Tensor], args: tuple[torch.Tensor, ...], argnums: tuple[int, ...]
           ) -> tuple[torch.Tensor, ...]:
    """Gradients of f(*args).sum() through plain autograd: the reference."""
    leaves = [a.detach().clone().requires_grad_() if i in argnums else a for i, a in enumerate(args)]
    out = f(*leaves).sum()
    return torch.autograd.grad(out, [leaves[i] for i in argnums])


BINDINGS_WITH_VJPS: list[tuple[str, Callable[[ModuleType], Callable[..., torch.Tensor]], Callable[[], tuple[Any, ...]],
                               tuple[int, ...]]] = [
    ("plain", lambda m: m.vrelu3, lambda: (torch.randn(7),), (0,)),
    ("plain, two tensors and an Integer", lambda m: lambda a, b: m.scale_add(a, b, 3),
     lambda: (torch.randn(5), torch.randn(5)), (0, 1)),
    ("elementwise", lambda m: m.relu3, lambda: (torch.randn(3, 4),), (0,)),
    ("elementwise, broadcast", lambda m: m.mulsin, lambda: (torch.randn(3, 1), torch.randn(4)), (0, 1)),
    ("vmap mode", lambda m: m.sumsq_rows, lambda: (torch.randn(4, 3),), (0,)),
    ("vmap mode, two tensors", lambda m: lambda a, b: m.scale_add_rows(a, b, 2),
     lambda: (torch.randn(3, 4), torch.randn(3, 4)), (0, 1)),
    ("tensor of tensors", lambda m: m.rowsums, lambda: (torch.randn(3, 4),), (0,)),
    ("scalar result, Float argument", lambda m: m.weighted,
     lambda: (torch.randn(3, 2), torch.randn(3), torch.tensor(1.5)), (0, 1, 2)),
    ("tuple result", lambda m: lambda v: m.split_stats(v)[0] + m.split_stats(v)[2].sum(),
     lambda: (torch.randn(5),), (0,)),
]


@pytest.mark.parametrize("case", BINDINGS_WITH_VJPS, ids=[c[0] for c in BINDINGS_WITH_VJPS])
def test_torch_func_grad_vjp_jacrev(ops: ModuleType, case: Any) -> None:
    _, pick, make, argnums = case
    f = pick(ops)
    args = make()
    expected = _grads(f, args, argnums)
    got = torch.func.grad(lambda *a: f(*a).sum(), argnums=argnums)(*args)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    out, vjp_fn = torch.func.vjp(lambda *a: f(*a), *[args[i] for i in argnums])[:2]  # (no aux)
    for g, e in zip(vjp_fn(torch.ones_like(out)), expected):
        torch.testing.assert_close(g, e)
    jac = torch.func.jacrev(lambda *a: f(*a), argnums=argnums)(*args)
    for j, e in zip(jac, expected):
        summed = j.reshape(-1, *e.shape).sum(0) if out.dim() else j
        torch.testing.assert_close(summed, e)
    # The Jacobian row by row, against autograd's rows.
    flat = out.reshape(-1)
    for k in range(min(flat.numel(), 3)):
        rows = _grads(lambda *a, k=k: f(*a).reshape(-1)[k], args, argnums)
        for j, r in zip(jac, rows):
            torch.testing.assert_close(j.reshape(-1, *r.shape)[k], r)
    assert ops.allocator_top() == 0


def _looped(f: Callable[..., Any], args: tuple[Any, ...], in_dims: tuple[int | None, ...]) -> Any:
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    steps = [f(*[a.select(d, i) if d is not None else a for a, d in zip(args, in_dims)]) for i in range(size)]
    if isinstance(steps[0], tuple):
        return tuple(torch.stack(parts) for parts in zip(*steps))
    return torch.stack(steps)


VMAPS: list[tuple[str, Callable[[ModuleType], Callable[..., Any]], Callable[[], tuple[Any, ...]],
                  tuple[int | None, ...]]] = [
    ("plain", lambda m: m.vrelu3, lambda: (torch.randn(4, 6),), (0,)),
    ("plain, batch dim 1, one tensor shared", lambda m: lambda a, b: m.scale_add(a, b, 2),
     lambda: (torch.randn(5, 3), torch.randn(5)), (1, None)),
    ("plain, tuple result", lambda m: m.split_stats, lambda: (torch.randn(3, 4),), (0,)),
    ("plain, tensor of tensors", lambda m: m.rowsums, lambda: (torch.randn(2, 3, 4),), (0,)),
    ("elementwise", lambda m: m.relu3, lambda: (torch.randn(3, 2, 5),), (0,)),
    ("elementwise, broadcast, batch dim 2", lambda m: m.mulsin, lambda: (torch.randn(3, 1, 4), torch.randn(5)),
     (2, None)),
    ("elementwise, both batched", lambda m: m.mulsin, lambda: (torch.randn(4, 3), torch.randn(4, 1)), (0, 0)),
    ("vmap mode", lambda m: m.sumsq_rows, lambda: (torch.randn(4, 2, 3),), (0,)),
    ("vmap mode, batch dim 1", lambda m: m.vrelu3_rows, lambda: (torch.randn(2, 5, 3),), (1,)),
    ("vmap mode, one batched", lambda m: lambda a, b: m.scale_add_rows(a, b, 3),
     lambda: (torch.randn(4, 2, 3), torch.randn(2, 3)), (0, None)),
    # Bindings without a vjp: the same rules.
    ("no vjp, plain, Integer", lambda m: lambda v: m.add_int(v, 4),
     lambda: (torch.randint(-9, 9, (3, 5), dtype=torch.int32),), (0,)),
    ("no vjp, plain, Bool to Integer", lambda m: m.count_true, lambda: (torch.rand(4, 6) < 0.5,), (0,)),
    ("no vjp, plain, rank 2", lambda m: m.transpose, lambda: (torch.randn(3, 2, 4),), (2,)),
    ("no vjp, plain, tuple result", lambda m: m.stats, lambda: (torch.randn(3, 4),), (0,)),
    ("no vjp, vmap mode", lambda m: lambda v: m.add_int_rows(v, 2),
     lambda: (torch.randint(-9, 9, (3, 2, 5), dtype=torch.int32),), (0,)),
    ("no vjp, vmap mode, tuple result", lambda m: m.stats_rows, lambda: (torch.randn(3, 2, 5),), (1,)),
]


@pytest.mark.parametrize("case", VMAPS, ids=[c[0] for c in VMAPS])
def test_torch_vmap_without_torch_library(ops: ModuleType, case: Any) -> None:
    _, pick, make, in_dims = case
    f = pick(ops)
    args = make()
    got = torch.vmap(f, in_dims=in_dims)(*args)
    expected = _looped(f, args, in_dims)
    torch.testing.assert_close(got, expected)
    assert ops.allocator_top() == 0


def test_torch_func_grad_of_a_binding_without_vjp_is_an_error(ops: ModuleType) -> None:
    """Not a silent zero gradient: the binding's Function refuses to be differentiated."""
    with pytest.raises(RuntimeError, match="transpose: this binding has no vjp"):
        torch.func.grad(lambda m: (ops.transpose(m) * m.t()).sum())(torch.randn(2, 3))
    torch.testing.assert_close(torch.func.grad(lambda m: (ops.transpose(m.detach()) * m.t()).sum())(torch.ones(2, 3)),
                               torch.ones(2, 3))


def test_vmap_of_grad_and_autograd_through_vmap(ops: ModuleType) -> None:
    x = torch.randn(4, 6)
    per_row = torch.vmap(torch.func.grad(lambda t: ops.vrelu3(t).sum()))(x)
    torch.testing.assert_close(per_row, _grads(ops.relu3, (x,), (0,))[0])
    v = torch.randn(3, 2, 5)
    torch.testing.assert_close(torch.vmap(torch.func.jacrev(ops.sumsq_rows))(v),
                               torch.stack([torch.func.jacrev(ops.sumsq_rows)(r) for r in v]))
    # Plain autograd over a vmapped call: the vmap rule calls the entry, which builds the graph.
    for f, shape in [(ops.relu3, (3, 4)), (ops.vrelu3, (3, 4)), (ops.vrelu3_rows, (2, 3, 4))]:
        y = torch.randn(shape, requires_grad=True)
        torch.vmap(f)(y).sum().backward()
        torch.testing.assert_close(y.grad, _grads(lambda t, f=f: _looped(f, (t,), (0,)), (y,), (0,))[0])


# ------------------------------------------------------------ torch.library ops

def test_library_ops_batch_with_their_rule_and_refuse_double_backward(torch_lib: ModuleType,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    """Each op has a batching rule (torch.library.register_vmap): no per-sample
    fallback and its warning. Double backward is the same clear error."""
    lib = torch_lib
    for f, args, in_dims in [(lib.vrelu3, (torch.randn(3, 5),), (0,)),
                             (lib.relu3, (torch.randn(2, 3, 4),), (1,)),
                             (lib.mulsin, (torch.randn(4, 3, 1), torch.randn(5)), (0, None)),
                             (lib.vrelu3_rows, (torch.randn(2, 3, 4),), (0,)),
                             (lambda a, b: lib.scale_add(a, b, 2), (torch.randn(3, 4), torch.randn(4)), (0, None)),
                             (lib.stats, (torch.randn(3, 4),), (0,))]:
        torch.testing.assert_close(torch.vmap(f, in_dims=in_dims)(*args), _looped(f, args, in_dims))
    assert "performance drop" not in capfd.readouterr().err
    x = torch.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="vrelu3: double backward is not supported"):
        torch.autograd.grad(lib.vrelu3(x).sum(), x, create_graph=True)
    (g,) = torch.autograd.grad(lib.vrelu3(x).sum(), x)
    torch.testing.assert_close(g, torch.where(x < 0, 0.0, torch.where(x < 1, x * x, 1.0)).detach())


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.trace is deprecated in torch 2.13
def test_jit_trace_records_the_differentiable_op(ops: ModuleType) -> None:
    """torch.jit.trace (even under no_grad) records the binding's op, never its direct one: the
    traced model then trains, with gradients from the vjp, instead of gradients silently None."""
    class Relu3(torch.nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return ops.relu3(t)

    linear = torch.nn.Linear(3, 4)
    x = torch.randn(5, 3)
    with torch.no_grad():
        traced = torch.jit.trace(torch.nn.Sequential(linear, Relu3()), (x,))
    graph = str(traced.inlined_graph)
    assert "_direct_" not in graph and "::relu3" in graph
    traced(x).sum().backward()
    assert linear.weight.grad is not None
    expected = torch.autograd.grad(relu3_ref(linear(x)).sum(), linear.weight)[0]
    torch.testing.assert_close(linear.weight.grad, expected)


def test_eager_autograd_goes_through_the_function_and_keeps_the_ops_behaviour(ops: ModuleType) -> None:
    """An eager call needing a gradient goes through the Function torch.func uses (not the
    dispatcher's generated autograd kernel): same values and gradients, and double backward
    still refused."""
    x = torch.randn(6, requires_grad=True)
    y = ops.vrelu3(x)
    assert type(y.grad_fn).__name__ == "FunctionBackward", type(y.grad_fn).__name__  # not GeneratedBackwardFor...
    (g,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(g, torch.where(x < 0, 0.0, torch.where(x < 1, x * x, 1.0)).detach())
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad(ops.vrelu3(x).sum(), x, create_graph=True)


def test_a_binding_without_vjp_raises_when_a_backward_reaches_it(ops: ModuleType) -> None:
    """Eager autograd through a binding without a vjp is an error naming it, as under torch.func,
    never a gradient left None (transpose) or short (stats: x.sum()'s part alone)."""
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="transpose: this binding has no vjp"):
        ops.transpose(x.reshape(2, 2)).sum().backward()
    s, _ = ops.stats(x)
    with pytest.raises(RuntimeError, match="stats: this binding has no vjp"):
        (s + x.sum()).backward()
    # a result no backward reaches, or arguments that need no gradient, are no error
    torch.testing.assert_close(ops.transpose(x.reshape(2, 2)).detach(), x.detach().reshape(2, 2).t())
    torch.testing.assert_close(ops.transpose(x.detach().reshape(2, 2)), x.detach().reshape(2, 2).t())
    assert x.grad is None


# ------------------------------------------------------------ torch.func under torch.compile

@pytest.mark.parametrize("transform", ["grad", "vmap", "jacrev"])
# dynamo's own, tracing jacrev's vmap (torch's code reads a .grad, not ksbind's), and its notice that it
# breaks the graph at functorch's is_functorch_wrapped_tensor (in the Function's backward, which jacrev's
# vmap traces): warnings without fullgraph, which pytest would make errors
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf Tensor:UserWarning")
@pytest.mark.filterwarnings("ignore:Dynamo does not know how to trace the builtin:UserWarning")
def test_torch_func_of_a_binding_under_fullgraph_compile_says_what_to_do(ops: ModuleType, transform: str) -> None:
    """dynamo cannot trace the Function ksbind routes torch.func through: with fullgraph the error
    names the binding and the way out (it said "Attempted to call function marked as skipped");
    without fullgraph the graph breaks around the call, which runs eagerly, and the result is right."""
    calls: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "grad": lambda x: torch.func.grad(lambda y: ops.vrelu3(y).sum())(x),
        "vmap": lambda x: torch.vmap(ops.vrelu3)(x.reshape(1, -1)),
        "jacrev": lambda x: torch.func.jacrev(ops.vrelu3)(x),
    }
    f = calls[transform]
    x = torch.randn(6)
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"vrelu3\(\): torch.compile cannot trace a torch.func transform .* compile "
                                        r"without fullgraph=True"):
        torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend="aot_eager")(x), f(x))
