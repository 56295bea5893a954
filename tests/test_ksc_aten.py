"""ksc's prelude of PyTorch's operators (``prelude-aten.ks``, the ``aten::`` functions, with
their C++ in ``prelude-aten.h``) through ksbind: the rule that puts it before the sources,
the header ksc's .cpp then includes, the reader on the whole file, and modules built from
ks that calls aten:: functions, checked against numpy and torch."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ksbind
from ksbind.ksc.driver import (
    ATEN_HEADER,
    ATEN_PRELUDE,
    KscToolchain,
    calls_aten,
    edefs_header,
    ksc_headers,
    ksc_preludes,
)
from ksbind.lang.reader import read_text, scan_ks
from ksbind.resolve import resolve_spec
from ksbind.spec import ModuleSpec, RuntimeSpec
from tests.test_ksc import KSC, RUNTIME, needs_ksc, spec_for

needs_aten = pytest.mark.skipif(not (RUNTIME / ATEN_PRELUDE).is_file(),
                                reason=f"ksc's runtime is not in {RUNTIME} (shared/ksc absent)")

#: ks calling several of prelude-aten.ks's functions, on matrices and on vectors.
ATEN_MODEL = """\
; a matrix loss: aten::mul, aten::sin, aten::pow (an edef prelude-aten.h defines as a template),
; aten::add (with its alpha), aten::sum
(def aten_loss Float ((a : Tensor 2 Float) (b : Tensor 2 Float))
  (aten::sum (aten::add (aten::mul a b) (aten::pow (aten::sin a) 3) 1)))

; vectors: aten::cos, aten::mul, aten::div, aten::dot
(def aten_vec (Vec Float) ((v : Vec Float) (w : Vec Float))
  (aten::div (aten::mul (aten::cos v) w) (aten::dot w w)))

; scalars: aten::mul, aten::sub, aten::neg, aten::sin (Float overloads)
(def aten_scalar Float ((x : Float) (y : Float))
  (aten::sub (aten::mul x (aten::sin y)) (aten::neg x)))
