"""docs/ks.md's "Fast vjps" table: the same model written in ks several ways,
bound with its vjp on the torch target, against eager PyTorch of the same model.

    python -m benchmarks.ks_patterns            # the full table (a few minutes on 2 cores)
    python -m benchmarks.ks_patterns --quick    # tiny sizes: checks every case runs

- A 2-layer MLP's loss (benchmarks/mlp_forms.ks: the build/index form, the
  matrix-vector `mul` form that still indexes the points, and the `map` form),
  one Adam step each: loss, .backward() (ksc's vjp), optimizer step.
- ADBench's GMM objective: ksc's own programs/gmm.ks and examples/gmm's
  gmm_fast.ks, objective + gradient through .backward().

Each case times ksbind and eager PyTorch in alternating batches (A, B, A, B,
...) after a warm-up and reports the medians (benchmarks/timing.py), and the arena's peak (the
module's allocator_peak() after one step in a fresh arena). PyTorch runs on
one thread here, as ksc's code does (torch.set_num_threads(1), restored after).
All five bindings are one torch module, built once; ksc must be present.
benchmarks/run.py shows some of these as rows (rows() below).
"""
from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import GMM, HERE, KSC, KSC_PROGRAMS, KSC_RUNTIME, gmm_reference, ksc_missing
from benchmarks.scratch import scratch_dir
from benchmarks.timing import Row, interleaved, log, parser

PROGRAMS = KSC_PROGRAMS

CONFIG = textwrap.dedent("""\
    name: bench_ks_patterns
    target: torch
    ks: [{sources}]
    ksc: {{path: {ksc}, runtime: {runtime}}}
    bindings:
    {bindings}
    output: {out}
    """)

#: Each form's binding (name: function), its source, and its vjp's name.
BINDINGS = {
    "mlp_index": ("mlp_index", HERE / "mlp_forms.ks"),
    "mlp_mul": ("mlp_mul", HERE / "mlp_forms.ks"),
    "mlp_map": ("mlp_map", HERE / "mlp_forms.ks"),
    "gmm_ksc": ("gmm_knossos_gmm_objective", PROGRAMS / "gmm.ks"),
    "gmm_fast": ("gmm_objective", GMM / "gmm_fast.ks"),
}

#: Big enough for every case's arena (ksc's gmm.ks at N=2000 needs about 1 GB);
#: pages are touched only as they are used.
ARENA_BYTES = 1_600_000_000


def available() -> str | None:
    """Why these cases cannot run here, or None."""
    return ksc_missing(PROGRAMS / "gmm.ks")


@dataclass(frozen=True)
class Case:
    model: str    # "mlp" or "gmm"
    form: str     # the binding
    n: int
    d: int
    h: int        # MLP: hidden units; GMM: components K

    @property
    def sizes(self) -> str:
        return f"N={self.n:,} D={self.d} H={self.h}" if self.model == "mlp" else f"N={self.n:,} K={self.h} D={self.d}"

    @property
    def label(self) -> str:
        return f"{self.model}, {FORMS[self.form]}, {self.sizes}"


FORMS = {"mlp_index": "build/index form", "mlp_mul": "matrix-vector mul, points indexed",
         "mlp_map": "matrix-vector mul, points mapped", "gmm_ksc": "ksc's programs/gmm.ks",
         "gmm_fast": "examples/gmm/gmm_fast.ks"}

FULL = (Case("mlp", "mlp_index", 64, 16, 32), Case("mlp", "mlp_index", 128, 16, 32),
        Case("mlp", "mlp_mul", 128, 16, 32), Case("mlp", "mlp_mul", 1024, 16, 32),
        Case("mlp", "mlp_map", 128, 16, 32), Case("mlp", "mlp_map", 1024, 16, 32),
        Case("gmm", "gmm_ksc", 1000, 8, 10), Case("gmm", "gmm_ksc", 2000, 8, 10),
        Case("gmm", "gmm_fast", 1000, 8, 10), Case("gmm", "gmm_fast", 10000, 8, 10))
