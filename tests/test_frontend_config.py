"""A config's ``python:`` entries (ksbind/pyfunctions.py): Python functions compiled through ksc
at build time, carried by ``ksbind build``, batch builds, no-op builds and wheels like any module.

The unit tests read configs and translate (nothing is compiled and ksc does not run); the slow
ones build configs/frontend.yaml and compare its bindings with the Python functions, build
two configs at once, rebuild after the Python file is edited, and install a wheel of one tiny
function into a venv without ksbind."""
from __future__ import annotations

import importlib
import json
import math
import re
import sys
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksbind import inputs
from ksbind.config import load_config, load_config_text
from ksbind.errors import ConfigError
from ksbind.frontend.source import FrontendError
from ksbind.lang.reader import scan_ks_text
from ksbind.pyfunctions import with_python
from ksbind.spec import ModuleSpec
from tests.e2e_support import REPO, run_python, session_cache_dir
from tests.test_ksc import KSC, RUNTIME, needs_ksc
from tests.test_packaging import built_ok, install, run, wheel_in
from tests.test_packaging import fresh_python as packaged_python  # noqa: F401  (the fixture, here so named)

EXAMPLE = REPO / "configs" / "frontend.yaml"
ACTIVATIONS = REPO / "examples" / "frontend" / "activations.py"
KSC_YAML = f"ksc: {{path: {KSC}, runtime: {RUNTIME}}}"

SCALE_PY = """\
FACTOR = 2.0


def scaled(x, n):
    return FACTOR * x + float(n)


def count(n):
    return n + 1


def broken(x):
    while x > 0.0:
        x = x - 1.0
    return x
"""


def config(where: Path, body: str, py: str = SCALE_PY, name: str = "m") -> list[ModuleSpec]:
    """The module(s) of a config ``body`` (its python: entries name ``scale.py``, written beside it)."""
    (where / "scale.py").write_text(py)
    path = where / "m.yaml"
    path.write_text(f"name: {name}\ntarget: python\n{KSC_YAML}\n" + textwrap.dedent(body))
    return load_config(path)


def error_of(where: Path, body: str, **kw: Any) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        config(where, body, **kw)
    return e.value


# ------------------------------------------------------------------ reading the config


def test_the_example_config_names_its_functions() -> None:
    [spec] = load_config(EXAMPLE)
    assert spec.ksc is not None and spec.target == "torch"
    entries = {e.name or e.function.attribute: e for e in spec.python}
    assert list(entries) == ["relu3", "gelu", "sqrl", "vsqrl"]
    assert entries["relu3"].mode == "elementwise" and entries["relu3"].args is None
    assert entries["relu3"].function.file == ACTIVATIONS.relative_to(REPO) or \
        Path(str(entries["relu3"].function.file)).resolve() == ACTIVATIONS
    assert [str(t) for t in entries["vsqrl"].args or ()] == ["(Tensor 2 Float)"]
    assert entries["vsqrl"].mode == "vmap" and entries["sqrl"].mode == "plain"
    assert entries["relu3"].location is not None and entries["relu3"].location.line == 11


@pytest.mark.parametrize(("body", "message", "line"), [
    ("python:\n  - {function: nope.py:f, args: [Float]}\n", r"nope\.py: no such file", 5),
    ("python:\n  - {function: scale.py, args: [Float]}\n", r"must be path/to/file\.py:NAME or package", 5),
    ("python:\n  - {function: 'a b:f', args: [Float]}\n", r"neither a \.py file nor a Python module name", 5),
    ("python:\n  - {function: scale.py:scaled, args: [(Tensor 2 Flot)]}\n", r"not a ks type", 5),
    ("python:\n  - {function: scale.py:scaled, args: [(Tuple Float Float)]}\n", r"not a type a call passes", 5),
    ("python:\n  - {function: scale.py:scaled}\n", r"of mode plain needs 'args:'", 5),
    ("python:\n  - {function: scale.py:scaled, mode: elementwise, args: [Integer]}\n",
     r"its 'args' are \[Float\] or \[Float, Float\]", 5),
    ("python:\n  - {function: scale.py:scaled, args: [Float], vjp: 3}\n", r"'vjp' must be a name", 5),
    ("python:\n  - {function: scale.py:scaled, args: [Float], mdoe: vmap}\n", r"did you mean 'mode'", 5),
    ("python:\n  - {function: scale.py:scaled, args: [Float], mode: map}\n", r"unknown mode 'map'", 5),
])
def test_a_bad_entry_is_an_error_at_its_place_in_the_config(tmp_path: Path, body: str, message: str,
                                                           line: int) -> None:
    e = error_of(tmp_path, body)
    assert e.location is not None and e.location.file.endswith("m.yaml") and e.location.line == line, e
    assert (e.location.column or 0) > 1
    assert re.search(message, str(e)), str(e)


