"""End to end: the torch target's bindings as dispatcher ops, on PyTorch's stable ABI.

configs/torch_ops.yaml's `torch_ops` module (built once per session and runtime,
tests/e2e_support.py) checked for what only a dispatcher op gives: opcheck,
torch.compile(fullgraph=True), torch.export and torch.vmap with their batching
rules, and a library that links nothing of Python; then ragged tensors of tensors
(the bindings' packed ops), and the `torch_ops_packed` module, whose bindings no op
schema can say (packed ops, a KsbindWarning each at build). Values and gradients
are checked against hand-computed results and eager PyTorch; tests/test_torch.py,
test_torch_nested.py and test_torch_func.py check the bindings' values and
gradients case by case.
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

import ksbind.targets.torch.runtime as torch_runtime  # noqa: E402
from ksbind import KsbindWarning  # noqa: E402

from .e2e_support import _build, gradcheck32  # noqa: E402

#: Arguments for the ops opcheck runs on (a plain, an elementwise and a vmap binding; a
#: discrete argument; tuple results with and without a vjp).
CASES: dict[str, Any] = {
    "vrelu3": lambda: (torch.randn(7),),
    "relu3": lambda: (torch.randn(3, 4),),
    "scale_add": lambda: (torch.randn(5), torch.randn(5), 3),
    "sumsq_rows": lambda: (torch.randn(5, 3),),
    "stats": lambda: (torch.randn(6),),
    "split_stats": lambda: (torch.randn(6),),
    "poke_at": lambda: (torch.randn(4), 2.5),  # writes into its tensor: opcheck checks the schema says so
}


def _ops(module: ModuleType) -> Any:
    """The module's op namespace (its name: the ksc-runtime build has a name of its own)."""
    return getattr(torch.ops, module.__name__)


def test_every_binding_is_a_dispatcher_op_that_passes_opcheck(torch_ops: ModuleType) -> None:
    torch.manual_seed(2)
    for name, make in CASES.items():
        differentiable = name not in ("stats", "poke_at")  # no vjp
        args = [a.requires_grad_() if differentiable and isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in make()]
        op = getattr(_ops(torch_ops), name)
        assert getattr(torch_ops, name).op is op
        result = torch.library.opcheck(op, tuple(args))
        assert all(v == "SUCCESS" for v in result.values()), (name, result)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # inductor's own use of torch.jit
def test_torch_compile_fullgraph_forward_and_backward(torch_ops: ModuleType, backend: str) -> None:
    torch._dynamo.reset()

    def f(v: torch.Tensor) -> torch.Tensor:
        return torch_ops.vrelu3(v).sum() + torch_ops.relu3(v * 2).sum()

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    v = torch.randn(8, requires_grad=True)
    w = v.detach().clone().requires_grad_()
    compiled(v).backward()
    f(w).backward()
    torch.testing.assert_close(v.grad, w.grad)


