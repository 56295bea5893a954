"""YAML configs: schema, paths, bindings, defaults, batch generation and write-if-changed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import ksbind
from ksbind.binding import select_bindings
from ksbind.errors import BindingError, ConfigError, KsbindError, Location
from ksbind.pipeline import prepare
from ksbind.resolve import module_decls, resolve_spec
from ksbind.spec import ModuleSpec

from .conftest import REPO

KS = """(def f Float ((a : Float) (b : Float)) a)
(gdef sufrev [f (Tuple Float Float)])
(edef g (Vec Float) (Vec Float))
(edef h Integer (Tuple))
(edef over Float Float)
(edef over Float Integer)
(gdef sufrev [over Float])
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "src" / "m.ks", KS)
    return tmp_path


def config(project: Path, text: str, name: str = "c.yaml") -> Path:
    return write(project / "cfg" / name, text)


def test_relu3_config() -> None:
    [spec] = ksbind.load_config(REPO / "configs" / "relu3.yaml")
    assert isinstance(spec, ModuleSpec)
    assert spec.name == "relu3_ext" and spec.target == "ks"
    assert spec.ks_files == (REPO / "examples" / "relu3" / "relu3.ks",)
    assert spec.cpp == (REPO / "examples" / "relu3" / "relu3.cpp",)
    assert spec.tensor_types == ((1, "Float"), (2, "Float"), (2, "Integer"))
    assert spec.output == REPO / "build" / "relu3_ext"
    assert spec.bindings is not None and [b.name for b in spec.bindings] == ["vrelu3"]
    assert spec.bindings[0].vjp == "vrelu3_vjp" and spec.bindings[0].location == Location(
        str(REPO / "configs" / "relu3.yaml"), 7, 11)
    assert (spec.logging, spec.layout, spec.runtime.bundled) == (False, "split", True)


def test_paths_are_relative_to_the_config(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "src")  # the working directory does not matter
    cfg = config(project, "name: m\nks: ../src/m.ks\noutput: out/here\n")
    [spec] = ksbind.load_config(os.path.relpath(cfg))
    assert spec.ks_files[0].resolve() == (project / "src" / "m.ks").resolve()
    assert spec.output.resolve() == (project / "cfg" / "out" / "here").resolve()
    [default] = ksbind.load_config(config(project, "name: m2\nks: [../src/m.ks]\n", "d.yaml"))
    assert default.output == project / "cfg" / "build" / "m2"


def test_modules_list(project: Path) -> None:
    cfg = config(project, """modules:
  - name: one
    ks: ../src/m.ks
    bindings: [{name: g}]
  - name: two
    target: python
    declarations: |
      (edef k Float Float)
""")
    one, two = ksbind.load_config(cfg)
    assert (one.name, two.name, two.target) == ("one", "two", "python")
    assert [d.cpp_symbol for d in module_decls(two)] == ["k$af"]
    paths = ksbind.generate(cfg, out_dir=project / "out")
    assert {p.parent.name for p in paths} == {"one", "two"}


def test_inline_declarations_keep_config_line_numbers(project: Path) -> None:
    cfg = config(project, "name: m\ndeclarations: |\n  (edef a Float Float)\n\n  (edef b Float Flaot)\n")
    [spec] = ksbind.load_config(cfg)
    with pytest.raises(KsbindError, match="did you mean 'Float'") as info:
        module_decls(spec)
    assert info.value.location == Location(str(cfg), 5, 17)
    cfg2 = config(project, 'name: m\ndeclarations: "(edef a Float Flaot)"\n', "q.yaml")
    with pytest.raises(KsbindError) as info:
        module_decls(ksbind.load_config(cfg2)[0])
    assert info.value.location == Location(str(cfg2), 2, 30)


def names_and_symbols(project: Path, bindings_yaml: str) -> list[tuple[str, str, str | None]]:
    cfg = config(project, "name: m\nks: ../src/m.ks\n" + bindings_yaml)
    return [(b.name, b.decl.cpp_symbol, b.vjp_decl.cpp_symbol if b.vjp_decl else None)
            for b in resolve_spec(ksbind.load_config(cfg)[0]).bindings]


def test_default_bindings(project: Path) -> None:
    """Every base function, its sufrev as NAME_vjp when declared; overloads named by symbol."""
    assert names_and_symbols(project, "") == [
        ("f", "f$aff", "sufrev$f$aff"), ("g", "g$aT1f", None), ("h", "h", None),
        ("over_af", "over$af", "sufrev$over$af"), ("over_ai", "over$ai", None)]
    cfg = config(project, "name: m\nks: ../src/m.ks\n")
    [spec] = ksbind.load_config(cfg)
    assert [b.vjp_name for b in resolve_spec(spec).bindings][:1] == ["f_vjp"]


