"""Wheels of ksbind modules (ksbind.setuptools): examples/package built with pip
and with python -m build, installed into a fresh venv without ksbind, imported
from outside the source tree and called; a broken C++ file fails the build with
ksbind's error.

CI builds the example twice: ``pip wheel --no-build-isolation`` (offline; that
wheel is installed and called) and ``python -m build --wheel`` in an isolated
build environment (its requirements from pip's configured indexes, ksbind
from a wheel of this checkout). ``scripts/test.sh --all`` adds the other two
combinations and an in-place build.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from ksbind.errors import ConfigError
from ksbind.setuptools import KsbindExtension

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "package"
EVERYTHING = os.environ.get("KSBIND_CORPUS") == "all"
WHEEL_FILES = {
    "ks_softsign/__init__.py", "ks_softsign/py.typed",
    "ks_softsign/_softsign.pyi", "ks_softsign/_softsign_torch.py", "ks_softsign/_softsign_torch.pyi",
    "ks_softsign/_softsign_torch_ksbind_runtime.py",
}
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
COMPILED = {f"ks_softsign/_softsign{SUFFIX}", f"ks_softsign/_softsign_torch_ext{SUFFIX}"}


def softsign(x: float) -> float:
    return x / (1 + abs(x))


def softsign_grad(x: float) -> float:
    return 1 / (1 + abs(x)) ** 2


def copy_example(where: Path) -> Path:
    shutil.copytree(EXAMPLE, where, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    return where


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)


def wheel_in(folder: Path) -> Path:
    (wheel,) = folder.glob("*.whl")
    return wheel


def built_ok(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"


@pytest.fixture(scope="session")
def pip_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """The example's wheel from ``pip wheel --no-build-isolation`` (offline), and its build time."""
    src = copy_example(tmp_path_factory.mktemp("pkg") / "package")
    start = time.perf_counter()
    proc = run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                "-w", "dist", "."], src)
    built_ok(proc, "pip wheel")
    return wheel_in(src / "dist"), time.perf_counter() - start


@pytest.fixture(scope="session")
def ksbind_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a wheel of this checkout's ksbind, for isolated builds' requirements."""
    out = tmp_path_factory.mktemp("ksbind-wheel")
    built_ok(run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w", str(out),
                  str(REPO)], REPO), "pip wheel of ksbind")
    return out


def isolated_env(ksbind_wheels: Path) -> dict[str, str]:
    """pip's configured find-links plus the ksbind wheel (the build environment's pip reads these)."""
    return {"PIP_FIND_LINKS": " ".join(filter(None, [str(ksbind_wheels), os.environ.get("PIP_FIND_LINKS", "")]))}


def fresh_venv(where: Path) -> Path:
    """A venv with no ksbind and no compiler-side packages; torch (and what it
    imports) from this test environment, through a folder of links named by a .pth."""
    base = getattr(sys, "_base_executable", sys.executable)
    built_ok(run([base, "-m", "venv", str(where / "venv")], where), "python -m venv")
    python = where / "venv" / "bin" / "python"
    purelib = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       where).stdout.strip())
    links = where / "system-packages"
    links.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        name = entry.name
        if name.endswith(".pth") or name.startswith(("ksbind", "__editable__", "_distutils_hack", "pip",
                                                     "setuptools", "pkg_resources", "pybind11")):
            continue
        (links / name).symlink_to(entry)
    (purelib / "system_packages.pth").write_text(f"{links}\n")
    return python


CALLS = r"""
import json, sys, time
start = time.perf_counter()
import ks_softsign
from ks_softsign import _softsign
imported = time.perf_counter() - start
import torch
start = time.perf_counter()
from ks_softsign import softsign
out = {"file": ks_softsign.__file__, "python_file": _softsign.__file__, "import_s": imported,
       "torch_import_s": time.perf_counter() - start}
xs = [-3.0, -0.5, 0.0, 0.25, 2.0]
out["values"] = ks_softsign.vsoftsign(xs)
out["vjp"] = ks_softsign.vsoftsign_vjp(xs, [1.0, 2.0, 1.0, 1.0, -1.0])
x = torch.tensor([[-3.0, -0.5], [0.25, 2.0]], requires_grad=True)
y = softsign(x)
y.backward(torch.ones_like(y))
out["torch_values"] = y.detach().tolist()
out["torch_grad"] = x.grad.tolist()
out["torch_module"] = sys.modules["ks_softsign._softsign_torch"].__file__
try:
    import ksbind
    out["ksbind"] = ksbind.__file__
