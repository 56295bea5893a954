"""Call overhead of a generated ks-target entry point versus a hand-written
pybind11 ``m.def`` of the same C++ function, plus relu3's cold build time and
cached import time. Run: ``python benchmarks/call_overhead_ks.py``.

Both modules are compiled here with the same compiler and flags and call the
same ks functions (relu3: Float -> Float; vrelu3 on a 4-element tensor), so
the ratio is the cost of the generated wrapper (arena lock, GIL release,
logging check) over pybind11's own dispatch.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import ksbind  # noqa: E402
from ksbind import buildcache  # noqa: E402
from ksbind.build import BASE_FLAGS, INCLUDE_DIR, CompilePlan, _compile_into, compiler  # noqa: E402

HAND_WRITTEN = textwrap.dedent("""\
    // The same ks functions bound by hand: pybind11's m.def, nothing else.
    #include "knossos-pybind.h"
    namespace ks {
    ks::Float relu3$af(ks::allocator *, ks::Float);
    ks::tensor<1, ks::Float> vrelu3$aT1f(ks::allocator *, ks::tensor<1, ks::Float>);
    }
    static ks::allocator hand_alloc(100000000);
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
        declare_tensor_1<ks::Float>(m, "Tensor_1_Float");
        m.def("relu3", [](ks::Float x) { return ks::relu3$af(&hand_alloc, x); });
        m.def("vrelu3", [](ks::tensor<1, ks::Float> t) { return ks::vrelu3$aT1f(&hand_alloc, t); });
        m.def("reset", []() { hand_alloc.reset(0); });
    }
    """)

CONFIG = textwrap.dedent("""\
    name: {name}
    target: ks
    ks: [{repo}/examples/relu3/relu3.ks]
    cpp: [{repo}/examples/relu3/relu3.cpp]
    bindings:
      - {{name: relu3, function: "[relu3 Float]"}}
      - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
    output: {out}
    """)


def best_per_call(fn, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def build_times(tmp: Path) -> dict[str, float]:
    """relu3 (configs/relu3.yaml, ks target): cold build and cached import, each in a fresh process."""
    env = {**os.environ, "KSBIND_CACHE_DIR": str(tmp / "cold-cache")}
    code = ("import time; t0 = time.perf_counter(); import ksbind; "
            f"m = ksbind.build({str(REPO / 'configs' / 'relu3.yaml')!r}, quiet=True); "
            "print(time.perf_counter() - t0)")
    cold = float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                text=True).stdout)
    cached = min(float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                      text=True).stdout) for _ in range(3))
    return {"relu3_cold_build_s": cold, "relu3_cached_import_s": cached}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-build-times", action="store_true", help="skip the cold/cached build timing")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ksbind-bench-") as d:
        tmp = Path(d)
        cache = tmp / "cache"
        cfg = tmp / "bench.yaml"
        cfg.write_text(CONFIG.format(name="bench_generated", repo=REPO, out=tmp / "gen"))
        generated = ksbind.build(cfg, cache_dir=cache, quiet=True)

        src = tmp / "hand" / "hand.cpp"
        src.parent.mkdir()
        src.write_text(HAND_WRITTEN)
        import pybind11
        import sysconfig
        plan = CompilePlan("bench_hand", (src, REPO / "examples" / "relu3" / "relu3.cpp"),
                           (INCLUDE_DIR, Path(pybind11.get_include()), Path(sysconfig.get_paths()["include"])),
                           BASE_FLAGS + ("-DTORCH_EXTENSION_NAME=bench_hand",), compiler(), src.parent)
        entry = buildcache.CacheEntry(cache, "bench_hand", "hand")
        _compile_into(entry, plan, quiet=True)
        hand = buildcache.import_from_path("bench_hand", entry.module_path)

        results: dict[str, float] = {}
        n = 200_000
        results["scalar_generated_ns"] = best_per_call(lambda: generated.relu3(0.5), n) * 1e9
        results["scalar_hand_ns"] = best_per_call(lambda: hand.relu3(0.5), n) * 1e9
        tg = generated.Tensor_1_Float(np.ones(4, dtype=np.float32))
        th = hand.Tensor_1_Float(np.ones(4, dtype=np.float32))
        m = 20_000  # results stay in the arena: reset between batches
        results["tensor_generated_ns"] = best_per_call(lambda: generated.vrelu3(tg), m) * 1e9
        generated.reset_allocator()
        results["tensor_hand_ns"] = best_per_call(lambda: hand.vrelu3(th), m) * 1e9
        hand.reset()
        results["scalar_ratio"] = results["scalar_generated_ns"] / results["scalar_hand_ns"]
        results["tensor_ratio"] = results["tensor_generated_ns"] / results["tensor_hand_ns"]
        if not args.no_build_times:
            results.update(build_times(tmp))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for k, v in results.items():
        print(f"{k:24s} {v:10.3f}")


if __name__ == "__main__":
    main()
