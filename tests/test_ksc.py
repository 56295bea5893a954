"""The ksc step with the real ksc (../shared/ksc): finding it, what it is asked for,
the gdefs ksbind adds, the cache, default bindings on its output, its errors.
Nothing here compiles C++ (see test_ksc_e2e.py for built modules)."""
from __future__ import annotations

import dataclasses
import os
import stat
import warnings
from pathlib import Path

import pytest

import ksbind
from ksbind.backend.missing import explain_missing, missing_ks_symbol
from ksbind.errors import KscError
from ksbind.ksc.diagnostics import missing_names
from ksbind.ksc.driver import find_ksc
from ksbind.lang.model import StructuredName
from ksbind.resolve import resolve_spec
from ksbind.spec import BindingSpec, KscSpec, ModuleSpec, RuntimeSpec
from tests.conftest import SHARED

KSC_DIR = SHARED / "ksc"
KSC = KSC_DIR / "bin" / "ksc"
RUNTIME = KSC_DIR / "runtime"
PROGRAMS = KSC_DIR / "programs"
needs_ksc = pytest.mark.skipif(not KSC.is_file(), reason=f"ksc is not in {KSC_DIR} (shared/ksc absent)")

CALLS = """\
(def h Float (x : Float) (mul x 2.0))
(def f Float ((x : Float) (n : Integer)) (add (h x) (to_float n)))
(def rec Float ((x : Float) (n : Integer)) (if (eq n 0) x (rec (mul x 2.0) (sub n 1))))
(def k Float (x : Float) (rec (h x) 3))
"""


def spec_for(tmp_path: Path, text: str, bindings: tuple[BindingSpec, ...] | None = None,
             **ksc: object) -> ModuleSpec:
    src = tmp_path / "model.ks"
    src.write_text(text, encoding="utf-8")
    return ModuleSpec(name="model", config_path=tmp_path / "model.yaml", target="python", ks_files=(src,),
                      bindings=bindings, runtime=RuntimeSpec(bundled=False, from_ksc=True),
                      ksc=KscSpec(KSC, **ksc),  # type: ignore[arg-type]
                      output=tmp_path / "out")


def resolve(spec: ModuleSpec, tmp_path: Path) -> ksbind.resolve.ResolvedModule:
    return resolve_spec(spec, tmp_path / "cache")


def by_name(resolved: ksbind.resolve.ResolvedModule) -> dict[str, tuple[str, str | None]]:
    return {b.name: (str(b.decl.name), str(b.vjp_decl.name) if b.vjp_decl else None) for b in resolved.bindings}


# ------------------------------------------------------------------ finding ksc


def test_ksc_missing_says_how_to_point_at_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KscError, match=r"ksc \(the Knossos compiler\) not found: set ksc: \{path: \.\.\.\}"):
        find_ksc(KscSpec())
    monkeypatch.setenv("KSC", str(tmp_path / "nope"))
    with pytest.raises(KscError, match=r"ksc not found at .*nope \(from \$KSC\)"):
        find_ksc(KscSpec())


