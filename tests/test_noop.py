"""No-op builds (ksbind/build_api.py): an unchanged module, in a new process, is imported from
its record without importing the pipeline, Jinja2 or YAML; editing any of its inputs (the
config, a template, a ks source, a generated file, the environment, ksbind itself) builds it
again, and the next process reuses that build. One python-target module serves every test:
each edit renders the same files, so its build is a cache hit, not a compile."""
from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ksbind import build_api as noop
from ksbind import inputs
from tests.e2e_support import REPO, run_python, session_cache_dir
from tests.test_ksc import KSC, RUNTIME, needs_ksc

RELU3 = REPO / "examples" / "relu3"
TEMPLATES = REPO / "ksbind" / "codegen" / "templates"
CONFIG = """\
name: noop_relu3
target: python
ks: [src/relu3.ks]
cpp: [src/relu3.cpp]
templates: [templates]
bindings:
  - name: vrelu3
    function: "[vrelu3 (Tensor 1 Float)]"
    vjp: vrelu3_vjp
output: out
"""
#: Prints whether the build was reused (nothing of the pipeline imported) and vrelu3's values.
BUILD = """\
import json, sys
import ksbind
m = ksbind.build({config!r}, quiet={quiet})
print(json.dumps({{"reused": "ksbind.pipeline" not in sys.modules, "values": m.vrelu3([0.5, 2.0])}}))
"""
HEAVY = ("jinja2", "yaml", "ksbind.pipeline", "ksbind.config", "ksbind.codegen", "ksbind.errors", "ksbind.log",
         "dataclasses")


def build_in_new_process(config: Path, env: dict[str, str] | None = None, flags: tuple[str, ...] = ()
                         ) -> tuple[bool, list[float], str]:
    """(reused, vrelu3 values, stderr) of ``ksbind.build(config)`` in a fresh interpreter."""
    code = BUILD.format(config=str(config), quiet=False)
    full = {"KSBIND_CACHE_DIR": str(session_cache_dir()), "KSBIND_VERBOSE": "2", **(env or {})}
    if flags:
        import subprocess

        proc = subprocess.run([sys.executable, *flags, "-c", code], cwd=REPO, env={**os.environ, **full},
                              capture_output=True, text=True, timeout=600)
    else:
        proc = run_python(code, full)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["reused"], out["values"], proc.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """relu3 on the python target, with an override template (the built-in stub, copied), built once."""
    root = tmp_path_factory.mktemp("noop")
    (root / "src").mkdir()
    for name in ("relu3.ks", "relu3.cpp"):
        shutil.copy(RELU3 / name, root / "src" / name)
    (root / "templates").mkdir()
    shutil.copy(TEMPLATES / "stub.pyi.j2", root / "templates" / "stub.pyi.j2")
    (root / "noop.yaml").write_text(CONFIG)
    reused, values, err = build_in_new_process(root / "noop.yaml")
    assert not reused and "no record of an earlier build" in err
    assert values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    return root


