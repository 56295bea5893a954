"""What a call through torch's dispatcher costs: the torch target's op, against a
hand-written stable-ABI op.

A hand-written op on PyTorch's LibTorch stable ABI (benchmarks/stable_vrelu3.cpp:
``STABLE_TORCH_LIBRARY``, ``TORCH_BOX``; its result from ``torch::stable::empty_like``, or,
as ``vrelu3_shim``, from the C shim's ``aoti_torch_empty_strided``), called as
``torch.ops.ksbind_bench_stable.vrelu3(x)``, against the same loop bound by ksbind's
torch target (configs/torch_ops.yaml's ``vrelu3``, called as ``m.vrelu3(x)``: its op,
called through the function the module writes for it), on 10 and on 100,000 float32
elements, timed side by side in alternating batches (benchmarks/timing.py). Also checks
the op's values against the torch target's.

The op is compiled with g++ against the running torch's stable headers, with
``-DTORCH_TARGET_VERSION=0x020a000000000000`` (the lowest torch it runs on: 2.10) and
the torch target's loop flags,
into a temporary folder, on every run (about a second of CPU).
Run: python -m benchmarks.stable_op [--quick | --build-to DIR]
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

import ksbind
from benchmarks import REPO
from benchmarks.timing import interleaved, log, parser

SOURCE = REPO / "benchmarks" / "stable_vrelu3.cpp"
#: torch 2.10, as the stable ABI spells versions: major, minor and patch bytes, then zeros.
TORCH_TARGET_VERSION = "0x020a000000000000"
#: The loop's optimisation flags: those of the torch target's kernels (ksbind/targets/torch/build.py),
#: so that the two loops vectorise alike and the rows compare what surrounds them.
KERNEL_FLAGS = ("-O3", "-fno-trapping-math", "-fno-math-errno")


def build_stable_op(out_dir: Path) -> Path:
    """The op's shared library, compiled into out_dir."""
    lib = out_dir / "stable_vrelu3.so"
    torch_dir = Path(torch.__file__).parent
    cmd = [os.environ.get("CXX", "g++"), *KERNEL_FLAGS, "-std=c++17", "-shared", "-fPIC",
           f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}", f"-I{torch_dir / 'include'}", str(SOURCE),
           "-o", str(lib), f"-L{torch_dir / 'lib'}", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{torch_dir / 'lib'}"]
    log(f"compiling {SOURCE.name} against torch {torch.__version__}'s stable headers")
    subprocess.run(cmd, check=True)
    return lib


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--quick", action="store_true", help="fewer calls per batch and fewer batches")
    cli.add_argument("--build-to", metavar="DIR", type=Path,
                     help="only compile the op into DIR/stable_vrelu3.so (scripts/test_torch_compat.sh loads it "
                          "under another torch)")
    args = cli.parse_args(argv)
    if args.build_to is not None:
        args.build_to.mkdir(parents=True, exist_ok=True)
        print(build_stable_op(args.build_to))
        return 0
    quick = bool(args.quick)
    with tempfile.TemporaryDirectory(prefix="ksbind-stable-op-") as d:
        torch.ops.load_library(str(build_stable_op(Path(d))))  # loaded: the file may go
    op, op_shim = torch.ops.ksbind_bench_stable.vrelu3, torch.ops.ksbind_bench_stable.vrelu3_shim
    m = ksbind.build(REPO / "configs" / "torch_ops.yaml", name="torch_ops", quiet=True)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; seconds per call, medians "
          f"of alternating batches. m: the torch target (its op, through the module's function)")
    print(f"{'elements':>9} {'stable op':>11} {'shim alloc':>11} {'m.vrelu3':>11} {'m / shim':>8} {'m / op':>7}")
    for n in (10, 100_000):
        x = torch.randn(n)
        for f in (op, op_shim):
            assert torch.allclose(f(x), m.vrelu3(x), atol=1e-6), "the stable op and the torch target disagree"
        number = (2_000 if quick else 20_000) if n == 10 else (50 if quick else 500)
        sides: list[Callable[[], object]] = [partial(op, x), partial(op_shim, x), partial(m.vrelu3, x)]
        t_op, t_shim, t_m = interleaved(sides, number, 5 if quick else 15)
        print(f"{n:>9} {t_op * 1e6:>9.2f}us {t_shim * 1e6:>9.2f}us {t_m * 1e6:>9.2f}us "
              f"{t_m / t_shim:>8.2f} {t_m / t_op:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
