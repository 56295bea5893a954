"""ksc run by ksbind, end to end with the real ksc: configs with ``ksc:``, ``load_ks``,
C++ behind edefs, and the error for an edef with no C++, on every target."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import ksbind
from ksbind.errors import BuildError
from tests.e2e_support import session_cache_dir
from tests.test_ksc import KSC, RUNTIME, needs_ksc

pytestmark = [needs_ksc]

MODEL = """\
(def sq Float (x : Float) (mul x x))
(def poly Float ((x : Float) (n : Integer))
  (add (sq x) (mul (to_float n) x)))
(def vsq (Vec Float) (v : Vec Float)
  (build (size v) (lam (i : Integer) (sq (index i v)))))
(def total Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer) (mul (index i v) (exp (index i v))))))
(edef my_log Float (Float))
(def uses_log Float (x : Float) (mul 2.0 (my_log x)))
(def vadd (Vec Float) ((a : Vec Float) (b : Vec Float)) (ts_add a b))
"""
MY_LOG_CPP = """\
#include "knossos.h"
#include <cmath>
namespace ks {
ks::Float my_log$af(ks::allocator *, ks::Float x) { return std::log(x); }
}
"""


def write_config(tmp_path: Path, target: str, bindings: str, cpp: bool = True) -> Path:
    (tmp_path / "model.ks").write_text(MODEL)
    (tmp_path / "my_log.cpp").write_text(MY_LOG_CPP)
    cfg = tmp_path / f"model_{target}.yaml"
    cfg.write_text(f"name: ksc_model_{target}\ntarget: {target}\nks: [model.ks]\n"
                   f"ksc: {{path: {KSC}, runtime: {RUNTIME}}}\n" + ("cpp: [my_log.cpp]\n" if cpp else "")
                   + f"output: out_{target}\nbindings:\n{bindings}")
    return cfg


BINDINGS = """\
  - {name: poly, vjp: poly_vjp}
  - {name: vsq, vjp: vsq_vjp}
  - {name: total, vjp: total_vjp, vjp_from: rev}
  - {name: uses_log}
