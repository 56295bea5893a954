"""The batch-build row: N small modules built by one `ksbind build` command
(modules built concurrently, sharing KSBIND_JOBS compiler processes) against
the same N built one after another (one `ksbind build CONFIG` command each, as
a shell loop over the configs would), both from an empty cache, interleaved.

Every module is its own tiny ks function (a python-target module of one
binding, `f_K(x) = x * K + 1` in hand-written C++), so no object of one module
fits another: nothing comes from the object cache. Both sides run with ksbind's
defaults, as a user would: the shared precompiled header is on. One after
another, the first build starts it in the background and the builds after it
use it once it is there; one command builds it first and every module uses it
(ksbind/backend/compile.py PCH_FIRST). A background header build left running
by one side is waited for, untimed, before the other side starts.

    python -m benchmarks.batch_build [N]     # prints both times and the ratio
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.scratch import scratch_dir
from ksbind.backend.pch import wait_for_background

KS = "(def f_{k} Float (x : Float) (add (mul x {k}.0) 1.0))\n"
CPP = """\
#include "knossos.h"
namespace ks {{
ks::Float f_{k}$af(ks::allocator *, ks::Float x) {{ return x * {k}.0f + 1.0f; }}
}}
"""
CONFIG = """\
name: batch_{k}
target: python
ks: [m{k}.ks]
cpp: [m{k}.cpp]
bindings:
  - {{name: f_{k}, function: "[f_{k} Float]"}}
output: out/batch_{k}
"""


def write_modules(folder: Path, n: int) -> list[Path]:
    """n configs (one module each) in folder; returns their paths. Module k computes x * k + 1."""
    folder.mkdir(parents=True, exist_ok=True)
    configs = []
    for k in range(1, n + 1):
        (folder / f"m{k}.ks").write_text(KS.format(k=k))
        (folder / f"m{k}.cpp").write_text(CPP.format(k=k))
        config = folder / f"m{k}.yaml"
        config.write_text(CONFIG.format(k=k))
        configs.append(config)
    return configs


def _ksbind(args: list[str], cache: Path, cwd: Path) -> None:
    env = {**os.environ, "KSBIND_CACHE_DIR": str(cache), "KSBIND_CCACHE": "0"}
    env.pop("KSBIND_PCH", None)
    proc = subprocess.run([sys.executable, "-m", "ksbind", "-q", "build", *args], env=env, cwd=cwd,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ksbind build failed:\n{proc.stderr[-3000:]}")


def measure(tmp: Path, n: int, repeats: int) -> tuple[float, float]:
    """Median seconds of: one command building all n modules; n commands, one module each.
    Each run starts from an empty cache of its own; the two sides alternate."""
    configs = write_modules(tmp / "src", n)
    names = [c.name for c in configs]
    one: list[float] = []
    each: list[float] = []
    for r in range(repeats):
        for side, out in (("one", one), ("each", each)):
            cache = tmp / f"cache-{side}-{r}"
            start = time.perf_counter()
            if side == "one":
                _ksbind(names, cache, tmp / "src")
            else:
                for name in names:
                    _ksbind([name], cache, tmp / "src")
            out.append(time.perf_counter() - start)
            wait_for_background(cache)  # untimed: not into the other side's time
    return statistics.median(one), statistics.median(each)


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 40
    with scratch_dir(prefix="ksbind-batch-") as d:
        t_one, t_each = measure(Path(d), n, 1)
    print(f"{n} modules: one command {t_one:.1f} s, one command each {t_each:.1f} s, ratio {t_one / t_each:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
