"""The shared precompiled header (docs/building.md) is keyed by what its content depends
on, never a module's name or folder, is built once per toolchain after a first
build, and the next module of that toolchain, in another process, uses it (a torch
module's ops' unit too, over torch's stable-ABI headers, docs/torch.md)."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ksbind.backend import pch
from ksbind.backend.build import standalone_units
from ksbind.backend.runner import YIELDING
from ksbind.backend.toolchain import Toolchain
from ksbind.codegen.output import write_generated
from ksbind.config import load_config
from ksbind.pipeline import render_spec

from .pch_support import RELU3, build_in_new_process, included_headers, used_precompiled, wait_for_background_pch

CONFIG = """\
name: {name}
target: {target}
ks: [{relu3}/relu3.ks]
cpp: [{relu3}/relu3.cpp]
output: {out}
"""


def toolchain_of(tmp_path: Path, target: str, name: str) -> Toolchain:
    config = tmp_path / f"{name}.yaml"
    config.write_text(CONFIG.format(name=name, target=target, relu3=RELU3, out=tmp_path / "elsewhere" / name))
    (spec,) = load_config(config)
    # The backend's toolchain for the module's generated files (a wheel's build takes the same path).
    _, toolchain = standalone_units(spec, write_generated(spec.output, render_spec(spec)))
    return toolchain


@pytest.mark.parametrize("target", ["ks", "python"])
def test_the_key_does_not_depend_on_the_modules_name_or_folder(tmp_path: Path, target: str) -> None:
    a = toolchain_of(tmp_path, target, "first_module")
    b = toolchain_of(tmp_path, target, "another_name")
    assert pch.pch_key(a) == pch.pch_key(b)
    assert not any("first_module" in arg or "elsewhere" in arg for arg in a.compile_args())
    # What changes a header's meaning does change it: the units' own -f flags, the compiler.
    assert pch.pch_key(a, ("-ffinite-math-only",)) != pch.pch_key(a)
    assert pch.pch_key(a, ("-DTORCH_EXTENSION_NAME=x",)) == pch.pch_key(a)
    assert pch.pch_key(dataclasses.replace(a, cxx=("clang++-14",))) != pch.pch_key(a)


def test_the_second_module_uses_the_precompiled_header_built_after_the_first(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = build_in_new_process(tmp_path, cache, "python", "pch_first", {"CXX": "g++"})
    assert first.values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    # The first build found none, compiled as without one, and started one in the background.
    assert included_headers(first) == {}
    wait_for_background_pch(cache)
    [gch] = cache.glob("pch/*/*/ksbind_pch.h.gch")

    second = build_in_new_process(tmp_path, cache, "python", "pch_second", {"CXX": "g++"})
    assert second.values == first.values
    used = included_headers(second)
    assert used and {Path(h).parent for h in used.values()} == {gch.parent}
    assert "refused" not in second.log
    unit = next(c for c in second.commands if "-include" in c)
    assert used_precompiled(unit, ".gch")
    assert "compiled at niceness" not in second.log  # only the torch target's ops' unit yields


def test_a_torch_modules_ops_unit_uses_the_precompiled_header_its_first_build_left(tmp_path: Path) -> None:
    """The torch target's ops' unit parses ksbind/torch_stable.h (the stable headers, the C
    shim, ksbind's and ks's) from the shared precompiled header; the user's unit, which
    includes the user's C++ first, gets none."""
    pytest.importorskip("torch")
    cache = tmp_path / "cache"
    first = build_in_new_process(tmp_path, cache, "torch", "tpch_first", {"CXX": "g++"})
    assert first.values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    assert included_headers(first) == {}
    wait_for_background_pch(cache)
    [gch] = cache.glob("pch/*/*/ksbind_pch.h.gch")
    assert "#include <ksbind/torch_stable.h>" in (gch.parent / "ksbind_pch.h").read_text()
    second = build_in_new_process(tmp_path, cache, "torch", "tpch_second", {"CXX": "g++"})
    assert second.values == first.values
    used = included_headers(second)
    assert set(used) == {"torch_stable_ops.cpp"} and Path(used["torch_stable_ops.cpp"]).parent == gch.parent
    assert "refused" not in second.log
    unit = next(c for c in second.commands if "-include" in c)
    assert used_precompiled(unit, ".gch")
    # With its header the ops' unit yields the cores to the user's unit; without, it does not.
    yielding = f"torch_stable_ops.cpp: compiled at niceness +{YIELDING}"
    assert yielding in second.log and yielding not in first.log and "torch_stable_unit.cpp: compiled at" not in second.log

    # The companion object, built beside the header: the ops' unit includes its declarations
    # after the precompiled header, leaves its code out, and the library links it.
    [companion] = cache.glob("pch/*/*/companion.o")
    assert companion.parent == gch.parent
    includes = [unit[i + 1] for i, arg in enumerate(unit) if arg == "-include"]
    assert len(includes) == 2 and includes[1].endswith("ksbind/torch_stable_support.h")
    link = next(line for line in second.log.splitlines() if "$ " in line and " -shared " in line)
    assert str(companion) in link
    defined = defined_symbols(companion)
    assert "register_support_impls" in defined and "check_tensor<float>" in defined
    objects = [Path(arg) for arg in link.split() if arg.endswith("unit.o")]
    [ops_object] = [o for o in objects if "register_support_impls" in undefined_symbols(o)]
    ops_defined = defined_symbols(ops_object)
    assert "check_tensor<float>" not in ops_defined and "reset_allocator" not in ops_defined

    # What the companion holds works from the module: the support ops, and an argument's check.
    code = (f"import ksbind, torch; m = ksbind.build({str(tmp_path / 'tpch_second.yaml')!r}); "
            "m.reset_allocator(); assert m.cpu_capability() in m.cpu_capabilities(); "
            "e = None\ntry: m.v_tpch_second(torch.tensor([1, 2], dtype=torch.int32))\n"
            "except TypeError as err: e = str(err)\nprint('ERROR', e)")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "KSBIND_CACHE_DIR": str(cache)},
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "expected a torch.float32 tensor" in proc.stdout and "torch.int32" in proc.stdout, proc.stdout


def defined_symbols(obj: Path) -> str:
    """The demangled names an object defines (nm)."""
    return subprocess.run(["nm", "-C", "--defined-only", str(obj)], capture_output=True, text=True,
                          check=True).stdout


def undefined_symbols(obj: Path) -> str:
    return subprocess.run(["nm", "-C", "--undefined-only", str(obj)], capture_output=True, text=True,
                          check=True).stdout