def test_python_needs_ksc_and_says_which_ks_functions_to_bind(tmp_path: Path) -> None:
    (tmp_path / "scale.py").write_text(SCALE_PY)
    with pytest.raises(ConfigError, match=r"'python' needs 'ksc:'") as e:
        load_config_text("name: m\npython: [{function: scale.py:count, args: [Integer]}]\n", tmp_path / "m.yaml")
    assert e.value.location is not None and e.value.location.line == 2
    (tmp_path / "f.ks").write_text("(def f Float (x : Float) x)\n")
    with pytest.raises(ConfigError, match=r"list the ks functions .* under 'bindings:'"):
        config(tmp_path, "ks: [f.ks]\npython: [{function: scale.py:count, args: [Integer]}]\n")
    [spec] = config(tmp_path, "ks: [f.ks]\nbindings: [{name: f}]\npython: [{function: scale.py:count, args: [Integer]}]\n")
    assert spec.bindings is not None and [b.name for b in spec.bindings] == ["f"]
    [spec] = config(tmp_path, "python: [{function: scale.py:count, args: [Integer]}]\n")  # python: alone declares
    assert spec.python and not spec.ks_files


# ------------------------------------------------------------------ translating (no ksc, nothing compiled)


def test_entries_become_one_ks_source_and_a_binding_each(tmp_path: Path) -> None:
    [spec] = config(tmp_path, """\
        python:
          - {function: scale.py:scaled, args: [Float, Integer]}
          - {function: scale.py:count, args: [Integer], name: next_count}
          - {function: scale.py:scaled, args: [Float, Integer], name: scaled2, vjp: false, jvp: scaled2_jvp}
        """)
    resolved = with_python(spec, tmp_path / "cache")
    source = resolved.ks_files[-1]
    assert source.is_relative_to(tmp_path / "cache") and not resolved.python
    text = source.read_text()
    assert text.count("(def scaled Float") == 1  # two entries of one function at one signature: one def
    assert "(def count Integer" in text and "2.0" in text
    assert resolved.bindings is not None
    b = {x.name: x for x in resolved.bindings}
    assert list(b) == ["scaled", "next_count", "scaled2"]
    assert b["scaled"].function == "[scaled (Tuple Float Integer)]" and b["scaled"].vjp == "scaled_vjp"
    assert b["next_count"].vjp is None  # no Float in or out: no vjp
    assert b["scaled2"].vjp is None and b["scaled"].mode == "plain"
    assert b["scaled2"].jvp == "scaled2_jvp" and b["scaled"].jvp is None  # forward mode when asked for
    # the same text again: the same file, not rewritten
    assert with_python(spec, tmp_path / "cache").ks_files[-1] == source


def test_modes_map_as_ksbind_compile_binds_them(tmp_path: Path) -> None:
    py = "def act(x):\n    return x * x\n\n\ndef total(v):\n    return sum(v[i] for i in range(len(v)))\n"
    [spec] = config(tmp_path, """\
        python:
          - {function: scale.py:act, mode: elementwise}
          - {function: scale.py:act, mode: vmap, args: [Float], name: vact}
          - {function: scale.py:total, mode: vmap, args: ["(Tensor 1 Float)"]}
        """, py=py)
    b = {x.name: x for x in with_python(spec, tmp_path / "cache").bindings or ()}
    assert (b["act"].mode, b["vact"].mode, b["total"].mode) == ("elementwise", "elementwise", "vmap")
    assert b["act"].function == b["vact"].function == "[act Float]"


def test_each_entrys_helpers_are_its_own(tmp_path: Path) -> None:
    py = ("import torch\n\n\ndef wave(x):\n    return torch.mean(torch.sin(x) * x), torch.cos(x) * 2.0\n\n\n"
          "def ramp(x):\n    return torch.sum(x * x * 3.0), torch.exp(x) * x\n")
    [spec] = config(tmp_path, """\
        python:
          - {function: scale.py:wave, args: ["(Tensor 1 Float)"]}
          - {function: scale.py:ramp, args: ["(Tensor 1 Float)"]}
        """, py=py)
    text = with_python(spec, tmp_path / "cache").ks_files[-1].read_text()
    for helper in ("ksb_ew1", "ksb_ew2", "ksb_sumzip1", "ksb_zip2"):  # the second entry's, renamed
        assert text.count(f"(def {helper} ") == 1 and f"(def {helper}_1 " in text, (helper, text)