except ImportError:
    out["ksbind"] = None
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_wheel_holds_the_modules_their_stubs_and_no_sources(pip_wheel: tuple[Path, float]) -> None:
    wheel, seconds = pip_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    package_files = {n for n in names if n.startswith("ks_softsign/")}
    assert package_files == WHEEL_FILES | COMPILED
    print(f"\nexample wheel: built in {seconds:.1f} s, {wheel.stat().st_size / 1024:.0f} KiB")


@pytest.mark.slow
def test_the_installed_wheel_runs_without_ksbind_a_compiler_or_the_source_tree(
        pip_wheel: tuple[Path, float], tmp_path: Path) -> None:
    wheel, _ = pip_wheel
    python = fresh_venv(tmp_path)
    built_ok(run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)], tmp_path),
             "pip install of the wheel")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    proc = run([str(python), "-c", CALLS], outside, env={"PYTHONPATH": "", "PATH": "/usr/bin:/bin", "CXX": "false"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    venv = str(tmp_path / "venv")
    assert out["ksbind"] is None
    assert out["file"].startswith(venv) and out["python_file"].startswith(venv)
    assert out["torch_module"].startswith(venv)
    xs = [-3.0, -0.5, 0.0, 0.25, 2.0]
    assert out["values"] == pytest.approx([softsign(x) for x in xs], rel=1e-6)
    assert out["vjp"] == pytest.approx([softsign_grad(x) * d for x, d in zip(xs, [1.0, 2.0, 1.0, 1.0, -1.0])],
                                       rel=1e-6)
    grid = [[-3.0, -0.5], [0.25, 2.0]]
    assert out["torch_values"] == [pytest.approx([softsign(x) for x in row], rel=1e-6) for row in grid]
    assert out["torch_grad"] == [pytest.approx([softsign_grad(x) for x in row], rel=1e-6) for row in grid]
    print(f"\nin a fresh process: import ks_softsign (python-target module) {out['import_s'] * 1000:.1f} ms; "
          f"then, torch imported, its torch-target module {out['torch_import_s'] * 1000:.1f} ms")


@pytest.mark.slow
def test_a_broken_cpp_file_fails_the_wheel_build_with_ksbinds_error(tmp_path: Path) -> None:
    src = copy_example(tmp_path / "package")
    cpp = src / "ks" / "softsign.cpp"
    lines = cpp.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "return x < 0.0f" in text)
    lines[line - 1] = "    return x < 0.0f ? x / (1.0f - x) : undefined_name;"
    cpp.write_text("\n".join(lines) + "\n")
    proc = run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                "-w", "dist", "."], src)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    where = "ks/softsign.cpp"  # as the config names it
    assert f"error: ksbind: {where}: compiling {where} failed: {where}:{line}:" in output, output[-4000:]
    assert "undefined_name" in output
    assert not list(src.glob("dist/*.whl"))
    assert not list(src.glob(f"build/lib*/ks_softsign/*{SUFFIX}"))


@pytest.mark.slow
def test_python_m_build_makes_the_same_wheel_in_an_isolated_environment(
        ksbind_wheels: Path, tmp_path: Path) -> None:
    src = copy_example(tmp_path / "package")
    proc = run([sys.executable, "-m", "build", "--wheel", "-o", "dist", "."], src, env=isolated_env(ksbind_wheels))
    built_ok(proc, "python -m build --wheel")
    names = {n for n in zipfile.ZipFile(wheel_in(src / "dist")).namelist() if n.startswith("ks_softsign/")}
    assert names == WHEEL_FILES | COMPILED


@pytest.mark.slow
@pytest.mark.skipif(not EVERYTHING, reason="two more wheel builds (~1.5 min): scripts/test.sh --all")
@pytest.mark.parametrize("how", ["pip-isolated", "build-no-isolation", "inplace"])
def test_the_other_ways_to_build(how: str, ksbind_wheels: Path, tmp_path: Path) -> None:
    src = copy_example(tmp_path / "package")
    if how == "pip-isolated":
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", "dist", "."]
    elif how == "build-no-isolation":
        cmd = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", "dist", "."]
    else:
        cmd = [sys.executable, "setup.py", "build_ext", "--inplace"]
    built_ok(run(cmd, src, env=isolated_env(ksbind_wheels)), how)
    if how == "inplace":
        names = {str(p.relative_to(src)) for p in (src / "ks_softsign").iterdir() if p.name != "__pycache__"}
    else:
        names = {n for n in zipfile.ZipFile(wheel_in(src / "dist")).namelist() if n.startswith("ks_softsign/")}
    assert names == WHEEL_FILES | COMPILED


# ------------------------------------------------------------ without compiling