"""
BINDINGS = [{"name": "loss", "function": "aten_loss", "vjp": "loss_vjp"},
            {"name": "vec", "function": "aten_vec", "vjp": "vec_vjp"},
            {"name": "scalar", "function": "aten_scalar", "vjp": "scalar_vjp"}]


def scanned(text: str) -> list[ksbind.lang.reader.KsSource]:
    return [scan_ks(text, "model.ks")]


# ------------------------------------------------------------------ the rule (no ksc)


@pytest.mark.parametrize("text,calls", [
    ("(def f Float (x : Float) (aten::sin x))", True),
    ("(def f Float (x : Float) (let (y (aten::neg x)) (mul y 2.0)))", True),
    ("(def f Float ((x : Float) (y : Float)) ([aten::mul (Tuple Float Float)] x y))", True),
    ("(edef g Float (Float))\n(gdef sufrev [aten::sin Float])", True),
    # a mention that is not a call, and aten:: functions the sources declare themselves
    ("; calls aten::sin one day\n(def f Float (x : Float) (sin x))", False),
    ("(def aten::twice Float (x : Float) (mul x 2.0))\n(def f Float (x : Float) (aten::twice x))", False),
    ("(edef aten::mine Float (Float))\n(def f Float (x : Float) (aten::mine x))", False),
])
def test_which_sources_call_aten(text: str, calls: bool) -> None:
    assert calls_aten(scanned(text)) is calls


def _runtime(root: Path, aten: bool) -> KscToolchain:
    root.mkdir()
    (root / "prelude.ks").write_text("(edef twice Float (Float))\n")
    (root / "knossos.h").write_text("")
    (root / "prelude.h").write_text("")
    if aten:
        (root / ATEN_PRELUDE).write_text("(edef aten::sin Float (Float))\n")
        (root / ATEN_HEADER).write_text("inline ks::Float aten$8$8sin$af(ks::allocator *, ks::Float const& x);\n")
    return KscToolchain(root / "ksc", root)


def test_preludes_and_headers_follow_the_rule(tmp_path: Path) -> None:
    """prelude-aten.ks goes after prelude.ks, and prelude-aten.h among the --cpp-includes, only
    when the sources call aten:: functions (and the runtime has them); a copy of prelude-aten.ks
    given as a source gets the header (its edefs' C++) without the prelude again."""
    tool = _runtime(tmp_path / "with", aten=True)
    calling = scanned("(def f Float (x : Float) (aten::sin x))")
    plain = scanned("(def f Float (x : Float) (sin x))")
    copy = [scan_ks("(edef aten::sin Float (Float))\n", ATEN_PRELUDE), *calling]
    assert ksc_preludes(tool, calling) == (tool.prelude, tool.runtime / ATEN_PRELUDE)
    assert ksc_headers(tool, calling, ksc_preludes(tool, calling)) == ("prelude.h", ATEN_HEADER)
    assert ksc_preludes(tool, plain) == (tool.prelude,)
    assert ksc_headers(tool, plain, (tool.prelude,)) == ("prelude.h",)
    assert ksc_preludes(tool, copy) == (tool.prelude,)
    assert ksc_headers(tool, copy, (tool.prelude,)) == ("prelude.h", ATEN_HEADER)
    # a runtime without prelude-aten: ksc gets what it has (and says what is not in scope)
    bare = _runtime(tmp_path / "without", aten=False)
    assert ksc_preludes(bare, calling) == (bare.prelude,)
    assert ksc_headers(bare, calling, (bare.prelude,)) == ("prelude.h",)


@needs_aten
def test_edefs_header_leaves_prelude_aten_h_definitions_out() -> None:
    """prelude-aten.h defines aten::pow of a matrix as a template with const& parameters: a by-value
    declaration in ksbind-edefs.h would be picked by ksc's call, and nothing would define it."""
    copy = [scan_ks(read_text(RUNTIME / ATEN_PRELUDE), ATEN_PRELUDE)]
    pow_symbol = "aten$8$8pow$aT2fi("
    assert pow_symbol in edefs_header(copy, RUNTIME)
    header = edefs_header(copy, RUNTIME, ("prelude.h", ATEN_HEADER))
    assert pow_symbol not in header and "aten$8$8matmul$aT2fT1f(" not in header


@needs_aten
def test_the_whole_prelude_aten_is_read() -> None:
    """ksbind's reader takes every form of ksc's prelude-aten.ks, and the C++ names it gives
    its functions are those prelude-aten.h defines."""
    source = scan_ks(read_text(RUNTIME / ATEN_PRELUDE), str(RUNTIME / ATEN_PRELUDE))
    names = {str(d.name) for d in source.decls}
    assert "[aten::mul (Tuple (Tensor 2 Float) (Tensor 2 Float))]" in names
    assert "[shape [rev [aten::cat (Tuple (Tensor 1 (Tensor 2 Float)) Integer)]]]" in names
    assert len(source.decls) > 90 and len(source.gdefs) > 200
    symbols = {d.cpp_symbol for d in source.decls}
    defined = set(re.findall(r"^((?:[a-z]+\$)?aten\$8\$8[\w$]+)\(", read_text(RUNTIME / ATEN_HEADER), re.M))
    assert {"aten$8$8pow$aT2fi", "aten$8$8matmul$aT2fT1f", "rev$aten$8$8matmul$aT2fT1f"} <= defined
    assert defined <= symbols
    # every gdef names a function the file declares
    assert all(g.target in {d.name for d in source.decls} for g in source.gdefs)


def test_default_bindings_of_a_kso_leave_prelude_aten_out(tmp_path: Path) -> None:
    """A .kso given directly restates the preludes' functions: by default the runtime folders'
    prelude.ks and prelude-aten.ks are the prelude, not bound."""
    tool = _runtime(tmp_path / "runtime", aten=True)
    kso = tmp_path / "model.kso"
    kso.write_text("(edef twice Float (Float))\n(edef aten::sin Float (Float))\n(edef mine Float (Float))\n")
    spec = ModuleSpec(name="m", config_path=tmp_path / "m.yaml", target="python", ks_files=(kso,),
                      runtime=RuntimeSpec(bundled=False, include_dirs=(tool.runtime,)), output=tmp_path / "out")
    assert [b.name for b in resolve_spec(spec, tmp_path / "cache").bindings] == ["mine"]


# ------------------------------------------------------------------ with ksc


@needs_ksc
def test_ksc_reads_prelude_aten_and_its_cpp_includes_the_header(tmp_path: Path) -> None:
    """ksc runs with prelude-aten.ks before the sources; its .cpp includes prelude-aten.h and
    calls the aten functions by the C++ names ksbind's reader gives them; default bindings
    are the user's functions only."""
    resolved = resolve_spec(spec_for(tmp_path, ATEN_MODEL), tmp_path / "cache")
    assert sorted(b.name for b in resolved.bindings) == ["aten_loss", "aten_scalar", "aten_vec"]
    cpp = resolved.spec.cpp[0].read_text()
    assert f'#include "{ATEN_HEADER}"' in cpp
    aten = {d.cpp_symbol for d in resolved.decls if d.name.base_name.name.startswith("aten::")}
    assert {"aten$8$8mul$aT2fT2f", "aten$8$8pow$aT2fi", "aten$8$8sum$aT2f"} <= aten
    called = set(re.findall(r"(?<![\w$])((?:[a-z]+\$)?aten\$8\$8[\w$]+)\(", cpp))
    assert "aten$8$8pow$aT2fi" in called and called <= aten | {d.cpp_symbol for d in scan_ks(
        read_text(RUNTIME / ATEN_PRELUDE)).decls}
    assert "aten$8$8" not in (resolved.spec.cpp[0].parent / "ksbind-edefs.h").read_text()
    # the module's own, unchanged, is read from the cache: ksc does not run again
    again = resolve_spec(spec_for(tmp_path, ATEN_MODEL), tmp_path / "cache")
    assert not again.ksc_ran


def _np_loss(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    s = np.sin(a)
    return float((a * b + s ** 3).sum()), b + 3 * s ** 2 * np.cos(a), a


def _np_vec(v: np.ndarray, w: np.ndarray, dr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ww = float(w @ w)
    out = np.cos(v) * w / ww
    dv = -np.sin(v) * w * dr / ww
    dw = np.cos(v) * dr / ww - 2 * w * float((np.cos(v) * w * dr).sum()) / ww ** 2
    return out, dv, dw


@needs_ksc
def test_aten_functions_on_the_python_target(tmp_path: Path) -> None:
    m = ksbind.load_ks(ATEN_MODEL, bindings=BINDINGS, target="python", ksc=KSC, ksc_runtime=RUNTIME,
                       cache_dir=tmp_path, quiet=True)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (3, 2)).astype(np.float32), rng.uniform(-1, 1, (3, 2)).astype(np.float32)
    value, da, db = _np_loss(a.astype(np.float64), b.astype(np.float64))
    assert m.loss(a.tolist(), b.tolist()) == pytest.approx(value, rel=1e-5)
    got_a, got_b = m.loss_vjp(a.tolist(), b.tolist(), 1.0)
    np.testing.assert_allclose(np.array(got_a), da, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(got_b), db, rtol=1e-5, atol=1e-6)
    v, w, dr = (rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(3))
    out, dv, dw = _np_vec(v.astype(np.float64), w.astype(np.float64), dr.astype(np.float64))
    np.testing.assert_allclose(np.array(m.vec(v.tolist(), w.tolist())), out, rtol=1e-5)
    got_v, got_w = m.vec_vjp(v.tolist(), w.tolist(), dr.tolist())
    np.testing.assert_allclose(np.array(got_v), dv, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.array(got_w), dw, rtol=1e-4, atol=1e-6)
    assert m.scalar(2.0, 0.5) == pytest.approx(2.0 * np.sin(0.5) + 2.0, rel=1e-6)
    dx, dy = m.scalar_vjp(2.0, 0.5, 1.0)
    assert (dx, dy) == (pytest.approx(np.sin(0.5) + 1.0, rel=1e-6), pytest.approx(2.0 * np.cos(0.5), rel=1e-6))


@needs_ksc
def test_aten_functions_on_the_torch_target(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    m = ksbind.load_ks(ATEN_MODEL, bindings=BINDINGS, target="torch", ksc=KSC, ksc_runtime=RUNTIME,
                       cache_dir=tmp_path, quiet=True)
    torch.manual_seed(0)
    a, b = torch.rand(3, 2) * 2 - 1, torch.rand(3, 2) * 2 - 1
    v, w = torch.rand(4) + 0.5, torch.rand(4) + 0.5

    def reference(a: Any, b: Any, v: Any, w: Any) -> Any:
        loss = (a * b + torch.sin(a) ** 3).sum()
        vec = torch.cos(v) * w / (w @ w)
        return loss + (vec * torch.arange(1.0, 5.0)).sum()

    def ours(a: Any, b: Any, v: Any, w: Any) -> Any:
        return m.loss(a, b) + (m.vec(v, w) * torch.arange(1.0, 5.0)).sum()

    inputs = [t.clone().requires_grad_() for t in (a, b, v, w)]
    expected_inputs = [t.clone().requires_grad_() for t in (a, b, v, w)]
    got, expected = ours(*inputs), reference(*expected_inputs)
    torch.testing.assert_close(got, expected)
    got.backward()
    expected.backward()
    for g, e in zip(inputs, expected_inputs):
        torch.testing.assert_close(g.grad, e.grad, rtol=1e-4, atol=1e-5)
    x, y = torch.tensor(2.0, requires_grad=True), torch.tensor(0.5, requires_grad=True)
    m.scalar(x, y).backward()
    torch.testing.assert_close((x.grad, y.grad), (torch.sin(torch.tensor(0.5)) + 1, 2 * torch.cos(torch.tensor(0.5))))


@needs_ksc
def test_prelude_aten_listed_among_the_sources(tmp_path: Path) -> None:
    """ksc's prelude-aten.ks named in ks: itself: its aten:: names are the sources' own, so it is
    not given twice, and its .cpp still includes prelude-aten.h: aten::pow of a matrix (a
    template there) is defined, not 'an edef with no C++ definition'."""
    (tmp_path / "model.ks").write_text(ATEN_MODEL)
    config = tmp_path / "model.yaml"
    config.write_text(f"name: aten_listed\ntarget: python\nks: [{RUNTIME / ATEN_PRELUDE}, model.ks]\n"
                      f"ksc: {{path: {KSC}, runtime: {RUNTIME}}}\n"
                      "bindings:\n  - {name: loss, function: aten_loss, vjp: loss_vjp}\n")
    m = ksbind.build(config, cache_dir=tmp_path / "cache", quiet=True)
    a, b = np.array([[0.5, -1.0]]), np.array([[2.0, 0.25]])
    value, da, _ = _np_loss(a, b)
    assert m.loss(a.tolist(), b.tolist()) == pytest.approx(value, rel=1e-5)
    np.testing.assert_allclose(np.array(m.loss_vjp(a.tolist(), b.tolist(), 1.0)[0]), da, rtol=1e-5)
