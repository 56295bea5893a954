"""``python -m ksbind.bench MODULE``: a module's ``ksbind.compile`` functions against PyTorch.

    python -m ksbind.bench examples/frontend/activations.py --png
    python -m ksbind.bench mypackage.activations --quick --threads 1

MODULE is a ``.py`` file or an importable module name. Every module-level
``ksbind.compile`` function (a ``CompiledFunction``) is benchmarked on the
inputs the module names for it, in Knossos's convention:

- ``NAME_bench_configs()``: a generator (or any function returning an
  iterable) beside ``NAME``; each item is one config: one argument, or a tuple
  of arguments. A function without one is skipped, said in the output.
- ``NAME_pytorch`` (optional): the PyTorch reference, run eagerly and through
  ``torch.compile``. Without it the reference is the Python function itself
  (``NAME.__wrapped__``); an elementwise function's is scalar code, which
  usually needs a ``NAME_pytorch`` written with tensor operations.

``NAME`` is the name the module gives the compiled function (``vrelu3 =
ksbind.compile(relu3, mode="elementwise")`` is ``vrelu3``). For each config the
three sides (ksbind, eager PyTorch, ``torch.compile``) are timed interleaved
(A, B, C, A, B, C, ...) after a warm-up that also builds ksbind's function and
compiles torch's graphs, and the medians are reported: forward, and forward
plus backward (``torch.autograd.grad`` of the result, summed when it is not a
scalar, with respect to every floating-point tensor argument) when the
compiled function is differentiable. The table is printed to stdout, progress
goes to the ``ksbind`` logger (stderr), and ``--png [FILE]`` draws the times
relative to eager PyTorch as a bar chart (matplotlib, the ``bench`` extra).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ksbind.compile_api import CompiledFunction

log = logging.getLogger("ksbind")

#: The suffixes of the names a module gives a compiled function's inputs and reference.
CONFIGS_SUFFIX = "_bench_configs"
REFERENCE_SUFFIX = "_pytorch"

#: The three sides of a row, in the order they are timed and drawn.
SIDES = ("ksbind", "eager", "torch.compile")


# ---------------------------------------------------------------- results

@dataclass(frozen=True)
class Times:
    """Median seconds per call of each side; None where a side could not run (its reason in ``notes``)."""

    ksbind: float
    eager: float | None
    compiled: float | None

    def ratio(self, reference: float | None) -> float | None:
        return None if reference is None or reference <= 0 else self.ksbind / reference


@dataclass(frozen=True)
class Result:
    """One function on one config: forward, and forward+backward when it is differentiable."""

    function: str
    config: str
    forward: Times
    backward: Times | None
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------- finding what to run

def load_module(target: str) -> ModuleType:
    """MODULE as given: a path to a ``.py`` file (imported under its stem), else a module name."""
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"{target}: no such file")
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        if spec is None or spec.loader is None:
            raise ImportError(f"{target}: cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses, pickling and torch.compile look modules up by name
        sys.path.insert(0, str(path.resolve().parent))  # its own sibling imports, as `python FILE` would
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(target)


@dataclass(frozen=True)
class Subject:
    """A compiled function of the module, its configs and its PyTorch reference."""

    name: str
    compiled: CompiledFunction
    configs: Callable[[], Iterable[Any]] | None
    reference: Callable[..., Any]
    reference_name: str


def subjects(module: ModuleType) -> list[Subject]:
    """The module's compiled functions, in the order it defines them."""
    found = []
    for name, value in vars(module).items():
        if not isinstance(value, CompiledFunction):
            continue
        configs = getattr(module, name + CONFIGS_SUFFIX, None)
        reference = getattr(module, name + REFERENCE_SUFFIX, None)
        reference_name = f"{name}{REFERENCE_SUFFIX}"
        if not callable(reference):
            reference, reference_name = value.__ksbind_python__, f"{name}.__wrapped__"
        found.append(Subject(name, value, configs if callable(configs) else None, reference, reference_name))
    return found


def arguments(config: Any) -> tuple[Any, ...]:
    """A config's arguments: a tuple is several, anything else is one."""
    return tuple(config) if isinstance(config, tuple) else (config,)


