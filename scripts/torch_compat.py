"""The torch target's compatibility check (scripts/test_torch_compat.sh).

``build OUT CACHE``: in the venv that builds (.venv: torch 2.13.0), build the
torch modules of configs/torch_ops.yaml (plain bindings, the same functions as
torch.library ops, and the packed bindings) and configs/relu3_torch.yaml into the
build cache CACHE (or take them from it, built already), and record where they are
(OUT/modules.json) and what they compute here (OUT/expected.pt).

``check OUT``: in another venv (torch 2.14.1), import those same built files
(ksbind's build is never called: nothing is compiled there) and check that every
case gives the recorded values: calls in each mode, tuple results, gradients through
autograd, torch.func.grad and torch.vmap, forward mode (torch.func.jvp, jacfwd, a dual
tensor), torch.compile(fullgraph=True), a ragged
list argument and a ragged result, packed bindings (a list of tuples, a list of
tuples result, strings); the ops under opcheck, a gradcheck, an argument refused
by its name; and a hand-written stable-ABI op (benchmarks/stable_vrelu3.cpp) built
in the first venv, loaded with torch.ops.load_library, gives torch_ops' vrelu3 values.

``wheel``: in a fresh venv with torch 2.14.1 and examples/package's wheel (built under
2.13.0) installed, and no ksbind: the package's modules compute and differentiate.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODULES = {"torch_ops": "torch_ops.yaml", "torch_ops_lib": "torch_ops.yaml", "torch_ops_packed": "torch_ops.yaml",
           "relu3_torch": "relu3_torch.yaml"}


def inputs() -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(7)
    x = torch.rand(12, generator=g) * 4 - 2
    ragged = [torch.rand(n, generator=g) * 2 - 1 for n in (2, 3, 0, 1)]
    return {"x": x, "xs": x.reshape(3, 4), "b": torch.rand(4, generator=g) * 2 - 1, "ragged": ragged}


def _grad(f: Callable[..., Any], *args: Any, argnum: int = 0) -> Any:

    leaves = [a.detach().clone().requires_grad_() for a in args]
    f(*leaves).sum().backward()
    return leaves[argnum].grad


def _flat(value: Any) -> Any:
    """A tensor, or a (nested) list or tuple of tensors and numbers, as one 1-d float tensor."""
    import torch

    if isinstance(value, (list, tuple)):
        parts = [_flat(v) for v in value]
        return torch.cat(parts) if parts else torch.zeros(0)
    return torch.as_tensor(value).reshape(-1).float()


def _ragged_grads(ops: ModuleType, rows: list[Any]) -> Any:
    """Gradients of a ragged list argument, through rowsums and weighted (a vjp each)."""
    import torch

    leaves = [r.detach().clone().requires_grad_() for r in rows]
    w = torch.ones(len(rows))
    (ops.rowsums(leaves).sum() + ops.weighted(leaves, w, 1.5)).backward()
    return _flat([leaf.grad for leaf in leaves])


def _pairs(t: dict[str, Any]) -> list[tuple[float, Any]]:
    return [(1.5, t["ragged"][0]), (-2.0, t["ragged"][1]), (0.25, t["ragged"][3])]


def _pairsum_grads(packed: ModuleType, pairs: list[tuple[float, Any]]) -> Any:
    import torch

    leaves = [(torch.tensor(a, requires_grad=True), v.detach().clone().requires_grad_()) for a, v in pairs]
    packed.pairsum(leaves).backward()
    return _flat([[a.grad, v.grad] for a, v in leaves])


def cases(m: dict[str, ModuleType]) -> dict[str, Any]:
    import torch

    ops, lib, packed, relu3 = m["torch_ops"], m["torch_ops_lib"], m["torch_ops_packed"], m["relu3_torch"]
    t = inputs()
    x, xs, b, ragged = t["x"], t["xs"], t["b"], t["ragged"]
    return {
        "vrelu3": ops.vrelu3(x),
        "relu3_elementwise": ops.relu3(xs),
        "mulsin_broadcast": ops.mulsin(xs, b),
        "scale_add": ops.scale_add(x, x, 3),
        "sumsq_rows_vmap_mode": ops.sumsq_rows(xs),
        "stats_tuple": _flat(ops.stats(x)),
        "split_stats_tuple": _flat(ops.split_stats(x)),
        "vrelu3_grad": _grad(ops.vrelu3, x),
        "relu3_grad": _grad(ops.relu3, xs),
        "mulsin_grad_b": _grad(ops.mulsin, xs, b, argnum=1),
        "func_grad": torch.func.grad(lambda a: ops.vrelu3(a).sum())(x),
        "func_vmap": torch.vmap(ops.vrelu3)(xs),
        "compiled": _compiled(ops)(xs, b),
        # Tensors of tensors: a ragged list argument (and its gradients), a ragged result.
        "rowsums_ragged": ops.rowsums(ragged),
        "cube_sum_mixed": ops.cube_sum([xs[:2], [ragged[0], ragged[1]]]),
        "ragged_grads": _ragged_grads(ops, ragged),
        "prefixes_ragged_result": _flat(ops.prefixes(x[:4])),
        "lib_vrelu3": lib.vrelu3(x),
        "lib_mulsin_grad": _grad(lib.mulsin, xs, b),
        "lib_compiled": _compiled(lib)(xs, b),
        # Packed bindings (no op schema says them): a list of tuples with a vjp, a list-of-tuples result.
        "packed_pairsum": packed.pairsum(_pairs(t)),
        "packed_pairsum_grads": _pairsum_grads(packed, _pairs(t)),
        "packed_numbered": _flat(packed.numbered(ragged)),
        "nn_module": relu3.relu3(xs),
        # Forward mode from the bindings' jvp ([fwd F]): torch.func.jvp and jacfwd, each mode, a dual tensor.
        "scale_add_jvp": torch.func.jvp(lambda a: ops.scale_add(a, b.repeat(3), 2), (x,), (torch.ones_like(x),))[1],
        "mulsin_jacfwd": torch.func.jacfwd(ops.mulsin, argnums=1)(x[:4], b),
        "scale_add_rows_jvp": torch.func.jvp(lambda a: ops.scale_add_rows(a, xs, 2), (xs,), (xs,))[1],
        "scale_add_dual": _dual_tangent(ops, x),
    }


def _dual_tangent(ops: ModuleType, x: Any) -> Any:
    """torch.autograd.forward_ad: scale_add's tangent of a dual argument."""
    import torch
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        out = ops.scale_add(fwAD.make_dual(x, torch.ones_like(x)), x, 3)
        tangent = fwAD.unpack_dual(out).tangent
    assert tangent is not None, "scale_add: a dual argument's tangent was dropped"
    return tangent


