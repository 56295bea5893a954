"""Build times of each target against its compiler alone, side by
side in one run: each repeat runs every case once, each build in a fresh
process; the figures are medians.

    python -m benchmarks.target_builds [--repeats N] [--baseline OLD_CHECKOUT]

The cases:

- ``gmm, TARGET``: ksc's GMM objective + vjp (``gmm.ks`` through ksc) built
  for TARGET as a module never built before (its own module and binding names
  on every repeat, so its generated units are new and no object of it is cached; ccache
  off on both sides, benchmarks/timing.py's NO_COMPILER_CACHE), with the shared parts warm: other modules of the same target and
  toolchain were built first (ksc's ``ex1.ks``) and their shared precompiled
  headers finished (the python and ks targets'; the torch target has none). Against ``g++ alone``: the compiler (``CXX``, default
  g++) on the module's user C++ (ksc's output) with the flags the target gives
  that C++.
- ``elementwise, torch``: one elementwise binding (relu3 over a tensor) on the
  torch target, shared parts warm, against ``torch.utils.cpp_extension.load_inline``
  of the same function written by hand, cold (its own fresh build folder).
- ``first build ever, TARGET``: the GMM module in an empty cache, this ksbind
  against ``--baseline DIR`` (an older checkout, e.g. ``git worktree add DIR
  4401fea``: the commit before the per-target build work, whose figures
  docs/performance.md keeps); without it, this ksbind with
  ``KSBIND_OBJECT_CACHE=0 KSBIND_PCH=0``.

Needs ksc beside the repository, and torch. benchmarks/run.py shows these as rows.
"""
from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from benchmarks.ksc_gmm_build import GMM, KSC, RUNTIME, WARMUP_KS, available, build, gxx_alone
from benchmarks.scratch import scratch_dir
from benchmarks.timing import Times, load_inline_in_new_process, log, parser

TARGETS = ("ks", "python", "torch")

GMM_CONFIG = """\
name: {name}
target: {target}
ks: [{ks}]
ksc: {{path: {ksc}, runtime: {runtime}}}
bindings:
  - {{name: {binding}, function: gmm_knossos_gmm_objective, vjp: {binding}_vjp}}
output: {out}
"""
WARMUP = """\
name: {name}
target: {target}
ks: [{ks}]
ksc: {{path: {ksc}, runtime: {runtime}}}
bindings:
  - {{name: g, function: g, vjp: g_vjp}}
output: {out}
"""
ELEMENTWISE = """\
name: {name}
target: torch
declarations: |
  (edef relu3 Float (Float))
cpp: [{cpp}]
bindings:
  - {{name: {binding}, function: relu3, mode: elementwise}}
output: {out}
"""
#: The ks function (as ksc writes one) the elementwise module binds.
RELU3_CPP = """\
#include "knossos.h"
namespace ks {
Float relu3$af(allocator *, Float x) {
  if (x < 0.0f) return 0.0f;
  if (x < 1.0f) return x * x * x / 3.0f;
  return x - 2.0f / 3.0f;
}
}
"""
#: The same by hand for load_inline: an elementwise loop over a float tensor.
HAND_TORCH = """\
#include <torch/extension.h>
static float relu3(float x) {
  if (x < 0.0f) return 0.0f;
  if (x < 1.0f) return x * x * x / 3.0f;
  return x - 2.0f / 3.0f;
}
torch::Tensor relu3_t(torch::Tensor t) {
  auto c = t.contiguous();
  auto out = torch::empty_like(c);
  const float* a = c.data_ptr<float>();
  float* b = out.data_ptr<float>();
  for (int64_t i = 0; i < c.numel(); ++i) b[i] = relu3(a[i]);
  return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu3", &relu3_t); }
"""


def cases() -> list[str]:
    out = [f"gxx_{t}" for t in TARGETS] + [f"cold_{t}" for t in TARGETS]
    out += ["elementwise", "load_inline"]
    out += [f"first_{w}_{t}" for t in TARGETS for w in ("new", "old")]
    return out


def user_flags(target: str) -> list[str]:
    """The flags the target gives the module's user C++ (less include folders)."""
    from ksbind.backend.toolchain import BASE_FLAGS
    from ksbind.targets.torch.build import CFLAGS

    # The torch target compiles the user's C++ in its unit of ks code (torch_stable_unit.cpp):
    # its CFLAGS, no torch header before the user's code.
    return list(CFLAGS) if target == "torch" else list(BASE_FLAGS)


def compiler_alone(cache: Path, name: str, target: str) -> tuple[float, float]:
    """The compiler (``CXX``) on the module's user C++ (ksc's output, from the cache)."""
    return gxx_alone(cache, name, user_flags(target), shlex.split(os.environ.get("CXX", "g++")))


