"""End to end: the torch_stable target (the torch target on PyTorch's stable ABI).

configs/torch_stable.yaml's module is built once per session and runtime and checked
against the torch target's (configs/torch_ops.yaml): the same values and gradients,
and what only a dispatcher op gives: opcheck, torch.compile(fullgraph=True),
torch.export, torch.func and torch.vmap with their batching rules, and a library
that links nothing of Python.
"""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

import ksbind.torch_runtime as torch_runtime  # noqa: E402
from ksbind import KsbindWarning  # noqa: E402

from .e2e_support import _build, gradcheck32  # noqa: E402

CASES: dict[str, Any] = {
    "vrelu3": lambda: (torch.randn(7),),
    "relu3": lambda: (torch.randn(3, 4),),
    "mulsin": lambda: (torch.randn(3, 1), torch.randn(4)),
    "scale_add": lambda: (torch.randn(5), torch.randn(5), 3),
    "sumsq_rows": lambda: (torch.randn(5, 3),),
    "vrelu3_rows": lambda: (torch.randn(5, 3),),
    "stats_rows": lambda: (torch.randn(4, 3),),
    "scale_add_rows": lambda: (torch.randn(4, 3), torch.randn(4, 3), 2),
    "add_int_rows": lambda: (torch.arange(6, dtype=torch.int32).reshape(2, 3), 5),
    "add_int": lambda: (torch.arange(4, dtype=torch.int32), 2),
    "count_true": lambda: (torch.tensor([True, False, True]),),
    "transpose": lambda: (torch.randn(2, 3),),
    "stats": lambda: (torch.randn(6),),
    "tsum": lambda: ((torch.randn(3), 2.0), 3),
    "rowsums": lambda: (torch.randn(3, 4),),
    "split_stats": lambda: (torch.randn(6),),
}
GRAD_CASES = ["vrelu3", "relu3", "mulsin", "scale_add", "sumsq_rows", "vrelu3_rows", "rowsums", "split_stats"]


def _same(a: Any, b: Any) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    torch.testing.assert_close(a, b)