@pytest.mark.parametrize("scalar_args", [False, True])
def test_torch_compile_fullgraph_of_calls_needing_no_gradient(torch_ops: ModuleType, scalar_args: bool) -> None:
    """Eager calls without gradients reach the direct op's builtin, which dynamo cannot trace: a trace
    must record the op instead (vrelu3: the generated fast path; scale_add, with an int: the general)."""
    torch._dynamo.reset()

    def f(v: torch.Tensor) -> torch.Tensor:
        return (torch_ops.scale_add(v, v, 3) if scalar_args else torch_ops.vrelu3(v)) * 2

    v = torch.randn(8)
    torch.testing.assert_close(torch.compile(f, fullgraph=True, backend="aot_eager")(v), f(v))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_integer_from_item_reaches_the_op_under_torch_compile(torch_ops: ModuleType, backend: str) -> None:
    """A ks Integer argument is a SymInt in the schema: an int that torch.compile only knows as a
    symbol (n.item()) is accepted (an `int` schema refused it: "found type 'SymInt'"), and its
    range is still checked when the value arrives."""
    torch._dynamo.reset()

    def f(v: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        return torch_ops.add_int(v, n.item())

    v = torch.arange(3, dtype=torch.int32)
    assert "SymInt" in str(_ops(torch_ops).add_int.default._schema)
    g = torch.compile(f, fullgraph=True, backend=backend)
    assert g(v, torch.tensor(5)).tolist() == [5, 6, 7]
    assert g(v, torch.tensor(-2)).tolist() == [-2, -1, 0]
    with pytest.raises(Exception, match="int out of range for ks Integer"):
        g(v, torch.tensor(2**40))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_declared_write_is_kept_in_order_under_torch_compile(torch_ops: ModuleType, backend: str) -> None:
    """poke_at is poke with `mutates: arg0`: its schema says Tensor(a!), so a compiled graph keeps the
    write, after the reads before it (undeclared, the write was dropped, and t.sum() before it read 9)."""
    torch._dynamo.reset()
    assert "Tensor(a!)" in str(_ops(torch_ops).poke_at.default._schema)

    def g(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        before = t.sum()
        torch_ops.poke_at(t, 9.0)
        return before, t * 1

    def h(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        before = t.sum()
        old = torch_ops.poke_at(t, 9.0)  # its result used too
        return before, old, t * 1

    for fn in (g, h):
        eager_t, compiled_t = torch.arange(3.0), torch.arange(3.0)
        want = fn(eager_t)
        got = torch.compile(fn, fullgraph=True, backend=backend)(compiled_t)
        for w, x in zip(want, got):
            torch.testing.assert_close(x, torch.as_tensor(w))
        assert float(got[0]) == 3.0 and got[-1].tolist() == [9.0, 1.0, 2.0]
        assert compiled_t.tolist() == [9.0, 1.0, 2.0]  # the caller's tensor written, as eagerly


def test_a_declared_write_bumps_the_version_and_refuses_what_would_lose_it(torch_ops: ModuleType) -> None:
    y = torch.randn(4, requires_grad=True)
    z = y * y  # saves y for backward
    before = y._version
    torch_ops.poke_at(y.detach(), 5.0)  # detach shares the version counter
    assert y._version > before and y[0].item() == 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match=r"poke_at\(\): argument 'arg0' requires grad, and this binding writes "
                                           r"into it \(mutates\)"):
        torch_ops.poke_at(torch.randn(3, requires_grad=True), 1.0)
    with torch.no_grad():  # as torch's own in-place ops allow
        leaf = torch.zeros(3, requires_grad=True)
        torch_ops.poke_at(leaf, 1.0)
    assert leaf[0].item() == 1.0
    m = torch.zeros(4, 3)
    with pytest.raises(ValueError, match=r"poke_at\(\): argument 'arg0': this binding writes into it \(mutates\), "
                                         r"and it is not contiguous"):
        torch_ops.poke_at(m[:, 1], 1.0)
    assert m.abs().sum() == 0  # nothing written anywhere


def test_the_eager_entry_is_the_overloads_builtin_where_torch_has_one() -> None:
    add = torch.ops.aten.add.Tensor
    assert torch_runtime._eager_entry(add) is add._op

    class OverloadWithoutBuiltin:
        def __call__(self, *args: Any) -> Any:
            return args

    other = OverloadWithoutBuiltin()
    assert torch_runtime._eager_entry(other) is other


def test_eager_calls_go_through_torch_function_and_dispatch_modes(torch_ops: ModuleType) -> None:
    """The builtin an eager call takes dispatches as the op overload does: modes see the op."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(f"function {func}")
            return func(*args, **(kwargs or {}))

    class DispatchMode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(f"dispatch {func}")
            return func(*args, **(kwargs or {}))

    ns = torch_ops.__name__
    v = torch.randn(4)
    for mode in (FunctionMode, DispatchMode):
        for call, op in ((lambda: torch_ops.vrelu3(v), "vrelu3"), (lambda: torch_ops.scale_add(v, v, 2), "scale_add")):
            seen.clear()
            with mode():
                out = call()
            kind = "function" if mode is FunctionMode else "dispatch"
            assert f"{kind} {ns}._direct_{op}.default" in seen, seen
            assert torch.isfinite(out).all()


def test_torch_export_records_the_op(torch_ops: ModuleType) -> None:
    class Model(torch.nn.Module):
        def forward(self, v: torch.Tensor) -> torch.Tensor:
            return torch_ops.vrelu3(v)

    exported = torch.export.export(Model(), (torch.randn(5),))
    targets = [n.target for n in exported.graph.nodes if n.op == "call_function"]
    assert _ops(torch_ops).vrelu3.default in targets, targets
    x = torch.randn(5)
    torch.testing.assert_close(exported.module()(x), torch_ops.vrelu3(x))


@pytest.mark.parametrize("name, shape", [("vrelu3", (3, 5)), ("relu3", (3, 4)), ("sumsq_rows", (2, 3, 4))])
def test_torch_vmap_uses_a_batching_rule(torch_ops: ModuleType, name: str, shape: tuple[int, ...]) -> None:
    """No fallback warning (the per-sample one torch gives an op without a rule) and the values of a loop."""
    x = torch.randn(*shape)
    f = getattr(torch_ops, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batched = torch.vmap(f)(x)
    torch.testing.assert_close(batched, torch.stack([f(row) for row in x]))


def test_bad_arguments_name_the_binding_and_the_argument(torch_ops: ModuleType) -> None:
    with pytest.raises(TypeError, match=r"vrelu3\(\): argument 't': expected a torch.float32 tensor"):
        torch_ops.vrelu3(torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"vrelu3\(\): argument 't': expected a 1-dimensional tensor"):
        torch_ops.vrelu3(torch.ones(2, 2))
    with pytest.raises(TypeError, match=r"argument 't': expected a torch.Tensor, got list"):
        torch_ops.vrelu3([1.0])
    with pytest.raises(OverflowError, match="ks Integer"):
        torch_ops.add_int(torch.arange(3, dtype=torch.int32), 2**40)
    with pytest.raises(TypeError, match="missing a required argument"):
        torch_ops.scale_add(torch.ones(2))


def test_a_kernels_type_error_is_typed_not_read_off_its_message(torch_ops: ModuleType) -> None:
    """torch raises a stable-ABI kernel's type error as RuntimeError with the kernel's text alone (no
    marker in it); the binding raises TypeError from the kernel's own record of the error's type,
    which a record left by a direct op call (never translated) cannot lend to another error."""
    from ksbind.targets.torch.runtime import calls

    wrong = torch.ones(3, dtype=torch.float64)
    with pytest.raises(RuntimeError) as direct:
        torch_ops.ops.vrelu3(wrong)  # the op itself: torch's RuntimeError, the kernel's text
    assert type(direct.value) is RuntimeError
    assert str(direct.value).startswith("argument 't': expected a torch.float32 tensor"), str(direct.value)
    # Its record is still there; another text does not match it, and asking takes it.
    assert not calls._raised_as_type_error("argument 't': something else")
    assert not calls._raised_as_type_error(str(direct.value))
    with pytest.raises(TypeError, match=r"^vrelu3\(\): argument 't': expected a torch.float32 tensor"):
        torch_ops.vrelu3(wrong)
    # The same text, raised as a RuntimeError by something else, stays a RuntimeError.
    error = calls._translated(RuntimeError(str(direct.value)), "vrelu3")
    assert type(error) is RuntimeError


def test_string_arguments(torch_ops: ModuleType) -> None:
    got = torch_ops.count("mississippi", "s")
    assert got.dtype == torch.int32 and got.dim() == 0 and int(got) == 4
    with pytest.raises(TypeError, match=r"count\(\): argument '\w+': expected a str for ks String, got int"):
        torch_ops.count("abc", 3)
    # A lone surrogate has no UTF-8: said naming the argument (the dispatcher said "Expected a value
    # of type 'str' ... found type 'str'").
    with pytest.raises(ValueError, match=r"count\(\): argument '\w+': a ks String is UTF-8 text, and this str "
                                         r"has a lone surrogate \('\\ud800' at index 1\)"):
        torch_ops.count("a\ud800b", "s")


def test_support_functions(torch_ops: ModuleType) -> None:
    assert torch_ops.cpu_capability() in torch_ops.cpu_capabilities()
    assert torch_ops.cpu_capabilities()[0] == "default"
    assert torch_ops.allocator_top() == 0 and torch_ops.arena_bytes() > 0
    try:
        assert torch_ops._set_cpu_capability("default") == "default"
        torch.testing.assert_close(torch_ops.relu3(torch.tensor([2.0])), torch.tensor([2.0 - 2.0 / 3.0]))
    finally:
        torch_ops._set_cpu_capability(torch_ops.cpu_capabilities()[-1])


# ------------------------------------------------------------ the op library

def _library(module: ModuleType) -> Path:
    return Path(str(module.__file__)).with_name(module.__name__ + "_torchops.so")


def test_the_library_needs_no_python_and_records_its_torches(torch_ops: ModuleType) -> None:
    lib = _library(torch_ops)
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "libtorch_cpu" in needed and "libtorch_python" not in needed and "libpython" not in needed, needed
    symbols = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True,
                             check=True).stdout
    assert not [s for s in symbols.split() if s.startswith(("Py", "_Py"))], "the library calls Python's C API"
    assert "pybind11" not in symbols
    assert torch_runtime.torch_needed(str(lib)) == "2.10"
    assert f"ksbind-torch-built={torch.__version__.split('+')[0]}".encode() in lib.read_bytes()


def test_an_older_torch_is_a_clear_import_error(torch_ops: ModuleType) -> None:
    lib = _library(torch_ops)
    with pytest.raises(ImportError, match=r"needs torch 2\.10 or newer .* this process has torch 2\.9\.1"):
        torch_runtime.load_library(str(lib), "ksbind_never_loaded", running="2.9.1")


def test_a_second_library_for_one_namespace_is_refused(torch_ops: ModuleType, tmp_path: Path) -> None:
    copy = tmp_path / "copy_torchops.so"
    copy.write_bytes(_library(torch_ops).read_bytes())
    with pytest.raises(ImportError, match=f"torch.ops.{torch_ops.__name__} is already registered"):
        torch_runtime.load_library(str(copy), torch_ops.__name__)


def test_the_module_loads_in_a_fresh_process_without_ksbind_building(torch_ops: ModuleType) -> None:
    folder = Path(str(torch_ops.__file__)).parent
    code = ("import importlib, sys, torch; sys.path.insert(0, sys.argv[1]); m = importlib.import_module(sys.argv[2]); "
            "print(m.vrelu3(torch.tensor([2.0])).item())")
    out = subprocess.run([sys.executable, "-c", code, str(folder), torch_ops.__name__], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout) - (2.0 - 2.0 / 3.0)) < 1e-6


# ------------------------------------------------------------ tensors of tensors, ragged

def _weighted_ref(rows: list[torch.Tensor], w: torch.Tensor, a: float) -> torch.Tensor:
    """weighted in eager PyTorch: a * sum_i w[i] * |rows[i]|^2."""
    return a * sum((w[i] * (r * r).sum() for i, r in enumerate(rows)), torch.zeros(()))


def test_ragged_tensors_of_tensors_take_the_packed_ops(torch_ops: ModuleType) -> None:
    """A list for a tensor of tensors (ragged or not, deeper nestings mixed) and a ragged result
    take the binding's packed op: a list comes back where rows differ in shape."""
    m = torch_ops
    torch.manual_seed(5)
    ragged = [torch.randn(2), torch.randn(3), torch.randn(0)]
    for rows in (ragged, [torch.randn(3), torch.randn(3)], torch.randn(2, 3)):
        torch.testing.assert_close(m.rowsums(rows), torch.stack([r.sum() for r in rows]))
    block, short, long = torch.randn(2, 3), torch.randn(1), torch.randn(4)
    torch.testing.assert_close(m.cube_sum([block, [short, long]]), block.sum() + short.sum() + long.sum())
    w = torch.randn(3)
    torch.testing.assert_close(m.weighted(ragged, w, 2.0), _weighted_ref(ragged, w, 2.0))
    v = torch.randn(4)
    got = m.prefixes(v)
    assert isinstance(got, list) and [p.tolist() for p in got] == [v[:i + 1].tolist() for i in range(4)]
    assert m.prefixes(torch.randn(1)).shape == (1, 1)  # one shape: one stacked tensor
    # prefixes_vjp sums each row's gradient into v: v[j] is in rows j..3.
    torch.testing.assert_close(m.prefixes_vjp(v, got), v * torch.tensor([4.0, 3.0, 2.0, 1.0]))
    grads = m.rowsums_vjp(ragged, torch.tensor([1.0, 2.0, 3.0]))
    assert isinstance(grads, list) and [g.tolist() for g in grads] == [[1.0, 1.0], [2.0] * 3, []]
    # Gradients in the arguments' structure, against eager PyTorch's.
    rows = [t.clone().requires_grad_() for t in ragged]
    w = torch.ones(3, requires_grad=True)
    (m.weighted(rows, w, 2.0) + sum(p.sum() for p in m.prefixes(rows[1]))).backward()
    ref_rows = [t.clone().requires_grad_() for t in ragged]
    ref_w = torch.ones(3, requires_grad=True)
    (_weighted_ref(ref_rows, ref_w, 2.0) + sum(ref_rows[1][:i + 1].sum() for i in range(3))).backward()
    for g, h in zip([*(t.grad for t in rows), w.grad], [*(t.grad for t in ref_rows), ref_w.grad]):
        torch.testing.assert_close(g, h)
    torch.testing.assert_close(torch.func.grad(lambda x: sum(p.sum() for p in m.prefixes(x)))(v),
                               torch.tensor([4.0, 3.0, 2.0, 1.0]))
    # The ks function sees the rows of a stacked tensor, not a copy (the packed op views them too).
    stacked = torch.zeros(2, 3)
    assert int(m.poke_rows(stacked, 7.0)) == 2 and stacked[:, 0].tolist() == [7.0, 7.0]


def test_a_traced_tensor_of_tensors_takes_the_stacked_op(torch_ops: ModuleType) -> None:
    """Under torch.compile the op (its schema stacks tensors of tensors) is traced; a ragged
    result there is the op's ValueError."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: torch_ops.rowsums(x).sum(), fullgraph=True, backend="aot_eager")
    x = torch.randn(3, 4, requires_grad=True)
    compiled(x).backward()
    torch.testing.assert_close(x.grad, torch.ones(3, 4))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="ragged"):
        torch.compile(lambda v: torch_ops.prefixes(v), fullgraph=True, backend="aot_eager")(torch.randn(3))


# ------------------------------------------------------------ packed bindings

@pytest.fixture(scope="module")
def packed(runtime: str) -> tuple[ModuleType, list[str]]:
    """configs/torch_ops.yaml's torch_ops_packed on each runtime, built here (not in the
    background pool) so that its build's warnings are the ones recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", KsbindWarning)
        module = _build("torch_ops.yaml", "torch_ops_packed", runtime)
    return module, [str(w.message) for w in caught if issubclass(w.category, KsbindWarning)]


def _pairs() -> list[tuple[Any, torch.Tensor]]:
    return [(1.5, torch.randn(3)), (torch.tensor(-2.0), torch.randn(1)), (0.25, torch.randn(4))]


def _pairsum_ref(pairs: list[tuple[Any, torch.Tensor]]) -> torch.Tensor:
    """pairsum in eager PyTorch: the sum of a * sum(v) over the pairs."""
    return sum((torch.as_tensor(a) * v.sum() for a, v in pairs), torch.zeros(()))


def test_a_binding_no_schema_can_say_is_a_packed_op_with_a_warning(packed: tuple[ModuleType, list[str]]) -> None:
    m, messages = packed
    named = {name: [t for t in messages if f"binding {name!r}" in t] for name in ("pairsum", "numbered", "shout")}
    assert all(len(found) == 1 for found in named.values()), messages
    assert "a list in Python, which an op's schema cannot say" in named["pairsum"][0]
    assert "a String result, which an op's schema cannot return" in named["shout"][0]
    assert all("torch.compile does not trace it" in t for t in messages)
    assert not any("'count'" in t for t in messages)  # strings as arguments are an op's `str`
    assert len(messages) == 3
    assert m.count.op is _ops(m).count
    assert str(_ops(m).pairsum.default._schema) == f"{m.__name__}::pairsum(Tensor[] leaves) -> Tensor[]"


def test_packed_values(packed: tuple[ModuleType, list[str]]) -> None:
    """A list of tuples in (pairsum) and out (numbered), a String out (shout)."""
    m, _ = packed
    torch.manual_seed(3)
    pairs = _pairs()
    torch.testing.assert_close(m.pairsum(pairs), _pairsum_ref(pairs))
    assert m.pairsum([(2.0, torch.tensor([1.0, 2.0])), (torch.tensor(0.5), torch.tensor([3.0]))]).item() == 7.5
    for rows in ([torch.randn(2), torch.randn(3)], torch.randn(2, 3), []):
        got = m.numbered(rows)
        assert isinstance(got, list) and len(got) == len(rows)
        for i, (index, row) in enumerate(got):
            assert index.dtype == torch.int32 and index.dim() == 0 and index.item() == i
            torch.testing.assert_close(row, rows[i])
    assert m.shout("hello, ks", 2) == "HELLO, KS!!" and m.shout("", 0) == ""
    assert m.shout("çé", 1) == "çé!"  # bytes other than a-z pass through, UTF-8 kept
    assert int(m.count("banana", "a")) == 3


def test_packed_gradients(packed: tuple[ModuleType, list[str]]) -> None:
    m, _ = packed
    torch.manual_seed(4)
    given = _pairs()
    grads = []
    for f in (m.pairsum, _pairsum_ref):
        pairs = [(torch.tensor(a).requires_grad_() if isinstance(a, float) else a.clone().requires_grad_(),
                  v.clone().requires_grad_()) for a, v in given]
        f(pairs).backward()
        grads.append([t.grad for pair in pairs for t in pair])
    for g, h in zip(*grads):
        torch.testing.assert_close(g, h)
    v0, s0 = torch.randn(3, requires_grad=True), torch.tensor(0.5, requires_grad=True)
    assert gradcheck32(lambda v, s: m.pairsum([(s, v), (1.0, v * 2)]), v0, s0)
    torch.testing.assert_close(torch.func.grad(lambda x: m.pairsum([(2.0, x)]))(torch.randn(3)), torch.full((3,), 2.0))
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad(m.pairsum([(1.0, x)]), x, create_graph=True)


def test_importing_a_module_with_packed_bindings_does_not_import_dynamo(
        packed: tuple[ModuleType, list[str]]) -> None:
    """A packed binding's function (torch.compiler.disable'd, which imports torch._dynamo, seconds)
    is made when first used, not when the module is imported."""
    m, _ = packed
    code = ("import importlib, sys, torch; sys.path.insert(0, sys.argv[1]); m = importlib.import_module(sys.argv[2]); "
            "before = 'torch._dynamo' in sys.modules; names = dir(m); text = m.shout('hi', 1); "
            "print(before, 'shout' in names, 'pairsum_vjp' in names, text, 'torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(Path(str(m.__file__)).parent), m.__name__],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "HI!", "True"]


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


def test_a_packed_binding_under_export_says_it_cannot_be_traced(packed: tuple[ModuleType, list[str]]) -> None:
    """torch.export (non-strict) calls the packed function with data-less tensors: one sentence naming the
    binding (it was "expected a CPU tensor for ks sizes of a tensor (packed)")."""
    m, _ = packed

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = m.pairsum([(1.0, x), (2.0, x)])
            return out

    x = torch.randn(3)
    torch.testing.assert_close(Model()(x), 3 * x.sum())
    with pytest.raises(RuntimeError, match=r"pairsum\(\): a packed binding cannot be traced into a graph "
                                           r"\(torch.export, make_fx\)"):
        torch.export.export(Model(), (x,), strict=False)


def test_packed_bad_arguments_name_the_argument(packed: tuple[ModuleType, list[str]]) -> None:
    m, _ = packed
    with pytest.raises(TypeError, match=r"pairsum\(\): argument '\w+\[1\]\[1\]': expected a torch.float32 tensor"):
        m.pairsum([(1.0, torch.ones(2)), (1.0, torch.ones(2, dtype=torch.float64))])
    with pytest.raises(ValueError, match=r"argument '\w+\[0\]\[1\]': expected a 1-dimensional tensor"):
        m.pairsum([(1.0, torch.ones(2, 2))])
    for short_or_long in [(1.0,), (1.0, torch.ones(2), 3)]:
        with pytest.raises(TypeError, match=r"pairsum\(\): argument '\w+\[0\]': expected a tuple of 2"):
            m.pairsum([short_or_long])
    with pytest.raises(TypeError, match=r"argument '\w+': expected a list \(or a stacked tensor\), got int"):
        m.pairsum(3)
    with pytest.raises(OverflowError, match=r"shout\(\): argument '\w+': int out of range for ks Integer"):
        m.shout("x", 2**40)
    with pytest.raises(TypeError, match=r"shout\(\): argument '\w+': expected a str for ks String, got bytes"):
        m.shout(b"x", 1)
    with pytest.raises(ValueError, match=r"shout\(\): argument '\w+': .* lone surrogate \('\\udc80' at index 0\)"):
        m.shout("\udc80", 1)
    with pytest.raises(ValueError, match="CPU tensor"):
        m.pairsum([(1.0, torch.ones(2, device="meta"))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(ValueError, match=r"argument '\w+\[0\]\[1\]': expected a dense tensor, got a nested tensor"):
        m.pairsum([(1.0, nested)])
    with pytest.raises(ValueError, match=r"argument '\w+\[0\]\[1\]': expected a dense \(strided\) tensor"):
        m.pairsum([(1.0, torch.ones(2).to_sparse())])


@pytest.mark.parametrize("shape,dim", [((0, 2**32 + 3), 1), ((2**31, 0), 0), ((2**32 + 2, 0), 0)])
def test_every_dimension_is_checked_against_a_ks_tensors_sizes(torch_ops: ModuleType, shape: tuple[int, int],
                                                                dim: int) -> None:
    """A tensor of no elements may have a dimension of 2^31 or more, which a ks tensor's int sizes
    would wrap (a (0, 2^32 + 3) transpose came back (3, 0)): a ValueError naming the dimension."""
    with pytest.raises(ValueError, match=rf"dimension {dim} has size {shape[dim]}; ks tensors have 32-bit sizes"):
        torch_ops.transpose(torch.empty(shape))
    with pytest.raises(ValueError, match=rf"dimension {dim} has size"):
        torch_ops.rowsums(torch.empty(shape))


def test_a_complex_tensor_is_refused_naming_its_dtype(torch_ops: ModuleType) -> None:
    with pytest.raises(TypeError, match=r"expected a torch.float32 tensor .* got torch.complex64"):
        torch_ops.vrelu3(torch.zeros(3, dtype=torch.complex64))


def test_set_arena_bytes_of_a_float_is_a_type_error(torch_ops: ModuleType) -> None:
    with pytest.raises(TypeError, match=r"set_arena_bytes\(\): bytes must be an int, got float"):
        torch_ops.set_arena_bytes(1e6)
    size = torch_ops.arena_bytes()
    torch_ops.set_arena_bytes(size)  # an int is taken as before
    assert torch_ops.arena_bytes() == size
