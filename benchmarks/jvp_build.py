"""What a jvp adds to a build: a torch-target module of three functions through ksc, each
bound with a vjp, against the same module with a jvp (ksc's ``[fwd F]``) beside each vjp.
Side by side in one run: each repeat warms a fresh cache with another module (its shared
parts: the precompiled header, the support object), then builds both, alternating which goes
first, each in a fresh process, with new module and binding names (no object of either is
ever reused) and no compiler cache; the figures are medians.

    python -m benchmarks.jvp_build [--repeats N]

This is the measurement behind default bindings asking for no jvp (docs/torch.md, "Forward
mode"). benchmarks/run.py shows it as a row of its table. Needs ksc beside the repository.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks import KSC, KSC_RUNTIME, ksc_missing
from benchmarks.timing import Times, build_in_new_process, log, parser

#: Three functions as a user writes them: scalars and tensors, a tuple with an Integer, a
#: tensor of tensors (ksc derives each one's fwd and sufrev).
KS = """\
(def g{k} Float (x : Float) (mul x x))
(def f{k} Float ((x : Float) (v : Vec Float)) (add (g{k} x) (mul x (sum v))))
(def tup{k} (Tuple Float Integer) ((p : Tuple Float (Vec Float)) (n : Integer))
     (tuple (mul (get$1$2 p) (sum (get$2$2 p))) (add n 1)))
(def rows{k} (Vec Float) (m : Vec (Vec Float))
     (build (size m) (lam (i : Integer) (let (r (index i m)) (sumbuild (size r) (lam (j : Integer)
        (mul (index j r) (index j r))))))))
"""

CONFIG = """\
name: {name}
target: torch
ks: [{ks}]
ksc: {{path: {ksc}, runtime: {runtime}}}
bindings:
{bindings}
"""

FUNCTIONS = ("f", "tup", "rows")


def available() -> str | None:
    """Why this row cannot run here, or None."""
    return ksc_missing()


def _config(folder: Path, name: str, k: str, jvp: bool) -> Path:
    """A config of module ``name`` over its own copy of the functions (suffix ``k``)."""
    folder.mkdir(parents=True, exist_ok=True)
    ks = folder / f"{name}.ks"
    ks.write_text(KS.format(k=k), encoding="utf-8")
    lines = []
    for f in FUNCTIONS:
        jvp_key = f", jvp: {f}{k}_jvp" if jvp else ""
        lines.append(f"  - {{name: {f}{k}, vjp: {f}{k}_vjp{jvp_key}}}")
    config = folder / f"{name}.yaml"
    config.write_text(CONFIG.format(name=name, ks=ks, ksc=KSC, runtime=KSC_RUNTIME, bindings="\n".join(lines)),
                      encoding="utf-8")
    return config


def measure(tmp: Path, repeats: int, say: Callable[[str], None] = log) -> Times:
    times = Times(("vjp", "jvp"))
    for r in range(repeats):
        cache = tmp / f"cache{r}"
        warm = f"jvpbench_warm_{r}"
        build_in_new_process(_config(tmp / warm, warm, f"_warm{r}", jvp=False), cache)
        order = ("vjp", "jvp") if r % 2 == 0 else ("jvp", "vjp")
        for case in order:
            name, k = f"jvpbench_{case}_{r}", f"_{case}{r}"
            config = _config(tmp / name, name, k, jvp=case == "jvp")
            wall, cpu = build_in_new_process(config, cache)
            times.add(case, (wall, cpu))
            say(f"  {case} (repeat {r + 1}): {wall:.2f} s wall, {cpu:.2f} s CPU")
    return times


def report(t: Times) -> str:
    return (f"jvp build: vjp only {t.median('vjp'):.2f} s, vjp and jvp {t.median('jvp'):.2f} s "
            f"(ratio {t.median('jvp') / t.median('vjp'):.3f}; CPU {t.median('jvp', cpu=True):.2f} / "
            f"{t.median('vjp', cpu=True):.2f} s, ratio {t.median('jvp', cpu=True) / t.median('vjp', cpu=True):.3f})")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--repeats", type=int, default=4)
    args = p.parse_args(argv)
    why = available()
    if why:
        print(f"skipped: {why}")
        return 0
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ksbind-jvp-build-") as tmp:
        print(report(measure(Path(tmp), args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