def _compiled(lib: ModuleType) -> Callable[..., Any]:
    """lib's relu3, mulsin and vrelu3 in one torch.compile(fullgraph=True) graph."""
    import torch

    def f(a: Any, v: Any) -> Any:
        return lib.relu3(a) * 2 + lib.mulsin(a, v) + lib.vrelu3(a[0]).sum()

    torch._dynamo.reset()
    return torch.compile(f, fullgraph=True, backend="aot_eager")


def _import(name: str, wrapper: str) -> ModuleType:
    """The module as ksbind's build imports it (ksbind/backend/loader.py): its wrapper NAME.py,
    which loads the op library beside it (torch.ops.load_library)."""
    from ksbind.backend.loader import import_wrapper

    return import_wrapper(name, Path(wrapper))


def build(out: Path, cache: Path) -> None:
    import warnings

    import torch

    from ksbind.errors import KsbindWarning
    from ksbind.pipeline import build_configs  # what `ksbind build` runs: the modules built concurrently

    configs = sorted({REPO / "configs" / c for c in MODULES.values()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KsbindWarning)  # torch_ops_packed's bindings warn that they are packed
        built = {name: m for name, m in build_configs(configs, cache_dir=cache, quiet=True)
                 if name in MODULES}
    (out / "modules.json").write_text(json.dumps({k: m.__file__ for k, m in built.items()}))
    torch.save({k: v.detach() for k, v in cases(built).items()}, out / "expected.pt")
    print(f"built with torch {torch.__version__}: {', '.join(str(m.__file__) for m in built.values())}")


def check(out: Path) -> None:
    import torch

    paths = json.loads((out / "modules.json").read_text())
    m = {name: _import(name, path) for name, path in paths.items()}
    expected = torch.load(out / "expected.pt")
    got = cases(m)
    assert got.keys() == expected.keys()
    for k, v in got.items():
        torch.testing.assert_close(v.detach(), expected[k], msg=k)
    ops, lib, packed = m["torch_ops"], m["torch_ops_lib"], m["torch_ops_packed"]
    t = inputs()
    prefixes = ops.prefixes(t["x"][:4])
    assert isinstance(prefixes, list) and [len(p) for p in prefixes] == [1, 2, 3, 4], prefixes  # ragged: a list
    assert packed.shout("hello, ks", 2) == "HELLO, KS!!" and int(packed.count("banana", "a")) == 3
    for op, args in [(lib.vrelu3.op.default, (t["x"].detach().requires_grad_(),)),
                     (lib.mulsin.op.default, (t["xs"].detach().requires_grad_(), t["b"].detach().requires_grad_())),
                     (ops.vrelu3.op.default, (t["x"].detach().requires_grad_(),)),
                     (ops.scale_add.op.default, (t["x"].detach().requires_grad_(), t["x"].detach(), 3))]:
        result = torch.library.opcheck(op, args)
        assert all(v == "SUCCESS" for v in result.values()), (op, result)
    assert torch.autograd.gradcheck(lambda a: ops.vrelu3(a.float()).double(),
                                    (t["x"].double().detach().requires_grad_(),), eps=1e-3, atol=1e-2)
    try:
        ops.vrelu3(torch.zeros(3, dtype=torch.int64))
    except TypeError as e:
        assert "argument" in str(e), str(e)
    else:
        raise AssertionError("an int64 tensor for a Float argument was accepted")
    # The stable-ABI op (benchmarks/stable_vrelu3.cpp, built against 2.13.0's stable headers for torch >= 2.10):
    # the same function as torch_ops' vrelu3.
    torch.ops.load_library(str(out / "stable_vrelu3.so"))
    for op in (torch.ops.ksbind_bench_stable.vrelu3, torch.ops.ksbind_bench_stable.vrelu3_shim):
        torch.testing.assert_close(op(t["x"].detach()), expected["vrelu3"], msg=str(op))
    print(f"checked {len(got)} cases, opcheck, gradcheck, a refused argument and stable-ABI ops under torch "
          f"{torch.__version__} (CPython {sys.version.split()[0]}) with modules built elsewhere: OK")


def wheel() -> None:
    """examples/package's wheel, installed in a venv without ksbind: its modules compute and
    differentiate under this torch."""
    import importlib.util

    import ks_softsign
    import torch

    assert importlib.util.find_spec("ksbind") is None, "ksbind is importable: the wheel's check would prove nothing"
    xs = [-3.0, -0.5, 0.0, 0.25, 2.0]
    expected = [x / (1 + abs(x)) for x in xs]
    assert all(abs(a - b) < 1e-6 for a, b in zip(ks_softsign.vsoftsign(xs), expected))
    x = torch.tensor(xs, requires_grad=True)
    y = ks_softsign.softsign(x)
    y.sum().backward()
    torch.testing.assert_close(y.detach(), torch.tensor(expected))
    torch.testing.assert_close(x.grad, 1 / (1 + x.detach().abs()) ** 2)
    module = sys.modules["ks_softsign._softsign_torch"]
    print(f"examples/package's wheel ({Path(str(module.__file__)).parent}) under torch {torch.__version__} "
          f"(CPython {sys.version.split()[0]}), without ksbind: OK")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "wheel":
        wheel()
    else:
        check(Path(sys.argv[2]))
