"""The ksbind command: generate, check, decls, --version; bad input exits 2 with one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ksbind
from ksbind.cli import main

from .conftest import REPO

CONFIG = REPO / "configs" / "relu3.yaml"
RELU3_KS = REPO / "examples" / "relu3" / "relu3.ks"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real command line, in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "ksbind", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_version() -> None:
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"ksbind {ksbind.__version__}"


def test_generate_then_unchanged_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run("generate", CONFIG, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"relu3_ext: 4 files in {tmp_path / 'relu3_ext'} (4 changed)"  # 3 C++ files and the .pyi stub
    assert (tmp_path / "relu3_ext" / "module.cpp").is_file()
    assert main(["generate", str(CONFIG), "-o", str(tmp_path)]) == 0
    assert "(0 changed)" in capsys.readouterr().out
    assert main(["generate", "--check", str(CONFIG), "-o", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
    (tmp_path / "relu3_ext" / "module.cpp").write_text("edited\n")
    assert main(["generate", "--check", str(CONFIG), "-o", str(tmp_path)]) == 1
    assert capsys.readouterr().out.strip() == f"would change: {tmp_path / 'relu3_ext' / 'module.cpp'}"
    assert (tmp_path / "relu3_ext" / "module.cpp").read_text() == "edited\n"  # --check writes nothing


def test_generate_several_configs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(f"name: other\nks: {RELU3_KS}\n")
    assert main(["generate", str(CONFIG), str(other), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["relu3_ext", "other"]
    assert (tmp_path / "out" / "other" / "module.cpp").is_file()


def test_check_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: m\nks: {RELU3_KS}\n")
    assert main(["check", str(cfg)]) == 0
    assert capsys.readouterr().out.strip() == "m: ok (4 entry points, target ks)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_decls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decls", str(RELU3_KS)]) == 0
    out = capsys.readouterr().out
    assert "[sufrev [vrelu3 (Tensor 1 Float)]]\n    symbol: ks::sufrev$vrelu3$aT1f\n" in out
    assert ("ks::tensor<1, ks::Float> sufrev$vrelu3$aT1f(ks::allocator *, ks::tensor<1, ks::Float>, "
            "ks::tensor<1, ks::Float>)") in out
    assert "ks::Float relu3$af(ks::allocator *, ks::Float)" in out


@pytest.mark.parametrize("args,fragment", [
    (["decls", "{tmp}/missing.ks"], "missing.ks: declaration file not found"),
    (["generate", "{tmp}/missing.yaml"], "missing.yaml: config file not found"),
    (["check", "{tmp}/bad.yaml"], "bad.yaml:1:1: unknown key 'nmae' (did you mean 'name'?)"),
    (["decls", "{tmp}/bad.ks"], "bad.ks:2:15: unknown type 'Flaot' (did you mean 'Float'?)"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    (tmp_path / "bad.yaml").write_text("nmae: m\nks: x.ks\n")
    (tmp_path / "bad.ks").write_text("(edef f Float Float)\n(edef g Float Flaot)\n")
    r = run(*[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ksbind: error: ") and fragment in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_usage_errors_exit_2() -> None:
    r = run("generate")
    assert r.returncode == 2 and "usage:" in r.stderr