#: --quick (CI): the forms run.py's rows need, at tiny sizes (a module of three bindings).
QUICK = (Case("mlp", "mlp_index", 8, 3, 4), Case("mlp", "mlp_map", 8, 3, 4),
         Case("gmm", "gmm_fast", 20, 3, 2), Case("gmm", "gmm_fast", 200, 3, 2))


@dataclass
class Result:
    case: Case
    ksbind: float   # median seconds per step
    eager: float
    peak: int       # arena bytes


def build(tmp: Path, forms: set[str], cache: Path | None = None) -> Any:
    """One torch module binding the given forms (only those: --quick builds fewer)."""
    import ksbind

    tmp.mkdir(parents=True, exist_ok=True)
    chosen = [f for f in BINDINGS if f in forms]
    sources = list(dict.fromkeys(str(BINDINGS[f][1]) for f in chosen))
    bindings = "\n".join(f"  - {{name: {f}, function: {BINDINGS[f][0]}, vjp: {f}_vjp}}" for f in chosen)
    config = tmp / "ks_patterns.yaml"
    config.write_text(CONFIG.format(sources=", ".join(sources), bindings=bindings, ksc=KSC,
                                    runtime=KSC_RUNTIME, out=tmp / "out"))
    return ksbind.build(config, cache_dir=cache or tmp / "cache", quiet=True)


def _mlp_steps(module: Any, case: Case) -> tuple[Callable[[], float], Callable[[], float]]:
    """One Adam step through the ks loss, and one through eager PyTorch, from the same start."""
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randn(case.n, case.d, generator=g)
    y = torch.sin(x.sum(1))
    start = [torch.randn(case.h, case.d, generator=g) / case.d ** 0.5, torch.zeros(case.h),
             torch.randn(case.h, generator=g) / case.h ** 0.5, torch.tensor(0.0)]
    ks_params = [p.clone().requires_grad_() for p in start]
    eager_params = [p.clone().requires_grad_() for p in start]
    ks_opt = torch.optim.Adam(ks_params, lr=1e-2)
    eager_opt = torch.optim.Adam(eager_params, lr=1e-2)
    loss_fn = getattr(module, case.form)

    def ks_step() -> float:
        ks_opt.zero_grad()
        loss = loss_fn(*ks_params, x, y)
        loss.backward()
        ks_opt.step()
        return float(loss.detach())

    def eager_step() -> float:
        w1, b1, w2, b2 = eager_params
        eager_opt.zero_grad()
        loss = ((torch.tanh(x @ w1.T + b1) @ w2 + b2 - y) ** 2).mean()
        loss.backward()
        eager_opt.step()
        return float(loss.detach())

    first_ks, first_eager = ks_step(), eager_step()  # the same model: the same loss
    if abs(first_ks - first_eager) > 1e-4 * max(1.0, abs(first_eager)):
        raise RuntimeError(f"{case.label}: ks loss {first_ks}, PyTorch {first_eager}")
    return ks_step, eager_step


def _gmm_steps(module: Any, case: Case) -> tuple[Callable[[], float], Callable[[], float]]:
    """Objective + gradient (.backward()) through the ks objective, and through eager PyTorch."""
    import torch

    reference = gmm_reference()
    inputs = reference.random_inputs(case.n, case.d, case.h, dtype=torch.float32)
    leaves = [t.clone().requires_grad_() for t in inputs[:5]]
    objective = getattr(module, case.form)

    def ks_step() -> float:
        value = objective(*leaves, inputs.wishart)
        value.backward()
        return float(value.detach())

    def eager_step() -> float:
        value = reference.gmm_objective(*leaves, inputs.wishart)
        value.backward()
        return float(value.detach())

    ours, theirs = ks_step(), eager_step()
    if abs(ours - theirs) > 1e-4 * abs(theirs):
        raise RuntimeError(f"{case.label}: ks objective {ours}, PyTorch {theirs}")
    return ks_step, eager_step