def test_an_unchanged_module_in_a_new_process_is_reused_without_the_pipeline(project: Path) -> None:
    reused, values, err = build_in_new_process(project / "noop.yaml", flags=("-X", "importtime"))
    assert reused, err[-2000:]
    assert values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    imported = {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert not {m for m in imported for heavy in HEAVY if m == heavy or m.startswith(heavy + ".")}
    assert "noop_relu3" not in {m for m in imported}  # the extension is loaded from its file, as a build does


def _append(path: Path, text: str) -> Callable[[Path], object]:
    return lambda root: (root / path).write_text((root / path).read_text() + text)


EDITS: dict[str, tuple[Callable[[Path], object], str]] = {
    "config": (_append(Path("noop.yaml"), "# a comment\n"), "noop.yaml changed"),
    "template": (_append(Path("templates/stub.pyi.j2"), "{# a comment #}"), "stub.pyi.j2 changed"),
    "new template": (lambda root: (root / "templates" / "unused.j2").write_text("x"), "folder"),
    "ks source": (_append(Path("src/relu3.ks"), "; a comment\n"), "relu3.ks changed"),
    "generated file": (lambda root: (root / "out" / "entry_points.h").unlink(), "entry_points.h changed"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_editing_an_input_builds_again_then_reuses_that(project: Path, edit: str) -> None:
    apply, why = EDITS[edit]
    apply(project)
    reused, values, err = build_in_new_process(project / "noop.yaml")
    assert not reused and why in err, err[-2000:]
    assert values == pytest.approx([0.5 ** 3 / 3, 2 - 2 / 3], rel=1e-6)
    assert (project / "out" / "entry_points.h").is_file()  # the build wrote what it writes
    reused, _, err = build_in_new_process(project / "noop.yaml")
    assert reused, err[-2000:]


def test_the_environment_a_build_reads_is_part_of_the_record(project: Path) -> None:
    reused, _, err = build_in_new_process(project / "noop.yaml", {"KSC": "/nowhere/ksc"})
    assert not reused and "the environ differs" in err
    reused, _, _ = build_in_new_process(project / "noop.yaml")  # and back
    assert not reused


def test_ksbinds_own_files_are_part_of_the_record(project: Path, tmp_path: Path) -> None:
    """An edit anywhere in the package (code, template, header) changes its digest, and a
    record of another digest is not reused."""
    copy = tmp_path / "ksbind"
    shutil.copytree(REPO / "ksbind", copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = inputs.package_digest(copy)
    for edited in ("build_api.py", "codegen/templates/stub.pyi.j2", "include/ksbind/python.h"):
        (copy / edited).write_text((copy / edited).read_text() + "\n")
        assert inputs.package_digest(copy) != before
        before = inputs.package_digest(copy)
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert inputs.package_digest(copy) == before  # compiled files are not inputs

    [record_file] = [p for p in (session_cache_dir() / "noop").glob("*.json")
                     if json.loads(p.read_text())["lookup"][0] == str(project / "noop.yaml")]
    record = json.loads(record_file.read_text())
    record["environment"]["ksbind"] = "0" * 64  # as if ksbind had changed since
    record_file.write_text(json.dumps(record))
    reused, _, err = build_in_new_process(project / "noop.yaml")
    assert not reused and "ksbind's own files changed" in err


def test_a_file_that_changes_while_it_is_built_writes_no_record(tmp_path: Path) -> None:
    source = tmp_path / "a.ks"
    source.write_text("(def f Float (x : Float) x)\n")
    with inputs.recording() as recorder:
        inputs.note_file(source, source.read_bytes())
        inputs.note_file(source, b"(def f Float (x : Float) (add x 1.0))\n")  # read again, edited meanwhile
    assert recorder.refused is not None and "changed while it was being built" in recorder.refused
    inputs.note_file(source)  # outside a recording: nothing is noted, nothing fails


def test_a_new_kind_of_input_read_through_the_reader_is_seen_by_the_noop_check(tmp_path: Path) -> None:
    """A reader that reads through ksbind/inputs.py (read_bytes, read_if_present, list_dir) needs
    nothing else: what it read is in the record, and a change to it is a change."""
    data, absent, folder = tmp_path / "weights.bin", tmp_path / "later.txt", tmp_path / "parts"
    data.write_bytes(b"\x00\x01")
    folder.mkdir()
    (folder / "a.part").write_text("a")
    with inputs.recording() as recorder:
        assert inputs.read_bytes(data) == b"\x00\x01"
        assert inputs.read_if_present(absent) is None
        assert inputs.list_dir(folder) == ["a.part"]
        inputs.note_module({"entry": "e", "steps": []})
    record = recorder.record([])
    assert inputs.changed(record) is None
    for change, undo in ((lambda: data.write_bytes(b"\x00\x02"), lambda: data.write_bytes(b"\x00\x01")),
                         (lambda: absent.write_text("now here"), absent.unlink),
                         (lambda: (folder / "b.part").write_text("b"), (folder / "b.part").unlink)):
        change()
        assert inputs.changed(record) is not None
        undo()
        assert inputs.changed(record) is None
    with pytest.raises(FileNotFoundError):  # the reader's errors are open's: each caller words its own
        inputs.read_bytes(tmp_path / "missing")


def test_a_record_is_found_by_config_name_templates_and_cache(tmp_path: Path) -> None:
    a = noop.record_path(tmp_path, noop.lookup("m.yaml", None, (), tmp_path))
    assert a == noop.record_path(tmp_path, noop.lookup(os.path.abspath("m.yaml"), None, [], tmp_path))
    assert a != noop.record_path(tmp_path, noop.lookup("m.yaml", "m", (), tmp_path))
    assert a != noop.record_path(tmp_path, noop.lookup("m.yaml", None, ("t",), tmp_path))
    assert a != noop.record_path(tmp_path, noop.lookup("m.yaml", None, (), tmp_path / "other"))


@pytest.mark.slow
@needs_ksc
def test_editing_a_ks_source_run_through_ksc_builds_again(tmp_path: Path) -> None:
    (tmp_path / "sq.ks").write_text("(def sq Float (x : Float) (mul x x))\n")
    config = tmp_path / "sq.yaml"
    config.write_text(f"name: noop_sq\ntarget: python\nks: [sq.ks]\nksc: {{path: {KSC}, runtime: {RUNTIME}}}\n"
                      "output: out\n")
    code = ("import json, sys, ksbind\n"
            f"m = ksbind.build({str(config)!r})\n"
            "print(json.dumps({'reused': 'ksbind.pipeline' not in sys.modules, 'value': m.sq(3.0)}))\n")
    env = {"KSBIND_CACHE_DIR": str(session_cache_dir()), "KSBIND_VERBOSE": "2"}

    def run() -> tuple[bool, str]:
        proc = run_python(code, env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["value"] == 9.0
        return out["reused"], proc.stderr

    assert run()[0] is False
    assert run()[0] is True
    (tmp_path / "sq.ks").write_text("; squares\n(def sq Float (x : Float) (mul x x))\n")
    reused, err = run()
    assert not reused and "sq.ks changed" in err
    assert run()[0] is True
