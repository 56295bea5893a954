"""A second compiler: ``CXX=clang++`` builds a module of every
target, and a wheel, with its own toolchain key and (the ks and python targets) its own shared
precompiled header (``.pch``, which clang, unlike g++, refuses rather than
ignores when it does not match: none may be refused here).

Needs clang++ (clang 14 here: ``.ci/run`` installs Debian's clang-14). Without
it these tests skip, except in CI (``CI`` set), where a missing clang++-14 is a
failure, not a skip."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .pch_support import build_in_new_process, included_headers, used_precompiled, wait_for_background_pch

REPO = Path(__file__).resolve().parents[1]
# CI claims clang 14 in particular (.ci/run installs it); elsewhere any clang++ will do.
CLANG = shutil.which("clang++-14") if os.environ.get("CI") else shutil.which("clang++") or shutil.which("clang++-14")

if CLANG is None and os.environ.get("CI"):
    raise RuntimeError("CI needs clang++-14 for tests/test_clang.py (.ci/run installs Debian's clang-14)")
pytestmark = pytest.mark.skipif(CLANG is None, reason="clang++ is not installed (Debian: clang-14 libomp-14-dev)")


@pytest.fixture(scope="module")
def clang_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for this file's clang builds (and none of g++'s)."""
    return tmp_path_factory.mktemp("clang-cache")


@pytest.mark.parametrize("target", ["ks", "python"])
def test_clang_builds_every_target_and_its_next_module_uses_the_pch(
        target: str, clang_cache: Path, tmp_path: Path) -> None:
    env = {"CXX": str(CLANG)}
    first = build_in_new_process(tmp_path, clang_cache, target, f"clang_{target}_a", env)
    assert first.values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    assert all(Path(cmd[0]).name.startswith("clang++") or "clang++" in " ".join(cmd[:3]) for cmd in first.commands)
    wait_for_background_pch(clang_cache)
    assert list(clang_cache.glob("pch/*/*/ksbind_pch.h.pch")), "clang's precompiled header was not built"
    assert not list(clang_cache.glob("pch/*/*/ksbind_pch.h.gch"))

    second = build_in_new_process(tmp_path, clang_cache, target, f"clang_{target}_b", env)
    assert second.values == first.values
    assert "refused" not in second.log, second.log[-3000:]
    used = included_headers(second)
    assert used and all((Path(h).parent / "ksbind_pch.h.pch").is_file() for h in used.values())
    unit = next(c for c in second.commands if "-include" in c)
    assert used_precompiled(unit, ".pch")


def test_clang_builds_a_torch_module_of_two_units_and_its_ops_unit_uses_the_pch(tmp_path: Path) -> None:
    """The torch target's library: the user's C++ with the kernels, and the op registration,
    each compiled by clang; the first build leaves a precompiled header of torch's
    stable-ABI headers (ksbind/torch_stable.h), which the next module's ops' unit loads."""
    pytest.importorskip("torch")
    cache = tmp_path / "cache"
    built = build_in_new_process(tmp_path, cache, "torch", "clang_torch", {"CXX": str(CLANG)})
    assert built.values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    assert sorted(Path(cmd[cmd.index("-c") + 1]).name for cmd in built.commands) == [
        "torch_stable_ops.cpp", "torch_stable_unit.cpp"]
    assert all("clang++" in " ".join(cmd[:3]) and "-include" not in cmd for cmd in built.commands)
    wait_for_background_pch(cache)
    assert len(list(cache.glob("pch/*/*/ksbind_pch.h.pch"))) == 1
    second = build_in_new_process(tmp_path, cache, "torch", "clang_torch_b", {"CXX": str(CLANG)})
    assert second.values == built.values and "refused" not in second.log
    (unit,) = [c for c in second.commands if "-include" in c]
    assert Path(unit[unit.index("-c") + 1]).name == "torch_stable_ops.cpp" and used_precompiled(unit, ".pch")


def test_a_clang_precompiled_header_that_does_not_fit_costs_time_not_the_build(tmp_path: Path) -> None:
    """clang refuses a .pch built with other options (g++ would ignore it): the
    unit is compiled again without it, said in a warning. Here a wrapper gives
    the units -O0 but not the header, so real clang really refuses it."""
    wrapper = tmp_path / "clang-o0"
    wrapper.write_text(f"""#!/bin/sh
case " $* " in *" c++-header "*) exec {CLANG} "$@";; *) exec {CLANG} "$@" -O0;; esac
""")
    wrapper.chmod(0o755)
    cache = tmp_path / "cache"
    env = {"CXX": str(wrapper)}
    build_in_new_process(tmp_path, cache, "python", "clang_fit_a", env)
    wait_for_background_pch(cache)
    assert list(cache.glob("pch/*/*/ksbind_pch.h.pch"))
    second = build_in_new_process(tmp_path, cache, "python", "clang_fit_b", env)
    assert second.values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    assert "was refused" in second.log and "compiling without it" in second.log
    assert "__OPTIMIZE__" in second.log  # clang's own reason, passed on


def test_a_wheel_builds_with_clang(tmp_path: Path) -> None:
    """The example package's python-target module as a wheel (ksbind.setuptools), compiled by clang++."""
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "examples" / "package", pkg,
                    ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    # through ksbind.setuptools (the example itself uses ksbind's backend, which builds both modules)
    (pkg / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68", "ksbind"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "ks-softsign"\nversion = "0.1.0"\n[tool.setuptools]\npackages = ["ks_softsign"]\n')
    (pkg / "setup.py").write_text(
        "from setuptools import setup\n"
        "from ksbind.setuptools import BuildExt, KsbindExtension\n"
        "setup(ext_modules=[KsbindExtension('ksbind.yaml', module='_softsign', package='ks_softsign')],\n"
        "      cmdclass={'build_ext': BuildExt})\n")
    env = {**os.environ, "CXX": str(CLANG), "KSBIND_VERBOSE": "2"}
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                           "-v", "-w", str(tmp_path / "dist"), str(pkg)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "clang++" in proc.stdout + proc.stderr  # the compile commands logged name it
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    code = ("import ks_softsign._softsign as m; print(m.vsoftsign([-3.0, 0.5]))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(target)},
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    values = [float(x) for x in out.stdout.strip().strip("[]").split(",")]
    assert values == pytest.approx([-3 / 4, 0.5 / 1.5], rel=1e-6)