def describe(args: Sequence[Any]) -> str:
    """A config as the table shows it: each tensor's shape, other values as they print."""
    parts = []
    for a in args:
        shape = getattr(a, "shape", None)
        parts.append("x".join(str(d) for d in shape) if shape is not None and len(shape) else
                     "scalar" if shape is not None else repr(a))
    return ", ".join(parts)


# ---------------------------------------------------------------- timing

@dataclass(frozen=True)
class Budget:
    """How long to time: ``target`` seconds per timed batch, ``repeats`` batches per side."""

    target: float
    repeats: int
    warmup: int


FULL = Budget(0.02, 15, 3)
QUICK = Budget(0.002, 3, 1)


def interleaved(fns: Sequence[Callable[[], object]], budget: Budget) -> list[float]:
    """Median seconds per call of each function: batches timed in turn (A, B, C, A, ...)
    after ``budget.warmup`` untimed calls of each; a batch's size makes the slowest side's
    batch take about ``budget.target`` seconds."""
    slowest = 0.0
    for fn in fns:
        for _ in range(budget.warmup):
            fn()
        start = time.perf_counter()
        fn()
        slowest = max(slowest, time.perf_counter() - start)
    number = max(1, min(10_000, int(budget.target / max(slowest, 1e-7))))
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(budget.repeats):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - start) / number)
    return [statistics.median(t) for t in times]


def _float_tensor(a: Any) -> bool:
    import torch

    return isinstance(a, torch.Tensor) and a.is_floating_point()


def _with_grad(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(a.detach().clone().requires_grad_(True) if _float_tensor(a) else a for a in args)


def _forward_backward(fn: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], object]:
    import torch

    inputs = [a for a in args if _float_tensor(a)]

    def step() -> object:
        out = fn(*args)
        return torch.autograd.grad(out if out.dim() == 0 else out.sum(), inputs)
    return step


def _usable(what: str, fn: Callable[[], object], notes: list[str]) -> Callable[[], object] | None:
    """``fn`` if one call of it works, else None with the reason noted."""
    try:
        fn()
    except Exception as e:  # a reference that cannot take tensors, a graph torch.compile refuses
        notes.append(f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return None
    return fn


def _time(sides: list[Callable[[], object] | None], budget: Budget) -> Times:
    runnable = [fn for fn in sides if fn is not None]
    medians = iter(interleaved(runnable, budget))
    got = [next(medians) if fn is not None else None for fn in sides]
    assert got[0] is not None
    return Times(got[0], got[1], got[2])


def measure(subject: Subject, args: tuple[Any, ...], budget: Budget) -> Result:
    """One subject on one config's arguments: the three sides, forward and forward+backward."""
    import torch

    notes: list[str] = []
    label = describe(args)
    log.info("ksbind.bench: %s(%s): building", subject.name, label)
    subject.compiled.compile_for(*args)
    ours = subject.compiled(*args)
    eager = _usable(f"eager {subject.reference_name}", lambda: subject.reference(*args), notes)
    if eager is not None:
        try:
            torch.testing.assert_close(ours, subject.reference(*args), rtol=1e-4, atol=1e-5, check_dtype=False)
        except (AssertionError, TypeError, ValueError) as e:
            notes.append(f"results differ from {subject.reference_name}: {str(e).splitlines()[0]}")
    compiled_ref = torch.compile(subject.reference)
    log.info("ksbind.bench: %s(%s): forward (torch.compile compiles in the warm-up)", subject.name, label)
    forward = _time([lambda: subject.compiled(*args), eager,
                     None if eager is None else _usable("torch.compile", lambda: compiled_ref(*args), notes)],
                    budget)

    backward = None
    grad_args = _with_grad(args)
    differentiable = any(_float_tensor(a) for a in args) and _float_tensor(ours)
    ours_fb = _usable(f"{subject.name} forward+backward", _forward_backward(subject.compiled, grad_args), notes) \
        if differentiable else None
    if ours_fb is not None:
        log.info("ksbind.bench: %s(%s): forward+backward", subject.name, label)
        eager_fb = None if eager is None else _usable(
            f"eager {subject.reference_name} forward+backward", _forward_backward(subject.reference, grad_args), notes)
        compiled_fb = None if eager_fb is None else _usable(
            "torch.compile forward+backward", _forward_backward(torch.compile(subject.reference), grad_args), notes)
        backward = _time([ours_fb, eager_fb, compiled_fb], budget)
    return Result(subject.name, label, forward, backward, tuple(notes))


def run(module: ModuleType, budget: Budget) -> tuple[list[Result], list[str]]:
    """Every subject of ``module`` on each of its configs; (results, what was skipped and why)."""
    results, skipped = [], []
    for subject in subjects(module):
        if subject.configs is None:
            skipped.append(f"{subject.name}: no {subject.name}{CONFIGS_SUFFIX}() in the module")
            continue
        for config in subject.configs():
            results.append(measure(subject, arguments(config), budget))
    return results, skipped


# ---------------------------------------------------------------- reporting

def _seconds(t: float | None) -> str:
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.3f}"