def test_an_extension_is_named_by_what_it_compiles(tmp_path: Path) -> None:
    python = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign", package="ks_softsign")
    torch_ext = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign_torch", package="ks_softsign")
    top = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign_torch")
    assert (python.name, python.module_name) == ("ks_softsign._softsign", "ks_softsign._softsign")
    assert (torch_ext.name, torch_ext.module_name) == ("ks_softsign._softsign_torch_ext",
                                                       "ks_softsign._softsign_torch")
    assert top.name == "_softsign_torch_ext"
    assert python.extra_files() == ["_softsign.pyi", "py.typed"]
    assert top.extra_files() == ["_softsign_torch.pyi", "_softsign_torch.py", "_softsign_torch_ksbind_runtime.py"]


@pytest.mark.parametrize("module, package, message", [
    (None, None, "this config holds 2 modules (_softsign, _softsign_torch): say which"),
    ("nope", None, "no module named 'nope' in this config"),
    ("_softsign", "my-pkg", "package 'my-pkg'"),
])
def test_bad_extension_arguments_are_config_errors(module: str | None, package: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        KsbindExtension(EXAMPLE / "ksbind.yaml", module=module, package=package)
    assert str(EXAMPLE / "ksbind.yaml") in str(err.value)


@pytest.mark.parametrize("package, runtime_import, ext_import", [
    (None, "import _softsign_torch_ksbind_runtime as _runtime", "'_softsign_torch_ext'"),
    ("ks_softsign", "from . import _softsign_torch_ksbind_runtime as _runtime", "'ks_softsign._softsign_torch_ext'"),
])
def test_a_standalone_wrapper_imports_nothing_from_ksbind(package: str | None, runtime_import: str,
                                                          ext_import: str) -> None:
    from ksbind.pipeline import render_spec

    spec = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign_torch").spec
    wrapper = render_spec(spec, standalone=True, package=package).files["_softsign_torch.py"]
    assert runtime_import in wrapper and f"_runtime.extension({ext_import})" in wrapper
    assert "from ksbind" not in wrapper and "import ksbind" not in wrapper
    cached = render_spec(spec).files["_softsign_torch.py"]
    assert "from ksbind import torch_runtime as _runtime" in cached


def test_the_torch_runtime_shipped_in_wheels_imports_only_torch_and_the_standard_library() -> None:
    tree = ast.parse((REPO / "ksbind" / "torch_runtime.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {(node.module or ".").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module != "__future__"}
    assert imported <= {"torch", *sys.stdlib_module_names}, imported


@pytest.mark.slow
def test_a_missing_edef_is_found_without_importing_the_module(tmp_path: Path) -> None:
    from ksbind.config import load_config
    from ksbind.errors import BuildError
    from ksbind.standalone import build_into

    (tmp_path / "model.ks").write_text("; my_log has no C++ anywhere\n(edef my_log Float (Float))\n")
    (tmp_path / "m.yaml").write_text("name: m\ntarget: python\nks: [model.ks]\nbindings: [{name: my_log}]\n")
    [spec] = load_config(tmp_path / "m.yaml")
    target = tmp_path / "lib" / f"m{SUFFIX}"
    with pytest.raises(BuildError) as err:
        build_into(spec, target, tmp_path / "work")
    assert str(err.value) == (f"{tmp_path / 'model.ks'}:2:1: ks function [my_log Float] (an edef) has no C++ "
                              "definition: a file under 'cpp:' must define ks::my_log$af(ks::allocator *, ks::Float)")
    assert not list((tmp_path / "lib").iterdir())  # nothing half-written


# ------------------------------------------------------------ ksbind's own package metadata

def test_ksbind_metadata_license_python_versions_and_wheel_commands() -> None:
    """LICENSE is there and matches pyproject's MIT; requires-python and the
    version classifiers say what CI tests (3.10-3.13); the documented wheel
    commands keep dependencies out of dist/ (--no-deps)."""
    license_text = (REPO / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n\nCopyright (c) 2026 the ksbind authors\n")
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'license = { text = "MIT" }' in pyproject and "License :: OSI Approved :: MIT License" in pyproject
    assert 'requires-python = ">=3.10"' in pyproject
    versions = {line.split("::")[-1].strip().rstrip('",') for line in pyproject.splitlines()
                if "Programming Language :: Python :: 3." in line}
    assert versions == {"3.10", "3.11", "3.12", "3.13"}
    assert "[project.urls]" in pyproject and "Operating System :: POSIX :: Linux" in pyproject
    assert '"ninja"' not in pyproject
    for doc in (REPO / "README.md", REPO / "docs" / "packaging.md", EXAMPLE / "README.md"):
        commands = re.findall(r"pip wheel \. -w[^`#\n]*", doc.read_text())
        assert commands and all("--no-deps" in c for c in commands), (doc, commands)