def measure_case(module: Any, case: Case, repeats: int) -> Result:
    module.set_arena_bytes(1 << 20)  # the arena made anew (a size it does not have): its peak is this case's
    module.set_arena_bytes(ARENA_BYTES)
    ours, theirs = (_mlp_steps if case.model == "mlp" else _gmm_steps)(module, case)
    peak = module.allocator_peak()
    start = time.perf_counter()
    ours()
    batch = max(1, int(0.05 / max(time.perf_counter() - start, 1e-6)))  # batches of ~50 ms or one step
    # warm already: each side ran in the steps' check, and ours once more just now
    t_ours, t_theirs = interleaved((ours, theirs), batch, repeats, warmup=0)
    return Result(case, t_ours, t_theirs, peak)


def measure(tmp: Path, quick: bool, cache: Path | None = None,
            log: Callable[[str], None] = lambda s: None) -> list[Result]:
    import torch

    cases = QUICK if quick else FULL
    log("ks patterns: building the torch module")
    module = build(tmp, {c.form for c in cases}, cache)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        results = []
        for case in cases:
            log(f"ks patterns: {case.label}")
            results.append(measure_case(module, case, 3 if quick else 7))
    finally:
        torch.set_num_threads(threads)
    return results


#: The rows of rows().
ROW_NAMES = ("ks patterns: gmm_fast vs eager", "ks patterns: gmm_fast, 10x the points",
             "ks patterns: mlp build/index form vs map form")


def rows(tmp: Path, quick: bool, cache: Path | None, log: Callable[[str], None]) -> list[Row]:
    """benchmarks/run.py's rows: the fast GMM against eager and its scaling, and the
    MLP's build/index form against its map form (the trap stays a trap)."""
    results = measure(tmp, quick, cache, log)
    by = {(r.case.form, r.case.n): r for r in results}
    small, big = (r for r in results if r.case.form == "gmm_fast")  # N and 10 N
    index = [r for r in results if r.case.form == "mlp_index"][-1]  # its largest N, which map has too
    mapped = by[("mlp_map", index.case.n)]
    return [
        Row("ks patterns: gmm_fast vs eager", f"gmm_fast.ks objective+gradient, {small.case.sizes}",
            "eager PyTorch (reference.py), 1 thread", small.ksbind * 1e3, small.eager * 1e3, "ms", "<= 2.0"),
        Row("ks patterns: gmm_fast, 10x the points", f"gmm_fast.ks objective+gradient, N={big.case.n:,}",
            f"the same, N={small.case.n:,}", big.ksbind * 1e3, small.ksbind * 1e3, "ms",
            f"<= {1.2 * big.case.n / small.case.n:g}"),
        Row("ks patterns: mlp build/index form vs map form", f"mlp_index Adam step, {index.case.sizes}",
            "mlp_map (the same loss, the same step)", index.ksbind * 1e3, mapped.ksbind * 1e3, "ms",
            ">= 5.0"),
    ]


def _bytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e6 else f"{n / 1e3:,.1f} kB"


def _ms(s: float) -> str:
    return f"{s * 1e3:,.3g} ms" if s < 0.1 else f"{s * 1e3:,.0f} ms"


def table(results: list[Result]) -> str:
    lines = ["| model, form, sizes | ksbind step | eager PyTorch step | ratio | arena peak |",
             "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.case.label} | {_ms(r.ksbind)} | {_ms(r.eager)} | {r.ksbind / r.eager:.2f} | "
                     f"{_bytes(r.peak)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: check that every case runs")
    args = ap.parse_args(argv)
    missing = available()
    if missing:
        print(f"ks pattern cases skipped: {missing}")
        return 0
    start = time.perf_counter()
    with scratch_dir(prefix="ksbind-ks-patterns-") as tmp:
        results = measure(Path(tmp), args.quick, log=log)
    print(f"Measured {time.strftime('%Y-%m-%d')} with `python -m benchmarks.ks_patterns"
          f"{' --quick' if args.quick else ''}` in {time.perf_counter() - start:.0f} s")
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
