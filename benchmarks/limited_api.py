"""What the stable ABI costs the python target: its modules are compiled for
Python's limited API (``Py_LIMITED_API`` for 3.10: one ``.abi3.so`` for every
CPython >= 3.10), where CPython's macros (``PyFloat_AS_DOUBLE``,
``PyTuple_GET_ITEM``, ``PyList_SET_ITEM``...) are function calls. Each row
times the same generated module built twice, side by side: as ksbind builds
it, and compiled for the full C API (``-UPy_LIMITED_API`` after the target's
flag: this CPython only, the macros inline). Timed in CPU seconds of this
process (``time.process_time``): on a shared machine a batch that waits for
a core would otherwise count the wait.

    python benchmarks/limited_api.py    # these rows alone (benchmarks/run.py runs them with the rest)
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.timing import Row, pair

#: After the target's -DPy_LIMITED_API=...: the same sources compiled for the full C API.
FULL_API = "-UPy_LIMITED_API"
#: CPU time: steadier than wall time on a loaded machine.
CLOCK = time.process_time
#: Elements of the list row's argument (and result).
LIST_ELEMENTS = 1_000


def _build(config: Path, name: str, cache: Path, full_api: bool) -> ModuleType:
    from ksbind import load_config
    from ksbind.pipeline import build_spec

    spec = next(s for s in load_config(config) if s.name == name)
    if not full_api:
        return build_spec(spec, cache_dir=cache, quiet=True)
    old = os.environ.get("KSBIND_CXXFLAGS")
    os.environ["KSBIND_CXXFLAGS"] = f"{old or ''} {FULL_API}".strip()
    try:
        return build_spec(dataclasses.replace(spec, name=f"{name}_full", output=Path(spec.output).with_name(
            f"{name}_full")), cache_dir=cache, quiet=True)
    finally:
        if old is None:
            del os.environ["KSBIND_CXXFLAGS"]
        else:
            os.environ["KSBIND_CXXFLAGS"] = old


def _imports(module: ModuleType, symbol: str) -> bool:
    """Whether the module's .so takes ``symbol`` from the interpreter (nm -D)."""
    out = subprocess.run(["nm", "-D", "--undefined-only", str(module.__file__)], capture_output=True, text=True,
                         check=True).stdout
    return any(line.split()[-1] == symbol for line in out.splitlines() if line.strip())


def rows(poly_config: Path, bench_config: Path, cache: Path, hand: Any, calls: int, repeats: int,
         log: Callable[[str], None]) -> list[Row]:
    """vrelu3 on a list of floats (``bench_py`` of bench_config) against ``hand``'s
    pybind11 m.def of it; then poly(2.0, 3) (``bench_poly`` of poly_config) and the
    same vrelu3, each as built and on the full C API."""
    log("python target: limited API against the full C API")
    poly, poly_full = (_build(poly_config, "bench_poly", cache, full) for full in (False, True))
    py, py_full = (_build(bench_config, "bench_py", cache, full) for full in (False, True))
    # The two builds differ as they should: only the limited one calls PyTuple_GetItem.
    assert _imports(py, "PyTuple_GetItem") and not _imports(py_full, "PyTuple_GetItem")
    assert str(py.__file__).endswith(".abi3.so")
    assert poly.poly(2.0, 3) == poly_full.poly(2.0, 3) == 15.0
    t_lim, t_full = pair(lambda: poly.poly(2.0, 3), lambda: poly_full.poly(2.0, 3), calls, repeats,
                                 CLOCK)
    out = [Row("limited API, python target", "scalar poly(2.0, 3), module on the limited API (abi3)",
               "the same module on the full C API", t_lim * 1e9, t_full * 1e9, "ns", "report")]
    xs = [((i % 17) - 8) / 4 for i in range(LIST_ELEMENTS)]
    assert py.vrelu3(xs) == py_full.vrelu3(xs) == hand.vrelu3(xs)
    list_calls = max(1, calls // 100)
    t_lim, t_hand = pair(lambda: py.vrelu3(xs), lambda: hand.vrelu3(xs), list_calls, repeats, CLOCK)
    out.insert(0, Row("call overhead, python target, list", f"generated entry, vrelu3 on a {LIST_ELEMENTS:,}-float "
                      "list", "hand-written pybind11 m.def (std::vector<float>)", t_lim * 1e6, t_hand * 1e6, "us",
                      "<= 1.10"))
    t_lim, t_full = pair(lambda: py.vrelu3(xs), lambda: py_full.vrelu3(xs), list_calls, repeats, CLOCK)
    out.append(Row("limited API, python target", f"vrelu3 on a {LIST_ELEMENTS:,}-float list (in and out), "
                   "limited API", "the same module on the full C API", t_lim * 1e6, t_full * 1e6, "us", "report"))
    return out


def main(argv: list[str] | None = None) -> int:
    """These rows alone, through benchmarks/run.py's registry (its modules and references)."""
    from benchmarks import run

    return run.main([*(argv or []), "--only", "limited API"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