def test_ksc_not_executable(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "ksc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(stat.S_IRUSR)
    if os.access(fake, os.X_OK):
        pytest.skip("root can execute any file")
    with pytest.raises(KscError, match="is not executable"):
        find_ksc(KscSpec(fake))


def test_runtime_found_beside_ksc_or_said_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSC_RUNTIME", raising=False)
    fake = tmp_path / "bin" / "ksc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    with pytest.raises(KscError, match=r"runtime folder \(with prelude.ks and knossos.h\) not found at .*runtime"):
        find_ksc(KscSpec(fake))


@needs_ksc
def test_ksc_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSC", str(KSC))
    monkeypatch.setenv("KSC_RUNTIME", str(RUNTIME))
    tool = find_ksc(KscSpec())
    assert tool.exe == KSC.resolve() and tool.runtime == RUNTIME.resolve()


def test_config_ksc_keys(tmp_path: Path) -> None:
    (tmp_path / "m.ks").write_text("(def f Float (x : Float) x)\n")
    cfg = tmp_path / "m.yaml"
    cfg.write_text("name: m\nks: [m.ks]\nksc: {timeout: 5}\n")
    [spec] = ksbind.load_config(cfg)
    assert spec.ksc is not None and spec.ksc.timeout == 5 and spec.ksc.path is None
    assert spec.runtime.from_ksc  # no runtime: -> ksc's
    cfg.write_text("name: m\nks: [m.ks]\nksc: {pth: x}\n")
    with pytest.raises(ksbind.KsbindError, match=r"m.yaml:3:7: unknown key 'pth' in 'ksc' \(did you mean 'path'\?\)"):
        ksbind.load_config(cfg)
    cfg.write_text("name: m\nks: [m.ks]\nbindings:\n  - {name: f, vjp_from: rev}\n")
    with pytest.raises(ksbind.KsbindError, match=r"'vjp_from' needs 'vjp:'"):
        ksbind.load_config(cfg)
    cfg.write_text("name: m\nks: [m.ks]\nbindings:\n  - {name: f, vjp: g, vjp_from: fwd}\n")
    with pytest.raises(ksbind.KsbindError, match=r"unknown vjp_from 'fwd'"):
        ksbind.load_config(cfg)


# ------------------------------------------------------------------ what ksc is asked for


@needs_ksc
def test_default_bindings_are_the_users_functions_not_the_prelude(tmp_path: Path) -> None:
    r = resolve(spec_for(tmp_path, CALLS), tmp_path)
    assert sorted(by_name(r)) == ["f", "h", "k", "rec"]  # not ksc's prelude's ~280 (among them `not`)
    assert r.spec.runtime.include_dirs == (RUNTIME.resolve(),) and r.spec.runtime.sources == ()
    assert r.spec.cpp[0].suffix == ".cpp" and r.spec.ks_files[0].suffix == ".kso"
    # The .kso is the source of truth, but locations point at the user's .ks.
    f = next(b.decl for b in r.bindings if b.name == "f")
    assert f.location is not None and f.location.file.endswith("model.ks") and f.location.line == 2


@needs_ksc
def test_vjps_sufrev_where_ksc_can_rev_where_it_cannot(tmp_path: Path) -> None:
    bindings = (BindingSpec("f", vjp="f_vjp"), BindingSpec("rec", vjp="rec_vjp"), BindingSpec("k", vjp="k_vjp"),
                BindingSpec("h", vjp="h_vjp", vjp_from="rev"))
    r = resolve(spec_for(tmp_path, CALLS, bindings), tmp_path)
    got = by_name(r)
    assert got["f"][1] == "[sufrev [f (Tuple Float Integer)]]"   # ksbind added gdefs for f and its callee h
    assert got["rec"][1] == "[rev [rec (Tuple Float Integer)]]"  # recursive: SUF-AD cannot
    assert got["k"][1] == "[rev [k Float]]"                      # calls a recursive function
    assert got["h"][1] == "[rev [h Float]]"                      # asked for
    extra = (r.spec.ks_files[0].parent / "ksc.json").read_text()
    assert extra.index("suffwdpass [h Float]") < extra.index("suffwdpass [f (Tuple Float Integer)]")


@needs_ksc
def test_vjp_from_sufrev_when_ksc_cannot_is_kscs_error(tmp_path: Path) -> None:
    bindings = (BindingSpec("rec", vjp="rec_vjp", vjp_from="sufrev"),)
    with pytest.raises(KscError, match=r"ksc: mkSufFuns Not in scope \[suffwdpass \[rec"):
        resolve(spec_for(tmp_path, CALLS, bindings), tmp_path)


@needs_ksc
def test_gdefs_in_the_source_are_used_as_written(tmp_path: Path) -> None:
    text = CALLS + "(gdef rev [h Float])\n"
    r = resolve(spec_for(tmp_path, text), tmp_path)
    assert by_name(r)["h"] == ("[h Float]", "[rev [h Float]]")  # default bindings: NAME_vjp from rev too
    assert "h_vjp" in {b.vjp_name for b in r.bindings}
    assert by_name(r)["f"][1] is None  # no gdef for f: defaults do not invent vjps


@needs_ksc
def test_second_resolve_does_not_run_ksc(tmp_path: Path) -> None:
    spec = spec_for(tmp_path, CALLS)
    assert resolve(spec, tmp_path).ksc_ran
    again = resolve(spec, tmp_path)
    assert not again.ksc_ran and by_name(again) == by_name(resolve(spec, tmp_path))
    (tmp_path / "model.ks").write_text(CALLS + "(def extra Float (x : Float) x)\n")
    changed = resolve(spec, tmp_path)
    assert changed.ksc_ran and "extra" in by_name(changed)
    bound_fewer = dataclasses.replace(spec, bindings=(BindingSpec("h"),))
    assert resolve(bound_fewer, tmp_path).ksc_ran  # the used list is part of the key


@needs_ksc
def test_unusable_default_names_are_cleaned_with_a_warning(tmp_path: Path) -> None:
    text = (PROGRAMS / "logsumexp.ks").read_text()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = resolve(spec_for(tmp_path, text), tmp_path)
    names = by_name(r)
    assert names["exp_Vec"][0] == "[exp$Vec (Tensor 1 Float)]"
    messages = [str(w.message) for w in seen if issubclass(w.category, ksbind.KsbindWarning)]
    assert any("binding [exp$Vec (Tensor 1 Float)] as 'exp_Vec'" in m and "model.ks:" in m for m in messages)


def test_default_bindings_rename_keywords_and_skip_unbindable(tmp_path: Path) -> None:
    text = ("(def not Bool (p : Bool) p)\n(def ok Float (x : Float) x)\n"
            "(edef lm (LM Float Float) (Float))\n(def logging Float (x : Float) x)\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        bindings = ksbind.render_module(ksbind.parse_ks(text), module_name="m").context["entry_points"]
    names = [e.name for e in bindings]
    assert names == ["not_", "ok", "logging_"]
    text_of = " | ".join(str(w.message) for w in seen)
    assert "binding [not Bool] as 'not_'" in text_of and "not binding [lm Float] by default" in text_of


@needs_ksc
def test_prelude_default_for_a_kso_given_directly(tmp_path: Path) -> None:
    """A .kso holds the prelude's functions too; with ksc's runtime named, they are not bound by default."""
    r = resolve(spec_for(tmp_path, CALLS), tmp_path)
    kso = r.spec.ks_files[0]
    direct = ModuleSpec(name="direct", config_path=tmp_path / "d.yaml", ks_files=(kso,),
                        runtime=RuntimeSpec(False, (RUNTIME,), ()))
    assert sorted(b.name for b in resolve_spec(direct).bindings) == ["f", "h", "k", "rec"]
    everything = dataclasses.replace(direct, prelude=())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(resolve_spec(everything).bindings) > 4  # prelude: [] binds what the .kso states


# ------------------------------------------------------------------ ksc's errors


@needs_ksc
def test_type_error_located_at_the_call(tmp_path: Path) -> None:
    text = "(def g Float (x : Float) x)\n\n(def f Float (x : Float)\n  (undefined_fn x))\n"
    with pytest.raises(KscError) as e:
        resolve(spec_for(tmp_path, text), tmp_path)
    assert "model.ks:4:3: ksc: Not in scope: userCall: [undefined_fn Float] (in the definition of f): " \
           "no function undefined_fn takes (Float)" in str(e.value)
    assert "\n" not in str(e.value)


@needs_ksc
def test_parse_error_at_kscs_position(tmp_path: Path) -> None:
    other = tmp_path / "good.ks"
    other.write_text("(def g Float (x : Float) x)\n")
    spec = spec_for(tmp_path, "(def f Float (x : Float)\n  (let (a) a))\n")
    spec = dataclasses.replace(spec, ks_files=(other, *spec.ks_files))
    with pytest.raises(KscError, match=r"model.ks:2:10: ksc: Failed parse: unexpected \"\)\""):
        resolve(spec, tmp_path)


@needs_ksc
def test_ksc_timeout(tmp_path: Path) -> None:
    slow = tmp_path / "bin" / "ksc"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    spec = dataclasses.replace(spec_for(tmp_path, CALLS), ksc=KscSpec(slow, RUNTIME, timeout=1))
    with pytest.raises(KscError, match=r"ksc did not finish within 1 s"):
        resolve(spec, tmp_path)


def test_missing_names_read_from_kscs_messages() -> None:
    out = ("ksc: mkSufFuns Not in scope [suffwdpass [h Float]]\n"
           "  Not in scope: userCall: [rev [g (Tuple Float (Vec Float))]]\n")
    assert [str(n) for n in missing_names(out)] == ["[suffwdpass [h Float]]",
                                                    "[rev [g (Tuple Float (Tensor 1 Float))]]"]


def test_undefined_symbol_names_the_ks_function() -> None:
    [decl] = ksbind.parse_ks("\n(edef my_log Float (Float))", "model.ks")
    msg = "cannot import 'm': /x/m.so: undefined symbol: _ZN2ks9my_log$afEPNS_9allocatorEf"
    assert missing_ks_symbol(msg) == "my_log$af"
    err = explain_missing(ksbind.KsbindError(msg), [decl])
    assert str(err) == ("model.ks:2:1: ks function [my_log Float] (an edef) has no C++ definition: a file under "
                        "'cpp:' must define ks::my_log$af(ks::allocator *, ks::Float)")


@needs_ksc
def test_cli_decls_through_ksc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ksbind.cli import main

    src = tmp_path / "ex1.ks"
    src.write_text((PROGRAMS / "ex1.ks").read_text())
    assert main(["decls", str(src), "--ksc", str(KSC)]) == 0
    out = capsys.readouterr().out
    assert "[sufrev [g Float]]\n    symbol: ks::sufrev$g$af" in out
    assert "[not Bool]" not in out  # the prelude's functions are not the file's
    # Unchanged, ksc's cached output is reused without ksc; changed, ksc must run and cannot.
    assert main(["decls", str(src), "--ksc", str(tmp_path / "nope")]) == 0
    capsys.readouterr()
    src.write_text((PROGRAMS / "ex1.ks").read_text() + "\n(def extra Float (x : Float) x)\n")
    assert main(["decls", str(src), "--ksc", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "ksc not found at" in err and "(from --ksc): pass --ksc PATH" in err  # the command line's wording


def test_structured_name_round_trip_for_kso_names() -> None:
    name = StructuredName.derived("rev", StructuredName.base("f", ksbind.parse_type("(Tuple Float Integer)")))
    assert str(name) == "[rev [f (Tuple Float Integer)]]"