def test_entries_share_the_select_and_the_gdefs_of_one_function(tmp_path: Path) -> None:
    py = ("def ramp(x):\n    if x < 0.0:\n        return 0.0\n    return x * x\n\n\n"
          "def step(x):\n    if x < 1.0:\n        return x\n    return 1.0\n")
    [spec] = config(tmp_path, """\
        python:
          - {function: scale.py:ramp, mode: elementwise}
          - {function: scale.py:ramp, mode: elementwise, name: ramp_again}
          - {function: scale.py:step, mode: elementwise}
        """, py=py)
    text = with_python(spec, tmp_path / "cache").ks_files[-1].read_text()
    scan_ks_text(text, "<test>")  # no def or gdef twice
    assert text.count("(def ksb_select ") == 1 and text.count("(gdef sufrev [ramp Float])") == 1, text
    assert "(def ksb_fast_ramp Float" in text and "(def ksb_fast_step Float" in text


def test_a_module_next_to_the_config_is_imported_by_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "fns_for_ksbind_test.py").write_text("def cube(x):\n    return x * x * x\n")
    [spec] = config(tmp_path, "python: [{function: pkg.fns_for_ksbind_test:cube, mode: elementwise}]\n")
    with inputs.recording() as recorder:
        resolved = with_python(spec, tmp_path / "cache")
    assert "(def cube Float" in resolved.ks_files[-1].read_text()
    assert str(tmp_path / "pkg" / "fns_for_ksbind_test.py") in recorder.files
    assert str(tmp_path) not in sys.path


def test_the_python_file_is_noted_and_read_afresh(tmp_path: Path) -> None:
    [spec] = config(tmp_path, "python: [{function: scale.py:scaled, args: [Float, Integer]}]\n")
    with inputs.recording() as recorder:
        first = with_python(spec, tmp_path / "cache").ks_files[-1]
    assert recorder.files[str(tmp_path / "scale.py")] == inputs.file_fingerprint(tmp_path / "scale.py")
    (tmp_path / "scale.py").write_text(SCALE_PY.replace("FACTOR = 2.0", "FACTOR = 3.0"))
    second = with_python(spec, tmp_path / "cache").ks_files[-1]
    assert second != first and "3.0" in second.read_text() and "2.0" in first.read_text()


@pytest.mark.parametrize(("body", "message"), [
    ("python: [{function: scale.py:scaeld, args: [Float, Integer]}]\n", r"defines no 'scaeld' \(did you mean 'scaled'"),
    ("python: [{function: scale.py:FACTOR, args: [Float]}]\n", r"'FACTOR' is a float, not a function"),
    ("python: [{function: scale.py:scaled, args: [Float]}]\n", r"takes 2 parameters; 'args' gives 1 type"),
    ("python: [{function: scale.py:count, args: [Integer], vjp: count_vjp}]\n", r"has no vjp to bind as 'count_vjp'"),
    ("python: [{function: scale.py:count, args: [Integer], jvp: count_jvp}]\n", r"has no jvp to bind as 'count_jvp'"),
    ("python: [{function: no_such_module_for_ksbind:f, args: [Float]}]\n", r"cannot import no_such_module"),
])
def test_a_function_that_cannot_be_bound_is_an_error_at_its_entry(tmp_path: Path, body: str, message: str) -> None:
    [spec] = config(tmp_path, body)
    with pytest.raises(ConfigError, match=message) as e:
        with_python(spec, tmp_path / "cache")
    assert e.value.location is not None and e.value.location.file.endswith("m.yaml") and e.value.location.line == 4


def test_a_translation_error_is_located_in_the_python_file(tmp_path: Path) -> None:
    [spec] = config(tmp_path, "python: [{function: scale.py:broken, args: [Float]}]\n")
    with pytest.raises(FrontendError, match="while") as e:
        with_python(spec, tmp_path / "cache")
    assert e.value.location is not None and e.value.location.file == str(tmp_path / "scale.py")
    assert e.value.location.line == 13