"""


@pytest.mark.parametrize("target", ["ks", "python"])
def test_config_with_ksc_builds_and_calls(tmp_path: Path, target: str) -> None:
    m = ksbind.build(write_config(tmp_path, target, BINDINGS), cache_dir=session_cache_dir(), quiet=True)
    assert m.poly(2.0, 3) == pytest.approx(10.0)
    assert m.poly_vjp(2.0, 3, 1.0)[0] == pytest.approx(2 * 2.0 + 3)  # (d/dx, d/dn = ())
    assert m.uses_log(math.e) == pytest.approx(2.0, rel=1e-6)  # the edef's C++ from cpp:
    x = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    arg = x if target == "ks" else x.tolist()
    np.testing.assert_allclose(np.array(m.vsq(arg)), x * x, rtol=1e-6)
    np.testing.assert_allclose(np.array(m.vsq_vjp(arg, arg)), 2 * x * x, rtol=1e-6)
    np.testing.assert_allclose(np.array(m.total_vjp(arg, 1.0)), np.exp(x) * (1 + x), rtol=1e-5)


def test_config_with_ksc_on_the_torch_target(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    m = ksbind.build(write_config(tmp_path, "torch", "  - {name: vsq, vjp: vsq_vjp}\n  - {name: vadd}\n"),
                     cache_dir=session_cache_dir(), quiet=True)
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    y = m.vsq(x)
    y.sum().backward()
    assert torch.allclose(y, x.detach() ** 2) and torch.allclose(x.grad, 2 * x.detach())
    # A KS_ASSERT inside ks code names the binding, the ks function and the condition, and
    # prints nothing (ksc's runtime writes it to stderr too) unless the module's logging is on.
    capfd.readouterr()
    with pytest.raises(RuntimeError, match=re.escape(
            "vadd (ks function [vadd (Tuple (Tensor 1 Float) (Tensor 1 Float))]) failed an assertion in ks code: "
            "knossos.h:1192:Assert failed [a.size() == b.size()]")):
        m.vadd(torch.ones(3), torch.ones(2))
    assert capfd.readouterr().err == ""
    # A bad call says what is wrong with it, never the tensors' elements.
    with pytest.raises(TypeError) as e:
        m.vadd(torch.ones(2000), torch.ones(2000), torch.ones(2000))
    assert "vadd() takes 2 positional arguments but 3 were given" in str(e.value), str(e.value)
    with pytest.raises(TypeError) as e:
        m.vadd(torch.ones(2000), torch.ones(2000, dtype=torch.float64))
    assert str(e.value).startswith("vadd(): argument ") and len(str(e.value)) < 300, str(e.value)


@pytest.mark.parametrize("target", ["python", "torch"])
def test_edef_without_cpp_names_the_ks_function(tmp_path: Path, target: str) -> None:
    if target == "torch":
        pytest.importorskip("torch")
    cfg = write_config(tmp_path, target, "  - {name: uses_log}\n", cpp=False)
    with pytest.raises(BuildError) as e:
        ksbind.build(cfg, cache_dir=session_cache_dir(), quiet=True)
    assert str(e.value) == (f"{tmp_path / 'model.ks'}:8:1: ks function [my_log Float] (an edef) has no C++ "
                            "definition: a file under 'cpp:' must define ks::my_log$af(ks::allocator *, ks::Float)")


def test_generate_check_with_ksc(tmp_path: Path) -> None:
    from ksbind.cli import main

    cfg = write_config(tmp_path, "python", BINDINGS)
    assert main(["generate", str(cfg)]) == 0
    assert main(["generate", "--check", str(cfg)]) == 0
    (tmp_path / "model.ks").write_text(MODEL.replace("(mul x x)", "(mul x (mul x x))"))
    assert main(["generate", "--check", str(cfg)]) == 0  # same signatures: same generated files
    (tmp_path / "model.ks").write_text(MODEL + "(def extra Float (x : Float) x)\n")
    cfg.write_text(cfg.read_text() + "  - {name: extra}\n")
    assert main(["generate", "--check", str(cfg)]) == 1


def test_load_ks_one_call(tmp_path: Path) -> None:
    text = "(def cube Float (x : Float) (mul x (mul x x)))\n(gdef suffwdpass [cube Float])\n" \
           "(gdef sufrevpass [cube Float])\n(gdef sufrev [cube Float])\n"
    m = ksbind.load_ks(text, ksc=KSC, ksc_runtime=RUNTIME, cache_dir=tmp_path)
    assert m.cube(2.0) == pytest.approx(8.0) and m.cube_vjp(2.0, 1.0) == pytest.approx(12.0)
    again = ksbind.load_ks(text, ksc=KSC, ksc_runtime=RUNTIME, cache_dir=tmp_path)
    assert again.cube(3.0) == pytest.approx(27.0)
    ksc_entries = [p for p in tmp_path.iterdir() if p.name.startswith("ksc-")]
    assert len(ksc_entries) == 1  # the second call reused ksc's cached output
    m2 = ksbind.load_ks("(def twice Float (x : Float) (mul 2.0 x))", bindings=[{"name": "t", "function": "twice",
                        "vjp": "t_vjp", "vjp_from": "rev"}], ksc=KSC, ksc_runtime=RUNTIME, cache_dir=tmp_path)
    assert m2.t(4.0) == pytest.approx(8.0) and m2.t_vjp(4.0, 1.0) == pytest.approx(2.0)
    with pytest.raises(ksbind.KsbindError, match=r"ksc: Not in scope: userCall: \[nope Float\]"):
        ksbind.load_ks("(def bad Float (x : Float) (nope x))", ksc=KSC, ksc_runtime=RUNTIME, cache_dir=tmp_path)