HEADER = ("function", "config", "fwd ksbind", "fwd eager", "fwd torch.compile", "vs eager", "vs compile",
          "fwd+bwd ksbind", "fwd+bwd eager", "fwd+bwd torch.compile", "vs eager", "vs compile")


def table(results: Sequence[Result]) -> str:
    """The results as a Markdown table (ratios: ksbind's median over the reference's; below 1 is faster)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in results:
        cells = [r.function, r.config]
        for t in (r.forward, r.backward):
            if t is None:
                cells += ["-"] * 5
            else:
                cells += [_seconds(t.ksbind), _seconds(t.eager), _seconds(t.compiled),
                          _ratio(t.ratio(t.eager)), _ratio(t.ratio(t.compiled))]
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- {r.function} ({r.config}): {n}" for r in results for n in r.notes]
    return "\n".join(lines + ([""] + notes if notes else []))


def plot(results: Sequence[Result], path: Path, title: str) -> Path:
    """The results as a bar chart: each side's time relative to eager PyTorch (1.0), forward
    above and forward+backward below, one group of bars per function and config."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.function}\n{r.config}" for r in results]
    fig, axes = plt.subplots(2, 1, figsize=(max(6.0, 1.6 * len(results) + 2), 7), squeeze=False)
    width = 0.27
    colours = {"ksbind": "tab:blue", "eager": "tab:gray", "torch.compile": "tab:orange"}
    for ax, which in zip(axes[:, 0], ("forward", "forward+backward")):
        for k, side in enumerate(SIDES):
            heights = []
            for r in results:
                t = r.forward if which == "forward" else r.backward
                value = None if t is None else (t.ksbind, t.eager, t.compiled)[k]
                base = None if t is None else t.eager
                heights.append(value / base if value is not None and base else 0.0)
            xs = [i + (k - 1) * width for i in range(len(results))]
            ax.bar(xs, heights, width, label=side, color=colours[side])
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle=":")
        ax.set_xticks(list(range(len(results))))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("time / eager PyTorch")
        ax.set_title(which, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- the command

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m ksbind.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", help="a .py file or a module name holding ksbind.compile functions")
    ap.add_argument("--png", nargs="?", const="", default=None, metavar="FILE",
                    help="draw a bar chart into FILE (without FILE: MODULE_bench.png in the working folder)")
    ap.add_argument("--quick", action="store_true", help="few, short repeats: checks that everything runs")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads(N) for the whole run")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    module = load_module(args.module)
    results, skipped = run(module, QUICK if args.quick else FULL)
    stem = Path(args.module).stem if args.module.endswith(".py") else args.module.rpartition(".")[2]
    print(f"ksbind.bench {args.module}: medians, {torch.get_num_threads()} threads"
          f"{' (--quick)' if args.quick else ''}; ratios are ksbind's time over the reference's")
    print(table(results))
    for line in skipped:
        print(f"skipped: {line}")
    if args.png is not None and results:
        path = plot(results, Path(args.png or f"{stem}_bench.png"),
                    f"{stem}: ksbind.compile against PyTorch ({torch.get_num_threads()} threads)")
        print(f"wrote {path}")
    return 0 if results or not skipped else 1


if __name__ == "__main__":
    sys.exit(main())