def _float_sum(out: Any) -> torch.Tensor:
    parts = out if isinstance(out, tuple) else (out,)
    return sum((p.sum() for p in parts if p.is_floating_point()), torch.zeros(()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_the_torch_target(torch_stable: ModuleType, torch_ops: ModuleType, name: str) -> None:
    torch.manual_seed(0)
    args = CASES[name]()
    _same(getattr(torch_stable, name)(*args), getattr(torch_ops, name)(*args))


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradients_match_the_torch_target(torch_stable: ModuleType, torch_ops: ModuleType, name: str) -> None:
    torch.manual_seed(1)
    args = CASES[name]()
    grads = []
    for m in (torch_stable, torch_ops):
        a = [t.clone().requires_grad_() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in args]
        _float_sum(getattr(m, name)(*a)).backward()
        grads.append([t.grad for t in a if isinstance(t, torch.Tensor) and t.requires_grad])
    for g, h in zip(*grads):
        torch.testing.assert_close(g, h)


def test_every_binding_is_a_dispatcher_op_that_passes_opcheck(torch_stable: ModuleType) -> None:
    torch.manual_seed(2)
    for name in ("vrelu3", "relu3", "scale_add", "sumsq_rows", "stats", "split_stats"):
        differentiable = name != "stats"  # stats has no vjp
        args = [a.requires_grad_() if differentiable and isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in CASES[name]()]
        op = getattr(_ops(torch_stable), name)
        assert getattr(torch_stable, name).op is op
        torch.library.opcheck(op, tuple(args))


def test_gradcheck_through_the_vjp_op(torch_stable: ModuleType) -> None:
    x = (torch.rand(6) * 4 - 2).requires_grad_()
    assert gradcheck32(torch_stable.vrelu3, x)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # inductor's own use of torch.jit
def test_torch_compile_fullgraph_forward_and_backward(torch_stable: ModuleType, backend: str) -> None:
    torch._dynamo.reset()

    def f(v: torch.Tensor) -> torch.Tensor:
        return torch_stable.vrelu3(v).sum() + torch_stable.relu3(v * 2).sum()

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    v = torch.randn(8, requires_grad=True)
    w = v.detach().clone().requires_grad_()
    compiled(v).backward()
    f(w).backward()
    torch.testing.assert_close(v.grad, w.grad)


def test_torch_export_records_the_op(torch_stable: ModuleType) -> None:
    class Model(torch.nn.Module):
        def forward(self, v: torch.Tensor) -> torch.Tensor:
            return torch_stable.vrelu3(v)

    exported = torch.export.export(Model(), (torch.randn(5),))
    targets = [n.target for n in exported.graph.nodes if n.op == "call_function"]
    assert _ops(torch_stable).vrelu3.default in targets, targets
    x = torch.randn(5)
    torch.testing.assert_close(exported.module()(x), torch_stable.vrelu3(x))


def test_torch_func_grad_vjp_jacrev(torch_stable: ModuleType, torch_ops: ModuleType) -> None:
    import torch.func as tf

    v = torch.randn(5)
    torch.testing.assert_close(tf.grad(lambda a: torch_stable.vrelu3(a).sum())(v),
                               tf.grad(lambda a: torch_ops.vrelu3(a).sum())(v))
    torch.testing.assert_close(tf.jacrev(torch_stable.vrelu3)(v), tf.jacrev(torch_ops.vrelu3)(v))
    grads = []
    for m in (torch_stable, torch_ops):
        found = tf.vjp(lambda a, b, m=m: m.scale_add(a, b, 3), v, v * 2)
        out, vjp_fn = found[0], found[1]
        grads.append(vjp_fn(torch.ones_like(out)))
    for g, h in zip(grads[0], grads[1]):
        torch.testing.assert_close(g, h)


@pytest.mark.parametrize("name, shape", [("vrelu3", (3, 5)), ("relu3", (3, 4)), ("sumsq_rows", (2, 3, 4))])
def test_torch_vmap_uses_a_batching_rule(torch_stable: ModuleType, name: str, shape: tuple[int, ...]) -> None:
    """No fallback warning (the per-sample one torch gives an op without a rule) and the values of a loop."""
    x = torch.randn(*shape)
    f = getattr(torch_stable, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batched = torch.vmap(f)(x)
    torch.testing.assert_close(batched, torch.stack([f(row) for row in x]))


def test_double_backward_is_a_clear_error(torch_stable: ModuleType) -> None:
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad(torch_stable.vrelu3(x).sum(), x, create_graph=True)


def test_negative_and_conjugate_bits_are_resolved(torch_stable: ModuleType) -> None:
    neg = torch._neg_view(torch.tensor([-0.5, 2.0]))
    torch.testing.assert_close(torch_stable.vrelu3(neg), torch_stable.vrelu3(torch.tensor([0.5, -2.0])))
    imag = torch.tensor([2 + 0.5j, -1 + 1j]).conj().imag  # holds -0.5, -1.0
    torch.testing.assert_close(torch_stable.vrelu3(imag), torch.zeros(2))


def test_bad_arguments_name_the_argument(torch_stable: ModuleType) -> None:
    with pytest.raises(TypeError, match=r"vrelu3\(\): argument 't': expected a torch.float32 tensor"):
        torch_stable.vrelu3(torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"vrelu3\(\): argument 't': expected a 1-dimensional tensor"):
        torch_stable.vrelu3(torch.ones(2, 2))
    with pytest.raises(TypeError, match=r"argument 't': expected a torch.Tensor, got list"):
        torch_stable.vrelu3([1.0])
    with pytest.raises(OverflowError, match="ks Integer"):
        torch_stable.add_int(torch.arange(3, dtype=torch.int32), 2**40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(ValueError, match="argument 't': expected a dense tensor, got a nested tensor"):
        torch_stable.vrelu3(nested)
    with pytest.raises(TypeError, match="missing a required argument"):
        torch_stable.scale_add(torch.ones(2))
    torch.testing.assert_close(torch_stable.scale_add(a=torch.ones(2), b=torch.ones(2), n=2), torch.full((2,), 3.0))


def test_string_arguments(torch_stable: ModuleType) -> None:
    got = torch_stable.count("mississippi", "s")
    assert got.dtype == torch.int32 and got.dim() == 0 and int(got) == 4
    with pytest.raises(TypeError, match=r"count\(\): argument '\w+': expected a str for ks String, got int"):
        torch_stable.count("abc", 3)


def test_support_functions(torch_stable: ModuleType) -> None:
    assert torch_stable.cpu_capability() in torch_stable.cpu_capabilities()
    assert torch_stable.cpu_capabilities()[0] == "default"
    assert torch_stable.allocator_top() == 0 and torch_stable.arena_bytes() > 0
    try:
        assert torch_stable._set_cpu_capability("default") == "default"
        torch.testing.assert_close(torch_stable.relu3(torch.tensor([2.0])), torch.tensor([2.0 - 2.0 / 3.0]))
    finally:
        torch_stable._set_cpu_capability(torch_stable.cpu_capabilities()[-1])


def _ops(module: ModuleType) -> Any:
    """The module's op namespace (its name: the ksc-runtime build has a name of its own)."""
    return getattr(torch.ops, module.__name__)


def _library(module: ModuleType) -> Path:
    return Path(str(module.__file__)).with_name(module.__name__ + "_torchops.so")


def test_the_library_needs_no_python_and_records_its_torches(torch_stable: ModuleType) -> None:
    lib = _library(torch_stable)
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "libtorch_cpu" in needed and "libtorch_python" not in needed and "libpython" not in needed, needed
    symbols = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True,
                             check=True).stdout
    assert not [s for s in symbols.split() if s.startswith(("Py", "_Py"))], "the library calls Python's C API"
    assert "pybind11" not in symbols
    assert torch_runtime.torch_needed(str(lib)) == "2.10"
    assert f"ksbind-torch-built={torch.__version__.split('+')[0]}".encode() in lib.read_bytes()


def test_an_older_torch_is_a_clear_import_error(torch_stable: ModuleType, tmp_path: Path) -> None:
    lib = _library(torch_stable)
    with pytest.raises(ImportError, match=r"needs torch 2\.10 or newer .* this process has torch 2\.9\.1"):
        torch_runtime.load_library(str(lib), "ksbind_never_loaded", running="2.9.1")


def test_a_second_library_for_one_namespace_is_refused(torch_stable: ModuleType, tmp_path: Path) -> None:
    copy = tmp_path / "copy_torchops.so"
    copy.write_bytes(_library(torch_stable).read_bytes())
    with pytest.raises(ImportError, match=f"torch.ops.{torch_stable.__name__} is already registered"):
        torch_runtime.load_library(str(copy), torch_stable.__name__)


def test_the_module_loads_in_a_fresh_process_without_ksbind_building(torch_stable: ModuleType) -> None:
    folder = Path(str(torch_stable.__file__)).parent
    code = ("import importlib, sys, torch; sys.path.insert(0, sys.argv[1]); m = importlib.import_module(sys.argv[2]); "
            "print(m.vrelu3(torch.tensor([2.0])).item())")
    out = subprocess.run([sys.executable, "-c", code, str(folder), torch_stable.__name__], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout) - (2.0 - 2.0 / 3.0)) < 1e-6


# ------------------------------------------------------------ tensors of tensors, ragged

def _same_nested(a: Any, b: Any) -> None:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for p, q in zip(a, b):
            _same_nested(p, q)
        return
    _same(a, b)


def test_ragged_tensors_of_tensors_as_the_torch_target_takes_and_returns_them(
        torch_stable: ModuleType, torch_ops: ModuleType) -> None:
    """A list for a tensor of tensors (ragged or not, deeper nestings mixed) and a ragged result
    take the binding's packed op: the same values and gradients as the torch target's."""
    torch.manual_seed(5)
    ragged = [torch.randn(2), torch.randn(3), torch.randn(0)]
    for rows in (ragged, [torch.randn(3), torch.randn(3)], torch.randn(2, 3)):
        _same(torch_stable.rowsums(rows), torch_ops.rowsums(rows))
    cube = [torch.randn(2, 3), [torch.randn(1), torch.randn(4)]]
    _same(torch_stable.cube_sum(cube), torch_ops.cube_sum(cube))
    w = torch.randn(3)
    _same(torch_stable.weighted(ragged, w, 2.0), torch_ops.weighted(ragged, w, 2.0))
    v = torch.randn(4)
    got = torch_stable.prefixes(v)
    assert isinstance(got, list) and [t.shape[0] for t in got] == [1, 2, 3, 4]  # ragged: a list
    _same_nested(got, torch_ops.prefixes(v))
    assert torch_stable.prefixes(torch.randn(1)).shape == (1, 1)  # one shape: stacked, as the torch target
    _same_nested(torch_stable.prefixes_vjp(v, got), torch_ops.prefixes_vjp(v, got))
    _same_nested(torch_stable.rowsums_vjp(ragged, torch.ones(3)), torch_ops.rowsums_vjp(ragged, torch.ones(3)))
    grads = []
    for m in (torch_stable, torch_ops):
        rows = [t.clone().requires_grad_() for t in ragged]
        w = torch.ones(3, requires_grad=True)
        (m.weighted(rows, w, 2.0) + sum(p.sum() for p in m.prefixes(rows[1]))).backward()
        grads.append([*(t.grad for t in rows), w.grad])
    for g, h in zip(*grads):
        torch.testing.assert_close(g, h)
    torch.testing.assert_close(torch.func.grad(lambda x: sum(p.sum() for p in torch_stable.prefixes(x)))(v),
                               torch.tensor([4.0, 3.0, 2.0, 1.0]))
    # The ks function sees the rows of a stacked tensor, not a copy (the packed op views them too).
    stacked = torch.zeros(2, 3)
    assert int(torch_stable.poke_rows(stacked, 7.0)) == 2 and stacked[:, 0].tolist() == [7.0, 7.0]


def test_a_traced_tensor_of_tensors_takes_the_stacked_op(torch_stable: ModuleType) -> None:
    """Under torch.compile the op (its schema stacks tensors of tensors) is traced; a ragged
    result there is the op's ValueError."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: torch_stable.rowsums(x).sum(), fullgraph=True, backend="aot_eager")
    x = torch.randn(3, 4, requires_grad=True)
    compiled(x).backward()
    torch.testing.assert_close(x.grad, torch.ones(3, 4))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="ragged"):
        torch.compile(lambda v: torch_stable.prefixes(v), fullgraph=True, backend="aot_eager")(torch.randn(3))


# ------------------------------------------------------------ packed bindings

@pytest.fixture(scope="module")
def packed() -> tuple[ModuleType, list[str]]:
    """configs/torch_stable.yaml's torch_stable_packed, built here (not in the background) so
    that its build's warnings are the ones recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", KsbindWarning)
        module = _build("torch_stable.yaml", "torch_stable_packed", "bundled")
    return module, [str(w.message) for w in caught if issubclass(w.category, KsbindWarning)]


def _pairs() -> list[tuple[Any, torch.Tensor]]:
    return [(1.5, torch.randn(3)), (torch.tensor(-2.0), torch.randn(1)), (0.25, torch.randn(4))]


def test_a_binding_no_schema_can_say_is_a_packed_op_with_a_warning(packed: tuple[ModuleType, list[str]]) -> None:
    m, messages = packed
    named = {name: [t for t in messages if f"binding {name!r}" in t] for name in ("pairsum", "numbered", "shout")}
    assert all(len(found) == 1 for found in named.values()), messages
    assert "a list in Python, which an op's schema cannot say" in named["pairsum"][0]
    assert "a String result, which an op's schema cannot return" in named["shout"][0]
    assert all("torch.compile does not trace it" in t for t in messages)
    assert not any("'count'" in t for t in messages)  # strings as arguments are an op's `str`
    assert len(messages) == 3
    assert m.count.op is torch.ops.torch_stable_packed.count
    assert str(torch.ops.torch_stable_packed.pairsum.default._schema) == \
        "torch_stable_packed::pairsum(Tensor[] leaves) -> Tensor[]"


def test_packed_values_match_the_torch_target(packed: tuple[ModuleType, list[str]], torch_ops: ModuleType) -> None:
    m, _ = packed
    torch.manual_seed(3)
    pairs = _pairs()
    _same(m.pairsum(pairs), torch_ops.pairsum(pairs))
    for rows in ([torch.randn(2), torch.randn(3)], torch.randn(2, 3), []):
        got, want = m.numbered(rows), torch_ops.numbered(rows)
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    assert m.shout("hello, ks", 2) == "HELLO, KS!!" and m.shout("", 0) == ""
    assert m.shout("çé", 1) == "çé!"  # bytes other than a-z pass through, UTF-8 kept
    assert int(m.count("banana", "a")) == 3


def test_packed_gradients_match_the_torch_target(packed: tuple[ModuleType, list[str]],
                                                 torch_ops: ModuleType) -> None:
    m, _ = packed
    torch.manual_seed(4)
    given = _pairs()
    grads = []
    for module in (m, torch_ops):
        pairs = [(torch.tensor(a).requires_grad_() if isinstance(a, float) else a.clone().requires_grad_(),
                  v.clone().requires_grad_()) for a, v in given]
        module.pairsum(pairs).backward()
        grads.append([t.grad for pair in pairs for t in pair])
    for g, h in zip(*grads):
        torch.testing.assert_close(g, h)
    v = torch.randn(3)
    torch.testing.assert_close(torch.func.grad(lambda x: m.pairsum([(2.0, x)]))(v), torch_ops.pairsum_vjp(
        [(2.0, v)], torch.tensor(1.0))[0][1])
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad(m.pairsum([(1.0, x)]), x, create_graph=True)


def test_packed_bindings_under_torch_compile_and_vmap(packed: tuple[ModuleType, list[str]]) -> None:
    m, _ = packed
    x = torch.randn(4, 3)

    def f(v: torch.Tensor) -> torch.Tensor:
        return m.pairsum([(1.0, v)]) * 2

    torch.testing.assert_close(torch.vmap(f)(x), torch.stack([f(row) for row in x]))
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend="aot_eager")(x[0]), f(x[0]))  # a graph break
    torch._dynamo.reset()
    with pytest.raises(Exception, match="packed op"):
        torch.compile(f, backend="aot_eager", fullgraph=True)(x[1])