def test_bindings_by_structured_and_plain_name(project: Path) -> None:
    got = names_and_symbols(project, """bindings:
  - {name: first, function: f, vjp: first_vjp}
  - {name: g}
  - {name: over_int, function: "[over Integer]", vjp: over_int_vjp}
  - {name: vjp_only, function: "[sufrev [over Float]]"}
""")
    # A vjp not declared in the file is derived from the primal's signature.
    assert got == [("first", "f$aff", "sufrev$f$aff"), ("g", "g$aT1f", None),
                   ("over_int", "over$ai", "sufrev$over$ai"), ("vjp_only", "sufrev$over$af", None)]


def test_a_binding_may_be_a_bare_name_as_in_load_ks(project: Path) -> None:
    """``- g`` is ``- {name: g}``: read, checked and located as that mapping."""
    got = names_and_symbols(project, "bindings:\n  - g\n  - {name: first, function: f, vjp: first_vjp}\n")
    assert got == [("g", "g$aT1f", None), ("first", "f$aff", "sufrev$f$aff")]
    cfg = config(project, "name: m\nks: ../src/m.ks\nbindings: [g, h, g]\n")
    with pytest.raises(BindingError, match="duplicate binding name 'g'") as info:
        resolve_spec(ksbind.load_config(cfg)[0])
    assert info.value.location is not None and (info.value.location.line, info.value.location.column) == (3, 18)


@pytest.mark.parametrize("bindings,error,fragment", [
    ("[{name: x, function: over}]", BindingError, "'over' is ambiguous: it names [over Float], [over Integer]"),
    ("[{name: x, function: nope}]", BindingError, "no function named 'nope'"),
    ("[{name: x, function: ff}]", BindingError, "did you mean 'f'"),
    ("[{name: x, function: '[over Bool]'}]", BindingError, "no function [over Bool]"),
    ("[{name: x, function: g}, {name: x, function: h}]", BindingError, "duplicate binding name 'x'"),
    ("[{name: x, function: f, vjp: x}]", BindingError, "duplicate binding name 'x'"),
    ("[{name: class, function: f}]", BindingError, "C++ keyword"),
    ("[{name: lambda, function: f}]", BindingError, "Python keyword"),
    ("[{name: 2x, function: f}]", BindingError, "not an identifier"),
    ("[{name: x, funtion: f}]", ConfigError, "did you mean 'function'"),
    ("[{name: x, function: f, mode: vmapp}]", ConfigError, "did you mean 'vmap'"),
])
def test_binding_errors(project: Path, bindings: str, error: type[KsbindError], fragment: str) -> None:
    cfg = config(project, f"name: m\nks: ../src/m.ks\nbindings: {bindings}\n")
    with pytest.raises(error) as info:
        resolve_spec(ksbind.load_config(cfg)[0])
    assert fragment in info.value.message
    assert info.value.location is not None and info.value.location.file == str(cfg)
    assert info.value.location.line == 3


def test_batch_generate_writes_only_changed_files(project: Path) -> None:
    a = config(project, "name: a\nks: ../src/m.ks\n", "a.yaml")
    b = config(project, "name: b\nks: ../src/m.ks\nbindings: [{name: g}]\n", "b.yaml")
    out = project / "out"
    paths = ksbind.generate([a, b], out_dir=out)
    assert sorted(p.relative_to(out).as_posix() for p in paths) == [
        f"{m}/{f}" for m in "ab" for f in (f"{m}.pyi", "entry_points.cpp", "entry_points.h", "module.cpp")]
    before = {p: p.stat().st_mtime_ns for p in paths}
    os.utime(out / "a" / "module.cpp", ns=(1, 1))  # so a rewrite would be visible
    before[out / "a" / "module.cpp"] = 1
    assert ksbind.generate([a, b], out_dir=out) == paths
    assert {p: p.stat().st_mtime_ns for p in paths} == before
    # Changing b's bindings rewrites b's files only (those whose text changed).
    write(b, "name: b\nks: ../src/m.ks\nbindings: [{name: h}]\n")
    ksbind.generate([a, b], out_dir=out)
    changed = {p for p in paths if p.stat().st_mtime_ns != before[p]}
    assert changed and all(p.parent.name == "b" for p in changed)
    assert "h(" in (out / "b" / "entry_points.cpp").read_text()


def test_nothing_is_written_when_any_config_fails(project: Path) -> None:
    good = config(project, "name: good\nks: ../src/m.ks\n", "good.yaml")
    bad = config(project, "name: bad\nks: ../src/m.ks\nbindings: [{name: x, function: nope}]\n", "bad.yaml")
    with pytest.raises(BindingError):
        ksbind.generate([good, bad], out_dir=project / "out")
    assert not (project / "out").exists()


def test_two_modules_cannot_share_an_output(project: Path) -> None:
    a = config(project, "name: a\nks: ../src/m.ks\noutput: same\n", "a.yaml")
    b = config(project, "name: b\nks: ../src/m.ks\noutput: same\n", "b.yaml")
    with pytest.raises(ConfigError, match="give each module its own 'output'"):
        prepare([a, b])


def test_select_bindings_without_config() -> None:
    decls = ksbind.parse_ks(KS)
    assert [b.name for b in select_bindings(decls)] == ["f", "g", "h", "over_af", "over_ai"]
