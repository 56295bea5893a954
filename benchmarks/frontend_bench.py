"""``ksbind.compile`` (a Python function translated to ks, compiled by ksc): its
kernels against torch.compile, eager PyTorch and a copy, and what its first
call and its translation cost.

    python -m benchmarks.frontend_bench [--quick]     # these rows alone
    python -m benchmarks.run --only frontend          # the same, as rows of the table

The functions are examples/frontend/activations.py's (relu3 and gelu in
elementwise mode, sqrl and its vmap), compiled here into the run's own cache.
Kernel rows time their sides interleaved after a warm-up that builds ksbind's
function and compiles torch's graphs; build rows run each side in a fresh
process with a fresh cache folder (the later-process row with a warm one),
interleaved too. Rows of benchmarks/run.py (its "frontend" group).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks import KSC, KSC_RUNTIME, REPO, ksc_missing
from benchmarks.timing import Row, ensure_bytecode, in_new_process, interleaved, pair, parser
from ksbind.frontend.signature import CompileMode

ACTIVATIONS = REPO / "examples" / "frontend" / "activations.py"


@dataclass(frozen=True)
class Sizes:
    elements: int                 # relu3/gelu: a 1-d tensor of this many floats
    batch: int                    # vsqrl over (batch, 16, 16)
    number: int                   # calls per timed batch (kernel rows; small rows scale it up)
    repeats: int                  # timed batches per side
    builds: int                   # fresh-process repeats of the first-call rows
    lines: int                    # lines of the generated function of the translation row


FULL = Sizes(1_000_000, 1000, 20, 15, 3, 200)
QUICK = Sizes(10_000, 10, 2, 2, 1, 200)

ROW_NAMES = ("frontend: vrelu3 forward", "frontend: vrelu3 forward+backward", "frontend: vrelu3 forward, 1 thr",
             "frontend: gelu forward", "frontend: gelu forward+backward",
             "frontend: vsqrl forward", "frontend: vsqrl forward+backward", "frontend: sqrl forward+backward",
             "frontend: first call, new cache", "frontend: first call, later process",
             "frontend: translation")


def available() -> str | None:
    return ksc_missing()


def activations() -> ModuleType:
    """examples/frontend/activations.py, loaded once by its path (it builds nothing on import)."""
    name = "ksbind_frontend_activations"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ACTIVATIONS)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# ---------------------------------------------------------------- kernels

def kernel_rows(cache: Path, sizes: Sizes, log: Callable[[str], None]) -> list[Row]:
    import torch

    import ksbind

    act = activations()

    def compiled(fn: Callable[..., Any], mode: CompileMode) -> Any:
        return ksbind.compile(fn, mode=mode, cache_dir=cache, quiet=True, ksc=KSC)

    vrelu3, vgelu = compiled(act.relu3, "elementwise"), compiled(act.gelu, "elementwise")
    sqrl, vsqrl = compiled(act.sqrl_python, "plain"), compiled(act.sqrl_python, "vmap")
    g = torch.Generator().manual_seed(6)
    x = torch.randn(sizes.elements, generator=g) * 2
    xg = x.clone().requires_grad_(True)
    b = torch.randn(sizes.batch, 16, 16, generator=g)
    bg = b.clone().requires_grad_(True)
    s = torch.randn(16, 16, generator=g)
    sg = s.clone().requires_grad_(True)

    def fwd_bwd(f: Callable[[Any], Any], arg: Any) -> Callable[[], object]:
        def step() -> object:
            out = f(arg)
            return torch.autograd.grad(out if out.dim() == 0 else out.sum(), [arg])
        return step

    log("frontend: building vrelu3, gelu, sqrl, vsqrl (translate, ksc, compile)")
    for f, arg, ref in ((vrelu3, x, act.vrelu3_pytorch), (vgelu, x, act.vgelu_pytorch),
                        (sqrl, s, act.sqrl_python), (vsqrl, b, act.vsqrl_pytorch)):
        torch.testing.assert_close(f(arg), ref(arg), rtol=1e-4, atol=1e-5)  # same answers before timing
    c_relu3, c_relu3_g = torch.compile(act.vrelu3_pytorch), torch.compile(act.vrelu3_pytorch)
    c_gelu, c_gelu_g = torch.compile(act.vgelu_pytorch), torch.compile(act.vgelu_pytorch)
    c_vsqrl, c_vsqrl_g = torch.compile(act.vsqrl_pytorch), torch.compile(act.vsqrl_pytorch)
    n, r = sizes.number, sizes.repeats
    warm = max(2, n // 5)
    rows = []

    def three(name: str, what: str, ours: Callable[[], object], theirs: Callable[[], object],
              eager: Callable[[], object], target: str) -> None:
        log(name)
        t_ours, t_theirs, t_eager = interleaved([ours, theirs, eager], n, r, warmup=warm)
        rows.append(Row(name, what, "torch.compile (inductor) of the PyTorch formula", t_ours * 1e6, t_theirs * 1e6,
                        "us", target, eager_value=t_eager * 1e6))

    e = f"{sizes.elements:,} floats"
    three("frontend: vrelu3 forward", f"ksbind.compile(relu3, mode='elementwise'), {e}",
          lambda: vrelu3(x), lambda: c_relu3(x), lambda: act.vrelu3_pytorch(x), "<= 1.0")
    three("frontend: vrelu3 forward+backward", f"the same + its vjp (autograd), {e}",
          fwd_bwd(vrelu3, xg), fwd_bwd(c_relu3_g, xg), fwd_bwd(act.vrelu3_pytorch, xg), "<= 1.0")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        log("frontend: vrelu3 forward, 1 thr")
        t_ours, t_clone = pair(lambda: vrelu3(x), lambda: torch.clone(x), n, r, warmup=warm)
        rows.append(Row("frontend: vrelu3 forward, 1 thr", f"ksbind.compile(relu3, mode='elementwise'), {e}, "
                        "torch.set_num_threads(1)", "torch.clone of the same tensor (one read, one write)",
                        t_ours * 1e6, t_clone * 1e6, "us", "<= 1.1"))
    finally:
        torch.set_num_threads(before)
    three("frontend: gelu forward", f"ksbind.compile(gelu, mode='elementwise') (erf, Knossos's form), {e}",
          lambda: vgelu(x), lambda: c_gelu(x), lambda: act.vgelu_pytorch(x), "<= 1.0")
    three("frontend: gelu forward+backward", f"the same + its vjp (autograd), {e}",
          fwd_bwd(vgelu, xg), fwd_bwd(c_gelu_g, xg), fwd_bwd(act.vgelu_pytorch, xg), "<= 1.0")
    shape = f"({sizes.batch}, 16, 16)"
    three("frontend: vsqrl forward", f"ksbind.compile(sqrl, mode='vmap'), {shape}",
          lambda: vsqrl(b), lambda: c_vsqrl(b), lambda: act.vsqrl_pytorch(b), "<= 1.0")
    three("frontend: vsqrl forward+backward", f"the same + its vjp (autograd), {shape}",
          fwd_bwd(vsqrl, bg), fwd_bwd(c_vsqrl_g, bg), fwd_bwd(act.vsqrl_pytorch, bg), "<= 1.0")
    log("frontend: sqrl forward+backward")
    small = n * 50  # a 16x16 call takes microseconds: bigger batches
    t_ours, t_eager = pair(fwd_bwd(sqrl, sg), fwd_bwd(act.sqrl_python, sg), small, r)
    rows.append(Row("frontend: sqrl forward+backward", "ksbind.compile(sqrl), 16 x 16, + its vjp (autograd)",
                    "eager PyTorch: the same Python function (sqrl.__wrapped__)", t_ours * 1e6, t_eager * 1e6,
                    "us", "<= 0.6"))
    return rows


# ---------------------------------------------------------------- first calls, in fresh processes

_PRELUDE = """\
import os, sys, time
t0 = time.perf_counter()
import torch
import ksbind
t_imports = time.perf_counter() - t0
"""

COMPILE_CALL = _PRELUDE + """\
sys.path.insert(0, {folder!r})
from activations import relu3
x = torch.randn(1000)
t1 = time.perf_counter()
f = ksbind.compile(relu3, mode="elementwise", ksc={ksc!r})
f(x)
t_call = time.perf_counter() - t1
if {write_ks!r}:
    open({write_ks!r}, "w").write(f.ks)
