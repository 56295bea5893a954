"""Default bindings never sink a module: each case in tests/default_bindings/ has a
function that cannot be bound under its own name (a keyword, a reserved name) or at
all (LM, Lam, a clashing C++ symbol). Its first line, ``; warn: LINE FRAGMENT``,
states the one-line warning; the module still generates, with its other functions."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import ksbind
from ksbind.cli import main

CASES_DIR = Path(__file__).parent / "default_bindings"
CASES = sorted(p.name for p in CASES_DIR.glob("*.ks"))


@pytest.mark.parametrize("case", CASES)
def test_default_binding_warns_and_module_generates(case: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    first = (CASES_DIR / case).read_text().split("\n", 1)[0]
    line, fragment = first.removeprefix("; warn: ").split(" ", 1)
    (tmp_path / case).write_text((CASES_DIR / case).read_text())
    config = tmp_path / "m.yaml"
    config.write_text(f"name: m\nks: {case}\noutput: out\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        [module] = ksbind.pipeline.prepare(config)
    messages = [str(w.message) for w in seen if issubclass(w.category, ksbind.KsbindWarning)]
    assert any(fragment in m and f"{case}:{line}:1:" in m for m in messages), messages
    assert all("\n" not in m for m in messages)
    names = [e.name for e in module.rendered.context["entry_points"]]
    assert "other" in names  # the rest of the module is bound
    assert main(["generate", str(config)]) == 0
    err = capsys.readouterr().err
    assert "ksbind: warning: " in err and fragment in err


def test_explicit_bindings_stay_strict(tmp_path: Path) -> None:
    (tmp_path / "m.ks").write_text("(edef not Bool (Bool))\n")
    config = tmp_path / "m.yaml"
    config.write_text("name: m\nks: m.ks\nbindings:\n  - {name: not, function: not}\n")
    with pytest.raises(ksbind.KsbindError, match="'not' is a C\\+\\+ keyword"):
        ksbind.generate(config)


def test_catalogue_size() -> None:
    assert len(CASES) >= 8