def test_a_file_that_does_not_run_is_an_error(tmp_path: Path) -> None:
    [spec] = config(tmp_path, "python: [{function: scale.py:f, args: [Float]}]\n", py="def f(x):\n    return (x\n")
    with pytest.raises(ConfigError, match="does not parse") as e:
        with_python(spec, tmp_path / "cache")
    assert e.value.location is not None and e.value.location.file.endswith("scale.py")
    [spec] = config(tmp_path, "python: [{function: scale.py:f, args: [Float]}]\n", py="raise RuntimeError('no')\n")
    with pytest.raises(ConfigError, match=r"running scale\.py failed: RuntimeError: no"):
        with_python(spec, tmp_path / "cache")


def test_two_python_functions_of_one_name_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "scale.py").write_text("def count(n):\n    return n + 2\n")
    [spec] = config(tmp_path, """\
        python:
          - {function: scale.py:count, args: [Integer]}
          - {function: other/scale.py:count, args: [Integer], name: count2}
        """)
    with pytest.raises(ConfigError, match=r"both translate to a ks def count at the same types"):
        with_python(spec, tmp_path / "cache")


# ------------------------------------------------------------------ building (ksc and the compiler)


def _grad(f: Any, x: Any) -> Any:
    x = x.detach().clone().requires_grad_(True)
    f(x).sum().backward()
    return x.grad


@pytest.fixture(scope="module")
def ksc_env() -> Iterator[None]:
    """The example's ``ksc: {}`` takes ksc from $KSC."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KSC", str(KSC))
        mp.setenv("KSC_RUNTIME", str(RUNTIME))
        yield


@pytest.fixture(scope="module")
def built_example(ksc_env: None) -> Any:
    import ksbind

    return ksbind.build(EXAMPLE, cache_dir=session_cache_dir(), quiet=True)


@needs_ksc
def test_the_example_config_builds_bindings_that_match_the_python(built_example: Any) -> None:
    import torch

    sys.path.insert(0, str(ACTIVATIONS.parent))
    try:
        a: Any = importlib.import_module("activations")
    finally:
        sys.path.remove(str(ACTIVATIONS.parent))
    m = built_example
    torch.manual_seed(0)
    x = torch.randn(3, 5) * 2
    for binding, reference in ((m.relu3, a.vrelu3_pytorch), (m.gelu, a.vgelu_pytorch)):
        torch.testing.assert_close(binding(x), reference(x), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(_grad(binding, x), _grad(reference, x), rtol=1e-4, atol=1e-5)
    assert m.relu3(torch.tensor([0.5])).item() == pytest.approx(a.relu3(0.5), rel=1e-6)
    assert m.gelu(torch.tensor([0.7])).item() == pytest.approx(a.gelu(0.7), rel=1e-6)
    for sign in (1.0, -1.0):
        s = sign * torch.rand(4, 4)
        torch.testing.assert_close(m.sqrl(s), a.sqrl_python(s), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(_grad(m.sqrl, s), _grad(a.sqrl_python, s), rtol=1e-4, atol=1e-6)
    batch = torch.randn(6, 4, 4)
    torch.testing.assert_close(m.vsqrl(batch), torch.stack([a.sqrl_python(b) for b in batch]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(_grad(m.vsqrl, batch), _grad(lambda t: torch.stack([a.sqrl_python(b) for b in t]),
                                                            batch), rtol=1e-4, atol=1e-6)
    assert hasattr(m, "sqrl_vjp") and hasattr(m, "vsqrl_vjp")


@needs_ksc
def test_a_batch_build_carries_python_entries(built_example: Any, tmp_path: Path) -> None:
    from ksbind.pipeline import build_configs

    [spec] = config(tmp_path, "python: [{function: scale.py:scaled, args: [Float, Integer]}]\n", name="scale_batch")
    built = dict(build_configs([EXAMPLE, spec.config_path], cache_dir=session_cache_dir(), quiet=True))
    assert list(built) == ["frontend_torch", "scale_batch"]
    assert built["scale_batch"].scaled(1.5, 2) == pytest.approx(5.0)
    assert built["scale_batch"].scaled_vjp(1.5, 2, 1.0)[0] == pytest.approx(2.0)
    assert built["frontend_torch"].relu3 is not None


#: Builds the config (in a fresh process), then optionally edits scale.py and builds again in that process.
NOOP_BUILD = """\
import json, sys, pathlib, ksbind
config, edit = {config!r}, {edit!r}
m = ksbind.build(config)
out = {{"reused": "ksbind.pipeline" not in sys.modules, "value": m.scaled(1.5, 2)}}
if edit is not None:
    py = pathlib.Path(config).with_name("scale.py")
    py.write_text(py.read_text().replace("FACTOR = 3.0", "FACTOR = " + edit))
    out["after_edit"] = ksbind.build(config).scaled(1.5, 2)
