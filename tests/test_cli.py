"""The ksbind command: generate, check, decls, stubs, --version; bad input exits 2 with one line;
every argument and environment variable in --help; Ctrl-C and a closed pipe exit cleanly."""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ksbind
from ksbind.cli import ENVIRONMENT, _parser, main

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


PRELUDE = """\
(edef twice Float (Float))
(def [suffwdpass twice] (Tuple Float (Tuple)) (x : Float) (tuple (twice x) (tuple)))
(def [sufrevpass [twice Float]] Float ((d : Float) (b : Tuple)) (mul 2.0 d))
(def vtwice (Vec Float) (v : Vec Float) (build (size v) (lam (i : Integer) (twice (index i v)))))
(gdef suffwdpass [vtwice (Vec Float)])
(gdef sufrevpass [vtwice (Vec Float)])
"""


def _fake_ksc(root: Path) -> Path:
    """ksc's layout, bin/ksc beside runtime/, with a small prelude.ks (nothing is run)."""
    (root / "bin").mkdir()
    (root / "runtime").mkdir()
    exe = root / "bin" / "ksc"
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(0o755)
    (root / "runtime" / "prelude.ks").write_text(PRELUDE)
    (root / "runtime" / "knossos.h").write_text("")
    return exe


def test_decls_prelude_finds_the_runtime_beside_ksc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`ksbind decls --prelude`: each function the prelude defines or edefs, its ks signature,
    the SUF passes it writes and the derivatives it asks ksc for; the runtime found as ksc: finds it."""
    exe = _fake_ksc(tmp_path)
    monkeypatch.delenv("KSC_RUNTIME", raising=False)
    monkeypatch.setenv("KSC", str(exe))
    assert main(["decls", "--prelude"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"# {tmp_path / 'runtime' / 'prelude.ks'}: ")
    assert lines[1:] == ["edef [twice Float] -> Float  (written: suffwdpass, sufrevpass)",
                         "def [vtwice (Tensor 1 Float)] -> (Tensor 1 Float)  (gdef: suffwdpass, sufrevpass)"]
    # --ksc-runtime wins over the one beside ksc
    other = tmp_path / "other"
    other.mkdir()
    (other / "prelude.ks").write_text("(edef half Float (Float))\n")
    (other / "knossos.h").write_text("")
    assert main(["decls", "--prelude", "--ksc-runtime", str(other)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["edef [half Float] -> Float"]


@pytest.mark.skipif(not (REPO.parent / "shared" / "ksc" / "runtime" / "prelude.ks").is_file(),
                    reason="ksc's runtime is not in ../shared/ksc (shared/ksc absent)")
def test_decls_prelude_of_ksc_own_runtime() -> None:
    r = run("decls", "--prelude", "--ksc-runtime", REPO.parent / "shared" / "ksc" / "runtime")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) > 40
    # the matrix-vector product docs/ks.md recommends, with its hand-written SUF passes
    mul = next(line for line in lines if line.startswith("edef [mul (Tuple (Tensor 2 Float) (Tensor 1 Float))]"))
    assert mul.startswith("edef [mul (Tuple (Tensor 2 Float) (Tensor 1 Float))] -> (Tensor 1 Float)  (written: ")
    assert "suffwdpass" in mul and "sufrevpass" in mul
    assert "edef [tanh Float] -> Float  (written: D, fwd, rev, suffwdpass, sufrevpass)" in lines


def test_decls_prelude_lists_prelude_aten_after_prelude(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A runtime with prelude-aten.ks: its functions follow prelude.ks's, under a header line of
    their own, derivations written on plain names ([rev aten::twice]) counted as written."""
    exe = _fake_ksc(tmp_path)
    (tmp_path / "runtime" / "prelude-aten.ks").write_text(
        "(def aten::twice Float (x : Float) (mul 2.0 x))\n"
        "(def [rev aten::twice] Float ((x : Float) (dr : Float)) (mul 2.0 dr))\n"
        "(gdef fwd [aten::twice Float])\n")
    assert main(["decls", "--prelude", "--ksc", str(exe)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"# {tmp_path / 'runtime' / 'prelude.ks'}: ")
    assert lines[3].startswith(f"# {tmp_path / 'runtime' / 'prelude-aten.ks'}: ")
    assert lines[4:] == ["def [aten::twice Float] -> Float  (written: rev; gdef: fwd)"]


@pytest.mark.skipif(not (REPO.parent / "shared" / "ksc" / "runtime" / "prelude-aten.ks").is_file(),
                    reason="ksc's runtime is not in ../shared/ksc (shared/ksc absent)")
def test_decls_prelude_lists_ksc_own_aten_functions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decls", "--prelude", "--ksc-runtime", str(REPO.parent / "shared" / "ksc" / "runtime")]) == 0
    lines = capsys.readouterr().out.splitlines()
    headers = [line for line in lines if line.startswith("# ")]
    assert [h.split(":")[0].rsplit("/", 1)[-1] for h in headers] == ["prelude.ks", "prelude-aten.ks"]
    assert "def [aten::mul (Tuple (Tensor 2 Float) (Tensor 2 Float))] -> (Tensor 2 Float)  " \
           "(gdef: fwd, rev, suffwdpass, sufrev, sufrevpass)" in lines
    # an edef with its derivatives written on the plain name, [shape [rev aten::cat]] among them
    assert "edef [aten::cat (Tuple (Tensor 1 (Tensor 2 Float)) Integer)] -> (Tensor 2 Float)  " \
           "(written: D, fwd, rev, shape)" in lines


@pytest.mark.parametrize("args,fragment", [
    (["decls"], "decls needs a FILE (a .ks or .kso file), or --prelude"),
    (["decls", "--prelude", "{tmp}/x.ks"], "decls --prelude takes no FILE"),
    (["decls", "--prelude", "--ksc", "{tmp}/nope"], "ksc not found at"),
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


# ------------------------------------------------------------ help, exits, stubs

def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command's parser, with its command line: ('ksbind cache clean', parser)."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _subparsers(sub)


def test_every_argument_of_every_command_is_described() -> None:
    commands = dict(_subparsers(_parser()))
    assert {"ksbind build", "ksbind stubs", "ksbind templates list", "ksbind cache clean"} <= set(commands)
    for prog, parser in commands.items():
        for action in parser._actions:
            assert action.help and action.help != argparse.SUPPRESS, (prog, action.dest)
        flags = {s for a in parser._actions for s in a.option_strings}
        assert {"-v", "-q", "--verbose", "--quiet"} <= flags, prog
    text = run("build", "--help").stdout
    assert "CONFIG           a YAML config file" in text and "--templates DIR  a template override folder" in text


def _environment_variables_read() -> set[str]:
    """Every variable name ksbind's code reads: os.environ/getenv in its Python and its C++ headers."""
    pattern = re.compile(r"""(?:environ(?:\.get)?\(\s*|environ\[|getenv\(\s*|_env_flag\(\s*)["']([A-Z][A-Z0-9_]*)["']""")
    names: set[str] = set()
    package = REPO / "ksbind"
    for path in [*package.rglob("*.py"), *package.rglob("*.h"), *package.rglob("*.j2")]:
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


def test_help_lists_every_environment_variable_ksbind_reads() -> None:
    read = _environment_variables_read()
    assert {"KSC", "KSC_RUNTIME", "KSBIND_CACHE_DIR", "KSBIND_JOBS", "CXX", "KSBIND_ARENA_BYTES",
            "KSBIND_GIL_RELEASE_ELEMENTS", "KSBIND_OBJECT_CACHE", "KSBIND_CPU_CAPABILITY", "KSBIND_VERBOSE"} <= read
    listed = {name for name, _ in ENVIRONMENT}
    assert read <= listed, f"not in --help's environment section: {sorted(read - listed)}"
    for args in (["--help"], ["build", "--help"], ["cache", "clean", "--help"]):
        text = run(*args).stdout
        assert "environment:" in text and all(f"  {name} " in text for name in listed), args


def test_a_closed_pipe_exits_quietly() -> None:
    """`ksbind templates list | head -1`: the reader leaves before ksbind writes."""
    proc = subprocess.Popen([sys.executable, "-m", "ksbind", "templates", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 128 + signal.SIGPIPE
    assert err == ""


def test_ctrl_c_during_a_build_is_one_line_exit_130_and_leaves_nothing(tmp_path: Path) -> None:
    """SIGINT while the compiler runs (a stand-in that sleeps): the compilers are
    stopped, nothing half-built stays in the cache or the output folder."""
    fake = tmp_path / "slow-g++"
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "slow g++ 1.0"; exit 0; fi\n'
                    f'echo $$ >> {tmp_path / "pids"}\nexec sleep 60\n')
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    cfg = tmp_path / "relu3.yaml"
    cfg.write_text(CONFIG.read_text().replace("../examples", str(REPO / "examples"))
                   .replace("output: ../build/relu3_ext", f"output: {tmp_path / 'out'}"))
    env = {**os.environ, "CXX": str(fake), "KSBIND_CACHE_DIR": str(cache), "KSBIND_CCACHE": "0",
           "PYTHONFAULTHANDLER": "1"}  # a hang shows where (SIGABRT below)
    # SIGINT as a terminal leaves it: a shell's background job (a CI runner may be one) starts its
    # children with SIGINT ignored, and Python then installs no KeyboardInterrupt handler.
    proc = subprocess.Popen([sys.executable, "-m", "ksbind", "build", "-q", str(cfg)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (tmp_path / "pids").exists():  # a compiler is running
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        raise AssertionError("the build did not stop: " + proc.communicate()[1][-4000:]) from None
    assert proc.returncode == 130
    assert err == "ksbind: interrupted\n" and out == ""
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    # Lock files stay (flock: free once their holder exits); nothing staged or half-written does.
    leftovers = [p for p in cache.rglob("*") if (p.name.startswith(".") or p.suffix in (".tmp", ".so", ".o"))
                 and p.suffix != ".lock" and p.name != ".locks" and ".locks" not in p.parts]
    assert leftovers == []
    assert [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")] == []


def test_stubs_writes_each_modules_pyi(tmp_path: Path) -> None:
    r = run("stubs", CONFIG, REPO / "configs" / "relu3_torch.yaml", "-o", tmp_path / "typings")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "typings").iterdir()) == ["relu3_ext.pyi", "relu3_torch.pyi"]
    assert "def vrelu3(" in (tmp_path / "typings" / "relu3_ext.pyi").read_text()
    assert run("stubs", CONFIG).returncode == 2  # -o is required
