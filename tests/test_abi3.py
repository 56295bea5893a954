"""One python-target wheel for every CPython >= 3.10 (docs/packaging.md, "One wheel
for every CPython"): the module is built on the stable ABI of 3.10
(``Py_LIMITED_API``), named ``.abi3.so`` and its wheel tagged ``cp310-abi3``.

The wheel is tests/abi3_support.py's project, built here, or the one named by
``KSBIND_ABI3_WHEEL``: scripts/test_pythons.sh builds it once on .venv's CPython
(3.11) and runs ``test_the_abi3_wheel_installs_and_runs_on_this_cpython`` with it
on 3.10, 3.12 and 3.13, where pip checks its tag against that interpreter's.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.abi3_support import WHEEL_ENV, build_wheel

ABI3_WHEEL = re.compile(r"^abi3_demo-1\.0-cp310-abi3-manylinux_2_\d+_x86_64\.whl$")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get(WHEEL_ENV)
    if given:
        return Path(given)
    return build_wheel(tmp_path_factory.mktemp("abi3"))


def test_a_python_target_wheel_is_abi3_for_cpython_3_10_and_later(wheel: Path) -> None:
    """The name and WHEEL say cp310-abi3 (auditwheel's manylinux platform kept), and
    the compiled module is the one file of the stable ABI's suffix."""
    assert ABI3_WHEEL.match(wheel.name), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        wheel_file = zf.read("abi3_demo-1.0.dist-info/WHEEL").decode()
    assert [n for n in names if n.endswith(".so")] == ["abi3_demo/_calls.abi3.so"]
    assert re.search(r"^Tag: cp310-abi3-manylinux_2_\d+_x86_64$", wheel_file, re.M), wheel_file


def test_abi3audit_finds_nothing_outside_the_stable_abi_of_3_10(wheel: Path) -> None:
    """abi3audit reads every Python symbol the .so imports and checks each is in the
    stable ABI, and in it by 3.10 (the version the wheel's tag promises)."""
    proc = subprocess.run([sys.executable, "-m", "abi3audit", "--strict", "--report", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    (audit,) = [so for w in report["specs"].values() for so in w["wheel"]]
    assert audit["result"]["is_abi3"] and audit["result"]["non_abi3_symbols"] == []
    assert audit["result"]["computed"] == "3.10", audit["result"]  # nothing newer than the tag says
    print(f"\nabi3audit {wheel.name}: abi3, needs {audit['result']['computed']}")


RUN = r"""
import json, sys, threading
import abi3_demo
from abi3_demo import _calls as m
out = {"file": m.__file__, "python": list(sys.version_info[:2])}
out["fadd"] = m.fadd(1.5, 2.25)
out["vscale"] = m.vscale([1.0, -2.0, 3.5], 2.0)
out["msum"] = m.msum([[1.0, 2.0], [3.0, 4.0]])
out["isum"] = m.isum(range(5))
out["shouts"] = m.shouts(["ab", "c"])
out["tagged"] = m.tagged([("x", 1.0), ("y", 2.0)], 3.0)
class Mine: pass
errors = []
for call in (lambda: m.fadd(Mine(), 1.0), lambda: m.fadd(1.0, "s"), lambda: m.vscale([1.0, None], 1.0),
             lambda: m.fadd(1.0, 2.0, Mine()), lambda: m.fadd(1.0, y=2.0), lambda: m.isum([1, 2**40]),
             lambda: m.strs_nonempty(["a", ""])):
    try:
        call()
        errors.append(None)
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")
out["errors"] = errors
# Calls releasing the GIL (release_gil: always), from two threads at once.
data = [float(i % 7) for i in range(4096)]
want = m.vwork(data, 3)
got = []
threads = [threading.Thread(target=lambda: got.append(m.vwork(data, 3))) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()
out["threads"] = [g == want for g in got]
out["top"] = m.allocator_top()
if sys.version_info >= (3, 12):  # declared per-interpreter-GIL safe at import, by the running CPython's version
    try:
        import _interpreters as interpreters
    except ImportError:
        import _xxsubinterpreters as interpreters
    iid = (interpreters.create(interpreters.new_config("isolated")) if hasattr(interpreters, "new_config")
           else interpreters.create(isolated=True))
    code = "from abi3_demo import _calls as s\nassert s.fadd(1.0, 2.0) == 3.0 and s.shouts(['q']) == ['Q!']\n"
    try:
        failure = interpreters.run_string(iid, code)
    except Exception as e:
        failure = repr(e)
    interpreters.destroy(iid)
    out["subinterpreter"] = None if failure is None else str(failure)
print(json.dumps(out))
"""


def test_the_abi3_wheel_installs_and_runs_on_this_cpython(wheel: Path, tmp_path: Path) -> None:
    """pip installs it (refusing a wheel whose tag this CPython does not take), and
    its module imports from the install, computes, names wrong arguments as the
    full-API build does, releases the GIL and (3.12+) loads in an isolated interpreter."""
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(target)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\n{wheel.name} on CPython {sys.version.split()[0]}: {out['file']}")
    assert out["file"] == str(target / "abi3_demo" / "_calls.abi3.so")
    assert out["fadd"] == 3.75
    assert out["vscale"] == [2.0, -4.0, 7.0]
    assert out["msum"] == 10.0
    assert out["isum"] == 10
    assert out["shouts"] == ["AB!", "C!"]
    assert out["tagged"] == [["x#0", 3.0], ["y#1", 6.0]]
    assert out["errors"] == [
        "TypeError: argument 'arg0': expected a float, got Mine",
        "TypeError: argument 'arg1': expected a float, got str",
        "TypeError: argument 'arg0[1]': expected a float, got NoneType",
        "TypeError: fadd(): incompatible function arguments: takes 2 arguments, got 3 (float, float, Mine). "
        "Expected fadd(arg0: float, arg1: float) -> float",
        "TypeError: fadd(): incompatible function arguments: unexpected keyword argument 'y'. "
        "Expected fadd(arg0: float, arg1: float) -> float",
        "OverflowError: argument 'arg0[1]': int out of range for ks Integer (32-bit)",
        out["errors"][-1],
    ]
    assert out["errors"][-1] is not None and out["errors"][-1].startswith("RuntimeError: ")
    assert out["threads"] == [True, True] and out["top"] == 0
    if sys.version_info >= (3, 12):
        assert out["subinterpreter"] is None


# ------------------------------------------------------------ without compiling

def test_which_targets_keep_to_the_stable_abi_and_what_that_means_for_a_build() -> None:
    import dataclasses

    from ksbind.backend.toolchain import limited_api_flags, module_suffix, stable_abi
    from ksbind.targets.registry import get_target

    assert get_target("python").limited_api == (3, 10)
    assert get_target("ks").limited_api is None  # pybind11: the full C API
    assert limited_api_flags((3, 10)) == ("-DPy_LIMITED_API=0x030A0000",) and limited_api_flags(None) == ()
    assert limited_api_flags((3, 12)) == ("-DPy_LIMITED_API=0x030C0000",)
    assert module_suffix((3, 10)) == ".abi3.so" and module_suffix(None) == sysconfig.get_config_var("EXT_SUFFIX")
    assert stable_abi((3, 10)) == (None if sysconfig.get_config_var("Py_GIL_DISABLED") else (3, 10))
    with pytest.raises(ValueError, match=r"limited_api \(2, 7\) is no CPython 3 stable ABI"):
        dataclasses.replace(get_target("python"), limited_api=(2, 7))


def test_a_wheel_is_abi3_only_when_every_module_is(tmp_path: Path) -> None:
    """The backend's tag: cp310-abi3 for python-target modules only; one ks-target
    (pybind11) module makes the wheel this CPython's; an editable wheel is always this CPython's."""
    from ksbind.build_meta import _tag
    from ksbind.project import load_project
    from tests.abi3_support import write_project

    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    this = f"cp{sys.version_info.major}{sys.version_info.minor}"
    root = write_project(tmp_path / "abi3")
    assert _tag(load_project(root)) == f"cp310-abi3-{platform}"
    assert _tag(None) == f"{this}-{this}-{platform}"
    mixed = root / "pyproject.toml"
    mixed.write_text(mixed.read_text() + '\n[[tool.ksbind.modules]]\nname = "_ks"\ntarget = "ks"\n'
                     'ks = ["ks/calls.ks"]\ncpp = ["ks/calls.cpp"]\nbindings = [{name = "fadd"}]\n')
    assert _tag(load_project(root)) == f"{this}-{this}-{platform}"