def load_inline_cold(build_dir: Path) -> tuple[float, float]:
    """load_inline of HAND_TORCH in a fresh process and a fresh build folder: wall and CPU seconds."""
    shutil.rmtree(build_dir, ignore_errors=True)
    return load_inline_in_new_process("hand_relu3", HAND_TORCH, build_dir)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def measure(work: Path, repeats: int, baseline: Path | None = None,
            log: Callable[[str], None] = lambda s: None) -> Times:
    work.mkdir(parents=True, exist_ok=True)
    times = Times(cases(), baseline=f"ksbind at {baseline}" if baseline else
                  "this ksbind with KSBIND_OBJECT_CACHE=0 KSBIND_PCH=0")
    warm = work / "warm-cache"
    cpp = write(work / "relu3.cpp", RELU3_CPP)
    log("warming the shared parts: two modules per target (ksc's ex1.ks), two elementwise torch modules")
    for target in TARGETS:
        for i in range(2):
            name = f"warm_{target}_{i}"
            build(write(work / f"{name}.yaml", WARMUP.format(name=name, target=target, ks=WARMUP_KS, ksc=KSC,
                                                             runtime=RUNTIME, out=work / "out" / name)), warm, work)
    for i in range(2):
        name = f"warm_ew_{i}"
        build(write(work / f"{name}.yaml", ELEMENTWISE.format(name=name, binding=f"relu3_w{i}", cpp=cpp,
                                                             out=work / "out" / name)), warm, work)
    old_env = {} if baseline else {"KSBIND_OBJECT_CACHE": "0", "KSBIND_PCH": "0"}
    for r in range(repeats):
        log(f"repeat {r + 1} of {repeats}")
        for target in TARGETS:
            name = f"gmm_{target}_{r}"
            config = write(work / f"{name}.yaml", GMM_CONFIG.format(
                name=name, binding=f"objective_{r}", target=target, ks=GMM, ksc=KSC, runtime=RUNTIME,
                out=work / "out" / name))
            times.add(f"cold_{target}", build(config, warm, work))
            times.add(f"gxx_{target}", compiler_alone(warm, name, target))
            for label, env, path in (("new", {}, None), ("old", old_env, baseline)):
                cache = work / f"empty-{label}-{target}-{r}"
                first = write(work / f"first_{label}_{name}.yaml", GMM_CONFIG.format(
                    name=f"first_{name}", binding=f"objective_{label}_{r}", target=target, ks=GMM, ksc=KSC, runtime=RUNTIME,
                    out=work / "out" / f"first_{label}_{name}"))
                times.add(f"first_{label}_{target}", build(first, cache, work, env, path))
                shutil.rmtree(cache, ignore_errors=True)
        name = f"ew_{r}"
        config = write(work / f"{name}.yaml", ELEMENTWISE.format(name=name, binding=f"relu3_{r}", cpp=cpp,
                                                                 out=work / "out" / name))
        times.add("elementwise", build(config, warm, work))
        times.add("load_inline", load_inline_cold(work / f"inline-{r}"))
    return times


def report(t: Times) -> str:
    lines = [f"{'case':52} {'median s':>9}  ratio"]
    for target in TARGETS:
        lines.append(f"{'gmm, ' + target + ', g++ alone on its user C++':52} {t.median('gxx_' + target):9.2f}")
        lines.append(f"{'gmm, ' + target + ', new module, shared parts warm':52} {t.median('cold_' + target):9.2f}"
                     f"  {t.median('cold_' + target) / t.median('gxx_' + target):.2f} x g++ alone")
    lines.append(f"{'elementwise torch module, shared parts warm':52} {t.median('elementwise'):9.2f}"
                 f"  {t.median('elementwise') / t.median('load_inline'):.2f} x load_inline")
    lines.append(f"{'load_inline of the same by hand, cold':52} {t.median('load_inline'):9.2f}")
    for target in TARGETS:
        new, old = t.median(f"first_new_{target}"), t.median(f"first_old_{target}")
        lines.append(f"{'gmm, ' + target + ', first build ever':52} {new:9.2f}  {new / old:.2f} x baseline "
                     f"({old:.2f} s)")
    return "\n".join(lines)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="an older ksbind checkout for the first-build-ever rows")
    args = ap.parse_args()
    why = available()
    if why:
        print(f"skipped: {why}")
        return
    with scratch_dir(prefix="ksbind-targets-") as tmp:
        t = measure(Path(tmp), args.repeats, args.baseline, log)
    print(f"medians of {args.repeats}, {os.cpu_count()} cores, CXX={os.environ.get('CXX', 'g++')}; "
          f"baseline: {t.baseline}")
    print(report(t))


if __name__ == "__main__":
    main()