print({printed})
"""

LOAD_KS_CALL = _PRELUDE + """\
x = torch.randn(1000)
ks = open({ks!r}).read()
t1 = time.perf_counter()
m = ksbind.load_ks(ks, [dict(name="relu3", vjp="relu3_vjp", mode="elementwise")], target="torch", ksc={ksc!r})
m.relu3(x)
print(time.perf_counter() - t1)
"""

IMPORTS_ONLY = _PRELUDE + "print(t_imports)\n"


def first_call_rows(tmp: Path, sizes: Sizes, log: Callable[[str], None]) -> list[Row]:
    ensure_bytecode(REPO)
    tmp.mkdir(parents=True, exist_ok=True)
    folder = str(ACTIVATIONS.parent)
    ks_file = tmp / "relu3.ks"
    env = {"PYTHONPATH": str(REPO)}
    counter = iter(range(10_000))

    def compile_cold(write_ks: str = "") -> float:
        cache = tmp / f"cache-{next(counter)}"
        code = COMPILE_CALL.format(folder=folder, ksc=str(KSC), write_ks=write_ks, printed="t_call")
        return in_new_process(code, {**env, "KSBIND_CACHE_DIR": str(cache)}, cwd=tmp)[0]

    def load_ks_cold() -> float:
        cache = tmp / f"cache-{next(counter)}"
        code = LOAD_KS_CALL.format(ks=str(ks_file), ksc=str(KSC))
        return in_new_process(code, {**env, "KSBIND_CACHE_DIR": str(cache)}, cwd=tmp)[0]

    log("frontend: first call, new cache (fresh processes, a fresh cache each)")
    compile_cold(str(ks_file))  # the ks text load_ks is given; warms the page cache and torch's own files
    t_compile, t_load = interleaved([compile_cold, load_ks_cold], 1, sizes.builds, warmup=0)
    rows = [Row("frontend: first call, new cache", "new process, empty cache: ksbind.compile(relu3, elementwise) "
                "and its first call (translate, ksc, compile, import)",
                "the same, ksbind.load_ks of the same ks text (f.ks) by hand", t_compile, t_load, "s", "<= 1.2")]

    log("frontend: first call, later process (a warm cache)")
    warm = tmp / "cache-warm"
    later_code = COMPILE_CALL.format(folder=folder, ksc=str(KSC), write_ks="", printed="t_imports + t_call")
    later_env = {**env, "KSBIND_CACHE_DIR": str(warm)}
    in_new_process(later_code, later_env, cwd=tmp)  # builds into the warm cache

    def later() -> float:
        return in_new_process(later_code, later_env, cwd=tmp)[0]

    def imports() -> float:
        return in_new_process(IMPORTS_ONLY, later_env, cwd=tmp)[0]

    t_later, t_imports = interleaved([later, imports], 1, max(3, 3 * sizes.builds), warmup=0)
    rows.append(Row("frontend: first call, later process", "new process, unchanged function: `import torch, "
                    "ksbind`, ksbind.compile(relu3) and its first call (a cache hit)",
                    "new process: `import torch; import ksbind`", t_later, t_imports, "s", "<= 1.5"))
    return rows


# ---------------------------------------------------------------- translation against ksc

def long_function(lines: int) -> str:
    """A Python module with ``long`` (x: float) -> float of ``lines`` lines of straight-line arithmetic."""
    body = ["    v0 = x", "    v1 = x * 0.5"]
    for i in range(2, lines - 1):
        kind = i % 3
        if kind == 0:
            body.append(f"    v{i} = v{i - 1} * {1 + i / 1000} + 0.5")
        elif kind == 1:
            body.append(f"    v{i} = math.sin(v{i - 1}) + v{i - 2} * 0.25")
        else:
            body.append(f"    v{i} = v{i - 1} - v{i - 2} / 3.0")
    body.append(f"    return v{lines - 2}")
    return "import math\n\n\ndef long(x: float) -> float:\n" + "\n".join(body) + "\n"


def translation_rows(tmp: Path, sizes: Sizes, log: Callable[[str], None]) -> list[Row]:
    from ksbind.frontend.program import translate_program
    from ksbind.frontend.signature import Signature
    from ksbind.lang.types import FLOAT

    tmp.mkdir(parents=True, exist_ok=True)
    source = tmp / "long_function.py"
    source.write_text(long_function(sizes.lines))
    spec = importlib.util.spec_from_file_location("ksbind_bench_long_function", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = Signature((FLOAT,), "plain")
    ks_file = tmp / "long.ks"
    ks_file.write_text(translate_program(module.long, signature).ks_text)
    out = Path(tempfile.mkdtemp(prefix="ksc-out-", dir=tmp))
    cmd = [str(KSC), "--generate-cpp", "--ks-source-file", str(KSC_RUNTIME / "prelude.ks"),
           "--ks-source-file", str(ks_file), "--ks-output-file", str(out / "long.kso"),
           "--cpp-include", "prelude.h", "--cpp-output-file", str(out / "long.cpp"), "--all-defs"]

    def ksc() -> None:
        subprocess.run(cmd, check=True, capture_output=True, cwd=out)

    log(f"frontend: translation of a {sizes.lines}-line function against its ksc run")
    t_translate, t_ksc = pair(lambda: translate_program(module.long, signature), ksc, 1,
                              max(5, sizes.repeats), warmup=1)
    return [Row("frontend: translation", f"translate_program of a generated {sizes.lines}-line Python function "
                "(straight-line float arithmetic, math.sin)", "ksc on the ks it gives (--generate-cpp --all-defs)",
                t_translate * 1e3, t_ksc * 1e3, "ms", "<= 0.2")]


def rows(tmp: Path, quick: bool, cache: Path, log: Callable[[str], None]) -> list[Row]:
    """Every row of this module, in ROW_NAMES' order."""
    sizes = QUICK if quick else FULL
    return [*kernel_rows(cache, sizes, log), *first_call_rows(tmp / "first-call", sizes, log),
            *translation_rows(tmp / "translation", sizes, log)]


def main(argv: list[str] | None = None) -> int:
    from benchmarks.timing import log, table

    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    why = available()
    if why:
        print(f"skipped: {why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="ksbind-frontend-bench-") as tmp:
        got = rows(Path(tmp), args.quick, Path(tmp) / "cache", log)
    print(table(got))
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
