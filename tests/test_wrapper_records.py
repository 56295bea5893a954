"""What a generated torch or jax wrapper hands its runtime (``BINDINGS``) is typed by the records
the runtime declares (ksbind/targets/torch/runtime/contract.py's ``BindingRecord``,
ksbind/targets/jax/runtime/contract.py's ``JaxBindingRecord``): the wrapper writes its table as
calls of them under an annotation naming them, so a type checker checks every generated table
against the one schema."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ksbind.cli import main

REPO = Path(__file__).resolve().parent.parent


def _mypy(files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context",
                           "--follow-imports=silent", "--ignore-missing-imports", "--cache-dir", str(cwd / ".mypy"),
                           *map(str, files)], capture_output=True, text=True, cwd=cwd, env=env)


def test_the_generated_tables_are_the_runtimes_records(tmp_path: Path) -> None:
    """Every kind of binding the two runtimes read (plain, elementwise with partials, vmap,
    mutating, jvp, packed and ragged on torch; vjp, jvp and result shapes on jax) type-checks
    against its runtime's record, and a table that strays from it does not."""
    for config in ("torch_ops.yaml", "relu3_jax.yaml", "relu3_torch.yaml"):
        assert main(["-q", "generate", str(REPO / "configs" / config), "--out-dir", str(tmp_path)]) == 0
    wrappers = sorted(p for p in tmp_path.glob("*/*.py") if p.stem == p.parent.name)
    assert {p.stem for p in wrappers} >= {"torch_ops", "torch_ops_lib", "torch_ops_packed", "relu3_jax", "relu3_torch"}
    text = "\n".join(p.read_text(encoding="utf-8") for p in wrappers)
    for key in ("partials=", " jvp=", "mutates=", "packed=_runtime.PackRecord(", "ragged=_runtime.PackRecord(",
                "jvp_handler=", "_runtime.LeafRecord(", "_runtime.ResultRecord(", "_runtime.JaxParamRecord(",
                "_runtime.Tree("):
        assert key in text, key  # the tables hold every optional part of the records, each record a call
    for p in wrappers:  # no dict literal in a table but the one field declared a dict
        table = p.read_text(encoding="utf-8").split("\nBINDINGS: ", 1)[1].split("\n]\n", 1)[0]
        assert "{'" not in table.replace("target_digests={", ""), p
    done = _mypy(wrappers, tmp_path)
    assert done.returncode == 0 and not done.stdout, done.stdout + done.stderr

    stray = tmp_path / "stray"
    stray.mkdir()
    torch_ops = (tmp_path / "torch_ops" / "torch_ops.py").read_text(encoding="utf-8")
    jax = (tmp_path / "relu3_jax" / "relu3_jax.py").read_text(encoding="utf-8")
    (stray / "t.py").write_text(torch_ops.replace("vjp_spec=", "vjp_specs=", 1), encoding="utf-8")
    (stray / "j.py").write_text(jax.replace("mode='elementwise'", "mode='mapped'", 1), encoding="utf-8")
    done = _mypy([stray / "t.py", stray / "j.py"], tmp_path)
    assert "stray/t.py" in done.stdout and '"vjp_specs"' in done.stdout and "BindingRecord" in done.stdout, done.stdout
    assert "stray/j.py" in done.stdout and "Literal['mapped']" in done.stdout, done.stdout


@pytest.mark.parametrize("runtime, record", [("ksbind.targets.torch.runtime", "BindingRecord"),
                                             ("ksbind.targets.jax.runtime", "JaxBindingRecord")])
def test_the_runtime_names_its_record_where_a_wrapper_finds_it(runtime: str, record: str) -> None:
    """The annotation is evaluated when the wrapper is imported: the runtime (and a wheel's copy
    of it, which is the same package) has the record at its top."""
    source = f"import {runtime} as r; import typing; assert typing.is_typeddict(r.{record})"
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
