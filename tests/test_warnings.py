"""What a user's own code sees of ksbind's warnings and errors: a warning is
attributed to the user's line that called ksbind (its message keeps the
config's or ks source's file:line), and a KsbindError's traceback ends at the
user's call (docs/errors.md)."""
from __future__ import annotations

import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import pytest

import ksbind
from ksbind.errors import KsbindError

CONFIG = """\
name: warned
target: python
declarations: |
  (edef f Float (Float))
  (edef [g (Lam Float Float)] Float ((Lam Float Float)))
"""


def test_a_warning_points_at_the_users_call_and_names_the_config_line(tmp_path: Path) -> None:
    (tmp_path / "warn.yaml").write_text(CONFIG)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ksbind.generate(tmp_path / "warn.yaml", out_dir=tmp_path / "out"); line = sys._getframe().f_lineno  # noqa: E702
    [w] = [w for w in seen if issubclass(w.category, ksbind.KsbindWarning)]
    assert w.filename == __file__ and w.lineno == line
    assert str(w.message).startswith(f"{tmp_path / 'warn.yaml'}:5:3: not binding [g (Lam Float Float)] by default")


def test_the_warning_line_python_prints_is_the_users(tmp_path: Path) -> None:
    (tmp_path / "warn.yaml").write_text(CONFIG)
    (tmp_path / "user.py").write_text("import ksbind\n\nksbind.generate('warn.yaml', out_dir='out')\n")
    r = subprocess.run([sys.executable, "user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(f"{tmp_path / 'user.py'}:3: KsbindWarning: warn.yaml:5:3: not binding"), r.stderr


def test_an_error_traceback_ends_at_the_users_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSBIND_VERBOSE", raising=False)
    (tmp_path / "bad.yaml").write_text("nmae: m\n")
    with pytest.raises(KsbindError) as info:
        ksbind.build(tmp_path / "bad.yaml")
    frames = traceback.extract_tb(info.value.__traceback__)
    # this call, then the face's wrapper (ksbind/__init__.py)
    assert [(Path(f.filename).parent.name, Path(f.filename).name) for f in frames] == [
        ("tests", "test_warnings.py"), ("ksbind", "__init__.py")]
    assert str(info.value) == f"{tmp_path / 'bad.yaml'}:1:1: unknown key 'nmae' (did you mean 'name'?); " \
        + str(info.value).split("; ", 1)[1]
    monkeypatch.setenv("KSBIND_VERBOSE", "2")  # for a bug report: every frame
    with pytest.raises(KsbindError) as info:
        ksbind.load_config(tmp_path / "bad.yaml")
    assert any(Path(f.filename).name == "config.py" for f in traceback.extract_tb(info.value.__traceback__))


def test_the_public_functions_keep_their_signatures() -> None:
    import inspect

    from ksbind.pipeline import full_build as build

    assert inspect.signature(ksbind.build) == inspect.signature(build)
    assert ksbind.load_ks.__doc__ and ksbind.load_ks.__name__ == "load_ks"
    assert str(ksbind.parse_type("(Vec Float)")) == "(Tensor 1 Float)"
