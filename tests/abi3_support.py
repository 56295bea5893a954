"""One wheel for every CPython: a pyproject-only project holding one python-target
module (examples/calls' ks functions and their C++), built by ksbind's backend
into a ``cp310-abi3`` wheel. tests/test_abi3.py checks that wheel and runs it;
scripts/test_pythons.sh builds it once on .venv's CPython (3.11) with
``python -m tests.abi3_support OUT`` and hands it, as ``KSBIND_ABI3_WHEEL``, to
the same test on CPython 3.10, 3.12 and 3.13.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CALLS = REPO / "examples" / "calls"
#: The environment variable naming a wheel built elsewhere (by another CPython).
WHEEL_ENV = "KSBIND_ABI3_WHEEL"

PYPROJECT = """\
[build-system]
requires = ["ksbind"]
build-backend = "ksbind.build_meta"

[project]
name = "abi3-demo"
version = "1.0"
requires-python = ">=3.10"

[tool.ksbind]
package = "abi3_demo"

[[tool.ksbind.modules]]
name = "_calls"
target = "python"
ks = ["ks/calls.ks"]
cpp = ["ks/calls.cpp"]
bindings = [
    {name = "fadd"}, {name = "vscale"}, {name = "msum"}, {name = "isum"}, {name = "shouts"},
    {name = "tagged"}, {name = "strs_nonempty"},
    {name = "vwork", function = "vwork", release_gil = "always"},
]
"""


def write_project(where: Path) -> Path:
    """The project in ``where`` (created); returns it."""
    (where / "ks").mkdir(parents=True)
    for name in ("calls.ks", "calls.cpp"):
        shutil.copy(CALLS / name, where / "ks" / name)
    (where / "abi3_demo").mkdir()
    (where / "abi3_demo" / "__init__.py").write_text("from abi3_demo._calls import *  # noqa: F403\n")
    (where / "pyproject.toml").write_text(PYPROJECT)
    return where


def build_wheel(out: Path) -> Path:
    """The project's wheel, built in ``out`` by this interpreter (ksbind's build_wheel
    hook, auditwheel's repair included, as a front end runs it: in the project's folder)."""
    project = write_project(out / "project")
    dist = out / "dist"
    code = "import sys, ksbind.build_meta as b; print(b.build_wheel(sys.argv[1]))"
    proc = subprocess.run([sys.executable, "-c", code, str(dist)], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "KSBIND_PCH": "0", "PYTHONPATH": str(REPO)}, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"building the abi3 wheel failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return dist / proc.stdout.strip().splitlines()[-1]


if __name__ == "__main__":
    print(build_wheel(Path(sys.argv[1]).resolve()))
