"""The torch target's link stub (ksbind/targets/torch/link_stub.py): a library exporting only the
C shim's names, made from a real library's export list, that a module links against instead;
a module needing anything else of the real library is linked again against it
(ksbind/backend/compile.py, link's ``first``). Checked with g++ against a small library made
here, then on torch's own libtorch_cpu when torch is installed."""
from __future__ import annotations

import ctypes
import logging
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from ksbind.backend.compile import compile_objects, link
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.errors import KsbindWarning
from ksbind.targets.torch import link_stub

pytestmark = pytest.mark.skipif(shutil.which("nm") is None or shutil.which("g++") is None,
                                reason="needs nm and g++ (binutils)")

TINY = Toolchain("test", ("g++",), ("-O0", "-fPIC", "-std=c++17"), ())


#: The stand-in's name: not libtorch_cpu.so, which the dynamic linker would take for torch's own when
#: this process has loaded torch (a loaded library's soname satisfies a later DT_NEEDED entry).
NAME = "ks_standin"


def real_library(folder: Path) -> Path:
    """A library of three functions: two of the C shim's kind, one not."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "real.cpp"
    source.write_text('extern "C" int aoti_torch_answer() { return 42; }\n'
                      'extern "C" int torch_other() { return 7; }\n'
                      'extern "C" int not_the_shim() { return 5; }\n')
    library = folder / f"lib{NAME}.so"
    subprocess.run(["g++", "-shared", "-fPIC", f"-Wl,-soname,lib{NAME}.so", "-o", str(library), str(source)],
                   check=True)
    return library


def needed(library: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def module(tmp_path: Path, body: str, real: Path, stub: Path | None, caplog: pytest.LogCaptureFixture) -> Path:
    (tmp_path / "m.cpp").write_text(body)
    objects = compile_objects([Unit(tmp_path / "m.cpp")], TINY, objects=None, work=tmp_path, log_dir=tmp_path)
    tc = Toolchain("test", ("g++",), (), (), libs=(f"-L{real.parent}", f"-l{NAME}", f"-Wl,-rpath,{real.parent}",
                                                    "-Wl,--no-undefined"))
    caplog.set_level(logging.DEBUG, logger="ksbind")
    return link(objects, tc, tmp_path / "m.so", objects[0], tmp_path, "m", (f"-L{stub}",) if stub else ())


def _first_flags(root: Path, real: Path) -> tuple[str, ...]:
    """What a link would put first for the stub of ``real``: its folder once the stub is made."""
    first = link_stub.link_first(root, real)
    assert first is not None
    return first.flags()


def test_a_stub_exports_the_shim_names_only_under_the_real_file_name(tmp_path: Path) -> None:
    real = real_library(tmp_path / "torch")
    assert link_stub.exported_shim(real) == ["aoti_torch_answer", "torch_other"]
    root = tmp_path / "cache"
    assert _first_flags(root, real) == ()
    folder = link_stub.make(root, real, ("g++",))
    assert folder is not None and _first_flags(root, real) == (f"-L{folder}",)
    assert folder.parent.name == "link-stubs" and (folder / real.name).is_file()
    assert link_stub.exported_shim(folder / real.name) == ["aoti_torch_answer", "torch_other"]
    assert link_stub.make(root, real, ("g++",)) == folder  # made once
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]  # no temporary folder left


@pytest.mark.parametrize("damage", ["garbage", "truncated", "stub deleted", "record garbage", "record deleted"])
def test_a_damaged_stub_is_made_again_and_said(tmp_path: Path, damage: str) -> None:
    """A stub that failed to link would cost every later build a second link: the build that
    finds it damaged (its stub.json disagrees) says so and makes it again. A folder without its
    record (an earlier ksbind's) is made again without a word."""
    real = real_library(tmp_path / "torch")
    root = tmp_path / "cache"
    folder = link_stub.make(root, real, ("g++",))
    assert folder is not None and link_stub.start(root, real, ("g++",)) is None  # whole: nothing to do
    stub, record = folder / real.name, folder / link_stub.RECORD
    if damage == "garbage":
        stub.write_bytes(bytes(b ^ 0x5A for b in stub.read_bytes()))
    elif damage == "truncated":
        stub.write_bytes(stub.read_bytes()[:100])
    elif damage == "stub deleted":
        stub.unlink()
    elif damage == "record garbage":
        record.write_bytes(b"\x00garbage")
    else:
        record.unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = link_stub.start(root, real, ("g++",))
    said = [str(w.message) for w in caught if issubclass(w.category, KsbindWarning)]
    if damage == "record deleted":
        assert said == []
    else:
        assert len(said) == 1 and str(folder) in said[0] and "damaged" in said[0], said
    assert thread is not None
    thread.join()
    assert _first_flags(root, real) == (f"-L{folder}",)
    assert link_stub.exported_shim(stub) == ["aoti_torch_answer", "torch_other"]
    assert link_stub.start(root, real, ("g++",)) is None  # whole again


def test_a_changed_library_gets_a_stub_of_its_own(tmp_path: Path) -> None:
    real = real_library(tmp_path / "torch")
    root = tmp_path / "cache"
    first = link_stub.make(root, real, ("g++",))
    real.write_bytes(real.read_bytes() + b"\0")  # another size: a reinstalled torch
    assert _first_flags(root, real) == ()
    assert link_stub.make(root, real, ("g++",)) not in (None, first)


def test_a_module_links_against_the_stub_and_runs_against_the_real_library(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    real = real_library(tmp_path / "torch")
    stub = link_stub.make(tmp_path / "cache", real, ("g++",))
    out = module(tmp_path, 'extern "C" int aoti_torch_answer();\n'
                           'extern "C" int twice() { return 2 * aoti_torch_answer(); }\n', real, stub, caplog)
    assert f"-L{stub}" in caplog.text and "failed" not in caplog.text
    assert f"lib{NAME}.so" in needed(out)
    assert ctypes.CDLL(str(out)).twice() == 84  # the real library's function, found through the rpath


def test_a_module_needing_more_than_the_shim_is_linked_again_against_the_real_library(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    real = real_library(tmp_path / "torch")
    stub = link_stub.make(tmp_path / "cache", real, ("g++",))
    out = module(tmp_path, 'extern "C" int not_the_shim();\n'
                           'extern "C" int plus_one() { return not_the_shim() + 1; }\n', real, stub, caplog)
    assert f"linking with -L{stub} failed: linking again without" in caplog.text
    assert ctypes.CDLL(str(out)).plus_one() == 6


def test_torchs_own_library_has_a_stub_of_its_shim() -> None:
    """The real libtorch_cpu: its stub keeps the functions a stable-ABI op library calls."""
    torch_dir = pytest.importorskip("ksbind.targets.torch.build").find_torch()
    if torch_dir is None:
        pytest.skip("torch is not installed")
    names = link_stub.exported_shim(torch_dir / "lib" / "libtorch_cpu.so")
    for name in ("aoti_torch_empty_strided", "aoti_torch_get_sizes", "torch_call_dispatcher",
                 "aoti_torch_library_init_impl"):
        assert name in names
    assert all(n.startswith(link_stub.PREFIXES) for n in names)
