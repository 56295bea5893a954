"""Links (ksbind/backend/compile.py, link): a faster linker than GNU ld when one is
installed or KSBIND_LINKER names one, and the compiler's own when the chosen one
fails; and compile_objects' ``meanwhile`` (the torch and jax targets' import on a
thread), run once the compilers are started."""
from __future__ import annotations

import ctypes
import logging
import os
import threading
from pathlib import Path

import pytest

from ksbind import session
from ksbind.backend import toolchain
from ksbind.backend.compile import compile_objects, link
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain, linker_flags
from ksbind.cache.objects import ObjectCache


def fake_programs(folder: Path, *names: str, body: str = "exit 1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        program = folder / name
        program.write_text(f"#!/bin/sh\n{body}\n")
        program.chmod(0o755)
    return folder


def test_ksbind_linker_names_the_linker_or_turns_the_choice_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSBIND_LINKER", "mold")
    assert linker_flags() == ("-fuse-ld=mold",)
    for off in ("0", "default", "bfd"):
        monkeypatch.setenv("KSBIND_LINKER", off)
        assert linker_flags() == ()


def test_the_first_fast_linker_on_path_is_chosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSBIND_LINKER", raising=False)
    monkeypatch.setenv("PATH", str(fake_programs(tmp_path / "none")))
    assert linker_flags() == ()
    monkeypatch.setenv("PATH", str(fake_programs(tmp_path / "gold", "ld.gold")))
    assert linker_flags() == ("-fuse-ld=gold",)
    monkeypatch.setenv("PATH", str(fake_programs(tmp_path / "both", "ld.gold", "ld.lld")))
    assert linker_flags() == ("-fuse-ld=lld",) and toolchain.FAST_LINKERS[0] == "lld"


def tiny_unit(tmp_path: Path) -> list[Unit]:
    (tmp_path / "a.cpp").write_text('extern "C" int a_value() { return 41 + 1; }\n')
    return [Unit(tmp_path / "a.cpp")]


TINY = Toolchain("test", ("g++",), ("-O0", "-fPIC", "-std=c++17"), ())


def test_a_chosen_linker_that_fails_costs_a_second_link_not_the_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A broken ld.lld first on PATH: g++ -fuse-ld=lld runs it and fails; the link is run
    again with g++'s own linker, and the library works."""
    monkeypatch.setenv("KSBIND_CCACHE", "0")
    monkeypatch.delenv("KSBIND_LINKER", raising=False)
    bad = fake_programs(tmp_path / "bin", "ld.lld")
    monkeypatch.setenv("PATH", f"{bad}:{os.environ['PATH']}")
    assert linker_flags() == ("-fuse-ld=lld",)
    caplog.set_level(logging.DEBUG, logger="ksbind")
    objects = compile_objects(tiny_unit(tmp_path), TINY, objects=None, work=tmp_path, log_dir=tmp_path, label="m")
    out = link(objects, TINY, tmp_path / "tiny.so", objects[0], tmp_path, "m")
    assert ctypes.CDLL(str(out)).a_value() == 42
    text = caplog.text
    assert "-fuse-ld=lld" in text and "linking with -fuse-ld=lld failed" in text


def test_a_linker_named_by_ksbind_linker_that_fails_is_the_build_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ksbind.errors import BuildError

    monkeypatch.setenv("KSBIND_CCACHE", "0")
    monkeypatch.setenv("KSBIND_LINKER", "lld")
    bad = fake_programs(tmp_path / "bin", "ld.lld")
    monkeypatch.setenv("PATH", f"{bad}:{os.environ['PATH']}")
    objects = compile_objects(tiny_unit(tmp_path), TINY, objects=None, work=tmp_path, log_dir=tmp_path, label="m")
    with pytest.raises(BuildError, match="linking"):
        link(objects, TINY, tmp_path / "tiny.so", objects[0], tmp_path, "m")


def test_while_compiling_starts_once_the_compiles_are_under_way_and_not_without_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSBIND_CCACHE", "0")
    calls: list[str] = []
    cache = ObjectCache(tmp_path / "cache")

    def meanwhile() -> None:
        calls.append(threading.current_thread().name)

    with session.changed(schedule=session.Schedule(while_compiling=meanwhile)):
        compile_objects(tiny_unit(tmp_path), TINY, objects=cache, work=tmp_path, log_dir=tmp_path)
        assert calls == [threading.current_thread().name]  # once, from the build's own thread
        compile_objects(tiny_unit(tmp_path), TINY, objects=cache, work=tmp_path, log_dir=tmp_path)
    assert len(calls) == 1  # the object came from the cache: nothing to overlap