print(json.dumps(out))
"""


@needs_ksc
def test_editing_the_python_file_builds_again(tmp_path: Path) -> None:
    [spec] = config(tmp_path, "python: [{function: scale.py:scaled, args: [Float, Integer]}]\noutput: out\n",
                    name="noop_scale")
    env = {"KSBIND_CACHE_DIR": str(session_cache_dir()), "KSBIND_VERBOSE": "2"}

    def build(edit: str | None = None) -> tuple[dict[str, Any], str]:
        proc = run_python(NOOP_BUILD.format(config=str(spec.config_path), edit=edit), env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr

    out, _ = build()
    assert not out["reused"] and out["value"] == pytest.approx(5.0)
    out, err = build()
    assert out["reused"] and out["value"] == pytest.approx(5.0), err[-2000:]
    (tmp_path / "scale.py").write_text(SCALE_PY.replace("FACTOR = 2.0", "FACTOR = 3.0"))
    # a new process: the record names scale.py, so the edit builds again; then, in that same process, another
    # edit (back to 2.0: a cache hit) is a new module too, not the one already loaded
    out, err = build(edit="2.0")
    assert not out["reused"] and "scale.py changed" in err, err[-2000:]
    assert out["value"] == pytest.approx(6.5) and out["after_edit"] == pytest.approx(5.0)


# ------------------------------------------------------------------ a wheel: neither ksbind nor ksc at run time

ACT_PY = "def softsign(x):\n    return x / (1.0 + abs(x))\n"
WHEEL_CALLS = r"""
import json, sys, torch
import ks_act
x = torch.tensor([-3.0, -0.5, 0.0, 0.25, 2.0], requires_grad=True)
y = ks_act.softsign(x)
y.sum().backward()
out = {"values": y.detach().tolist(), "grad": x.grad.tolist(), "file": sys.modules["ks_act._act"].__file__}
try:
    import ksbind
    out["ksbind"] = ksbind.__file__
except ImportError:
    out["ksbind"] = None
print(json.dumps(out))
"""


@needs_ksc
def test_a_wheel_of_a_python_function_needs_neither_ksbind_nor_ksc(packaged_python: Path,  # noqa: F811
                                                                    tmp_path: Path) -> None:
    """tests/test_packaging.py's fresh venv: no ksbind, torch linked from this environment."""
    fresh_python = packaged_python
    src = tmp_path / "project"
    (src / "py").mkdir(parents=True)
    (src / "ks_act").mkdir()
    (src / "py" / "act.py").write_text(ACT_PY)
    (src / "ks_act" / "__init__.py").write_text("from ._act import softsign, softsign_vjp\n")
    (src / "ksbind.yaml").write_text("name: _act\ntarget: torch\nksc: {}\n"
                                     "python: [{function: py/act.py:softsign, mode: elementwise}]\n")
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["ksbind"]\nbuild-backend = "ksbind.build_meta"\n'
                                        '[project]\nname = "ks-act"\nversion = "1.0"\n[tool.ksbind]\n'
                                        'package = "ks_act"\n')
    # the sdist, then the wheel from it (python -m build): the sdist holds the Python file, the wheel does not
    built_ok(run([sys.executable, "-m", "build", "--no-isolation", "-o", "dist", "."], src,
                 env={"KSC": str(KSC), "KSC_RUNTIME": str(RUNTIME)}), "python -m build")
    (sdist,) = (src / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        assert any(n.endswith("/py/act.py") for n in tar.getnames())
    wheel = wheel_in(src / "dist")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert not any(n.endswith("/act.py") or n == "act.py" for n in names) and "ks_act/_act.py" in names, names
    install(fresh_python, "--no-index", str(wheel))
    proc = run([str(fresh_python), "-c", WHEEL_CALLS], tmp_path,
               env={"PYTHONPATH": "", "PATH": "/usr/bin:/bin", "CXX": "false", "KSC": "/nonexistent/ksc"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ksbind"] is None and str(out["file"]).startswith(str(fresh_python.parent.parent))
    xs = [-3.0, -0.5, 0.0, 0.25, 2.0]
    assert out["values"] == pytest.approx([x / (1 + abs(x)) for x in xs], rel=1e-6)
    assert out["grad"] == pytest.approx([1 / (1 + abs(x)) ** 2 for x in xs], rel=1e-5)
    assert not math.isnan(sum(out["grad"]))