def test_packed_bad_arguments_name_the_argument(packed: tuple[ModuleType, list[str]]) -> None:
    m, _ = packed
    with pytest.raises(TypeError, match=r"pairsum\(\): argument '\w+\[1\]\[1\]': expected a torch.float32 tensor"):
        m.pairsum([(1.0, torch.ones(2)), (1.0, torch.ones(2, dtype=torch.float64))])
    with pytest.raises(ValueError, match=r"argument '\w+\[0\]\[1\]': expected a 1-dimensional tensor"):
        m.pairsum([(1.0, torch.ones(2, 2))])
    with pytest.raises(TypeError, match=r"argument '\w+\[0\]': expected a tuple of 2"):
        m.pairsum([(1.0, torch.ones(2), 3)])
    with pytest.raises(TypeError, match=r"argument '\w+': expected a list \(or a stacked tensor\), got int"):
        m.pairsum(3)
    with pytest.raises(OverflowError, match=r"shout\(\): argument '\w+': int out of range for ks Integer"):
        m.shout("x", 2**40)
    with pytest.raises(TypeError, match=r"shout\(\): argument '\w+': expected a str for ks String, got bytes"):
        m.shout(b"x", 1)
    with pytest.raises(ValueError, match="CPU tensor"):
        m.pairsum([(1.0, torch.ones(2, device="meta"))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(ValueError, match=r"argument '\w+\[0\]\[1\]': expected a dense tensor, got a nested tensor"):
        m.pairsum([(1.0, nested)])
    with pytest.raises(ValueError, match=r"argument '\w+\[0\]\[1\]': expected a dense \(strided\) tensor"):
        m.pairsum([(1.0, torch.ones(2).to_sparse())])
