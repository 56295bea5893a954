"""ksbind's benchmarks: speed targets measured side by side in one run (never in tests).

    python -m benchmarks.run [--quick] [--only NAME] [--write-doc docs/performance.md]
    python -m benchmarks.X             # each module's own, more detailed report

Run from the repository's root. ``benchmarks.timing`` is the one place that
times things (interleaved A/B batches, medians, builds in fresh processes) and
holds the table's ``Row``; ``benchmarks.run.GROUPS`` is the row registry
(tests/test_benchmarks.py reads the row names from it). A new row is one more
``Group`` in that list, usually with its measuring code in a module of its own.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
HERE = REPO / "benchmarks"
#: ksc and its runtime live beside the repository (never copied into it), as in the tests.
KSC_DIR = Path(os.environ.get("KSBIND_SHARED", REPO.parent / "shared")) / "ksc"
KSC, KSC_RUNTIME, KSC_PROGRAMS = KSC_DIR / "bin" / "ksc", KSC_DIR / "runtime", KSC_DIR / "programs"
#: examples/gmm: ksc's committed output for the GMM objective, and its eager PyTorch reference.
GMM = REPO / "examples" / "gmm"


def ksc_missing(*needed: Path) -> str | None:
    """Why rows needing ksc (and these files of it) cannot run here, or None."""
    for p in (KSC, KSC_RUNTIME / "knossos.h", *needed):
        if not p.exists():
            return f"{p} is missing (ksc is not beside the repository)"
    return None


def gmm_reference() -> ModuleType:
    """examples/gmm/reference.py (the GMM objective in eager PyTorch), loaded once by its path."""
    import sys

    name = "ksbind_gmm_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, GMM / "reference.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before exec: its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]
