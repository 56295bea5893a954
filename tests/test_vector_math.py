"""Vector math in the torch target's kernels (ksbind/include/ksbind/vector_math.h): ks code's
float calls of erf, sin, exp... call the float functions, which g++ vectorises through glibc's
libmvec (``_ZGVeN16v_erff``...) in every CPU capability's copy of the loops; KSBIND_VECTOR_MATH=0
keeps ksc's scalar double calls. The results stay within libmvec's 4 ulp of torch's own."""
from __future__ import annotations

import platform
import re
import subprocess
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, cast

import pytest
import torch

import ksbind
from ksbind.backend.toolchain import INCLUDE_DIR
from ksbind.codegen.render import RenderedModule
from ksbind.spec import ModuleSpec
from ksbind.targets.torch import build as torch_build
from tests.test_ksc import KSC, RUNTIME, needs_ksc

#: One elementwise binding per function, each calling one of the functions libmvec vectorises.
KS = """\
(def v_erf Float (x : Float) (erf x))
(def v_sin Float (x : Float) (sin x))
(def v_cos Float (x : Float) (cos x))
(def v_exp Float (x : Float) (exp x))
(def v_log Float (x : Float) (log x))
(def v_tanh Float (x : Float) (tanh x))
"""
FUNCTIONS = {"v_erf": torch.erf, "v_sin": torch.sin, "v_cos": torch.cos, "v_exp": torch.exp, "v_log": torch.log,
             "v_tanh": torch.tanh}
#: libmvec's float variants the loops call (SSE, AVX2 and AVX-512 copies: b, d and e).
VECTOR_SYMBOL = re.compile(r"_ZGV[bcde]N\d+v_(erf|sin|cos|exp|log|tanh)f\b")


def has_libmvec() -> bool:
    """glibc on x86-64 with libmvec's erf (glibc 2.35 and later) and g++ as the compiler."""
    if platform.machine() != "x86_64" or platform.libc_ver()[0] != "glibc":
        return False
    version = tuple(int(p) for p in platform.libc_ver()[1].split(".")[:2])
    return version >= (2, 35) and any(Path(d, "libmvec.so.1").is_file()
                                      for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                                "/usr/lib64"))


def _plan_key(monkeypatch: pytest.MonkeyPatch, value: str | None) -> tuple[torch_build.StablePlan, str]:
    if value is None:
        monkeypatch.delenv("KSBIND_VECTOR_MATH", raising=False)
    else:
        monkeypatch.setenv("KSBIND_VECTOR_MATH", value)
    spec = cast(ModuleSpec, SimpleNamespace(name="m", target="torch", fast_math=False, debug=False, cpp=[],
                                            runtime=SimpleNamespace(bundled=True, sources=())))
    rendered = cast(RenderedModule, SimpleNamespace(files={}))
    plan = torch_build.stable_plan(spec)
    return plan, torch_build.cache_key(spec, rendered, plan)


def test_the_switch_is_a_flag_of_the_plan_and_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    plan_on, key_on = _plan_key(monkeypatch, None)
    assert "-DKSBIND_VECTOR_MATH=0" not in plan_on.cflags
    assert _plan_key(monkeypatch, "1") == (plan_on, key_on)
    for off in ("0", "off", "false", " no "):
        plan_off, key_off = _plan_key(monkeypatch, off)
        assert "-DKSBIND_VECTOR_MATH=0" in plan_off.cflags and key_off != key_on, off


def test_the_unit_includes_the_vector_math_header_before_the_ks_code(tmp_path: Path) -> None:
    ks = tmp_path / "f.cpp"
    spec = cast(ModuleSpec, SimpleNamespace(cpp=[ks]))
    lines = torch_build.unit_text(spec, tmp_path / "entries.cpp").splitlines()
    includes = [line for line in lines if line.startswith("#include")]
    assert includes == ["#include <ksbind/vector_math.h>", "#include <ksbind/float_sums.h>",
                        "#include <ksbind/float_builds.h>",
                        f'#include "{ks.resolve()}"', f'#include "{(tmp_path / "entries.cpp").resolve()}"']
    # the sums and loops go with the rest of the kernels' maths (KSBIND_VECTOR_MATH=0 leaves them out)
    assert lines[lines.index("#include <ksbind/float_sums.h>") - 1] == "#if KSBIND_VECTOR_MATH"
    assert lines[lines.index("#include <ksbind/float_builds.h>") + 1] == "#endif"
    for header in ("vector_math.h", "float_sums.h", "float_builds.h"):
        assert (INCLUDE_DIR / "ksbind" / header).is_file()


def _inputs() -> torch.Tensor:
    g = torch.Generator().manual_seed(35)
    edges = torch.tensor([0.0, -0.0, 1e-40, -1e-40, 1e-45, 1.17e-38, 0.5, -0.5, 1.0, 3.0, -3.0, 9.0, -9.0, 20.0,
                          -20.0, 88.0, -88.0, 89.0, -104.0, 1e4, -1e4, 1e30, -1e30, 3.4e38, -3.4e38,
                          float("inf"), float("-inf"), float("nan")])
    spread = torch.exp(torch.empty(3000).uniform_(-90, 90, generator=g)) * torch.randn(3000, generator=g).sign()
    return torch.cat([edges, torch.randn(5000, generator=g) * 4, spread])


def _library(m: ModuleType) -> Path:
    found = sorted(Path(cast(str, m.__file__)).parent.glob("*_torchops.so"))
    assert len(found) == 1, found
    return found[0]


def _undefined_symbols(lib: Path) -> str:
    return subprocess.run(["nm", "-D", "--undefined-only", str(lib)], check=True, capture_output=True,
                          text=True).stdout


def _build(tmp_path: Path) -> Any:
    bindings: list[Any] = [{"name": name, "mode": "elementwise"} for name in FUNCTIONS]
    return ksbind.load_ks(KS, bindings, target="torch", ksc=KSC, ksc_runtime=RUNTIME, cache_dir=tmp_path,
                          quiet=True)


@needs_ksc
def test_elementwise_kernels_call_libmvec_and_match_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSBIND_VECTOR_MATH", raising=False)
    m = _build(tmp_path)
    symbols = _undefined_symbols(_library(m))
    if has_libmvec():
        called = {(g.group(0)[4], g.group(1)) for g in VECTOR_SYMBOL.finditer(symbols)}
        caps = {"default": "b", "avx2": "d", "avx512": "e"}
        for cap in m.cpu_capabilities():
            for fn in ("erf", "sin", "cos", "exp", "log", "tanh"):
                assert (caps[cap], fn) in called, (cap, fn, symbols)
    x = _inputs()
    before = m.cpu_capability()
    try:
        for cap in m.cpu_capabilities():
            assert m._set_cpu_capability(cap) == cap
            for name, reference in FUNCTIONS.items():
                def message(text: str, n: str = name, c: str = cap) -> str:
                    return f"{c}, {n}: {text}"
                # 1e-6 relative (libmvec's 4 ulp and torch's own rounding); results below the
                # smallest normal float within a few of its ulps.
                torch.testing.assert_close(getattr(m, name)(x), reference(x), rtol=1e-6, atol=1e-44, equal_nan=True,
                                           msg=message)
    finally:
        m._set_cpu_capability(before)


@needs_ksc
def test_vector_math_off_keeps_the_scalar_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSBIND_VECTOR_MATH", "0")
    m = _build(tmp_path)
    symbols = _undefined_symbols(_library(m))
    assert not re.search(r"_ZGV\w+_(erf|tanh|cos|log)", symbols), symbols
    # ksc's scalar call (g++ narrows the double erf of a float to erff at -O3 -fno-math-errno)
    assert re.search(r"\berff?@", symbols), symbols
    x = _inputs()
    for name, reference in FUNCTIONS.items():
        torch.testing.assert_close(getattr(m, name)(x), reference(x), rtol=1e-6, atol=1e-44, equal_nan=True)


#: sin(x) * x: its vjp computes sin(x) and cos(x) of one argument, which g++ would merge into
#: one scalar sincosf call (no vector variant) had the calls the builtin names.
SIN_X = "(def sin_x Float (x : Float) (mul (sin x) x))\n"


@needs_ksc
def test_a_vjp_with_sin_and_cos_of_one_argument_vectorises(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSBIND_VECTOR_MATH", raising=False)
    m = ksbind.load_ks(SIN_X, [{"name": "sin_x", "mode": "elementwise", "vjp": "sin_x_vjp"}], target="torch", ksc=KSC,
                       ksc_runtime=RUNTIME, cache_dir=tmp_path, quiet=True)
    symbols = _undefined_symbols(_library(m))
    if has_libmvec():
        assert "sincosf" not in symbols, symbols
        for fn in ("sin", "cos"):
            assert re.search(rf"_ZGV[bcde]N\d+v_{fn}f\b", symbols), (fn, symbols)
    x = (torch.randn(5000, generator=torch.Generator().manual_seed(3)) * 4).requires_grad_(True)
    (grad,) = torch.autograd.grad(m.sin_x(x).sum(), [x])
    torch.testing.assert_close(grad, torch.cos(x.detach()) * x.detach() + torch.sin(x.detach()), rtol=1e-5,
                               atol=1e-6)


#: gelu as Knossos wrote it: its value and its derivative both need erf(x / sqrt 2).
GELU = "(def gelu Float (x : Float) (mul (mul 0.5 x) (add 1.0 (erf (div x (sqrt 2.0))))))\n"


def _vector_calls(lib: Path, kernel: str) -> tuple[int, int]:
    """Calls of libmvec's AVX-512 erf and exp in the AVX-512 copy of ``kernel``'s loops (one per
    input-stride pattern the loop is compiled for)."""
    asm = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", str(lib)], check=True, capture_output=True,
                         text=True).stdout
    functions = re.split(r"\n(?=[0-9a-f]+ <)", asm)
    body = [f for f in functions
            if "<void ksbind::cpu::run_avx512<" in (head := f.split("\n", 1)[0])
            and f"ksbind_stable_entries::{kernel}(" in head]
    assert len(body) == 1, (kernel, [f.split("\n", 1)[0][:200] for f in body])
    return body[0].count("<_ZGVeN16v_erff@plt>"), body[0].count("<_ZGVeN16v_expf@plt>")


@needs_ksc
def test_the_partials_loop_computes_what_value_and_derivative_share_once(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An elementwise binding's value and partials are one loop, and g++ computes their common
    part once: gelu's partials loop calls erf as often as its forward's loop, and exp as often
    as erf (the vjp's loop alone has both). Values and gradient as torch's gelu."""
    monkeypatch.delenv("KSBIND_VECTOR_MATH", raising=False)
    m = ksbind.load_ks(GELU, [{"name": "gelu", "mode": "elementwise", "vjp": "gelu_vjp"}], target="torch", ksc=KSC,
                       ksc_runtime=RUNTIME, cache_dir=tmp_path, quiet=True)
    if has_libmvec() and "avx512" in m.cpu_capabilities():
        forward, _ = _vector_calls(_library(m), "gelu_kernel")
        erf, exp = _vector_calls(_library(m), "_partials_gelu_kernel")
        assert forward > 0 and (erf, exp) == (forward, forward)
    x = (torch.randn(5000, generator=torch.Generator().manual_seed(5)) * 3).requires_grad_(True)
    y = m.gelu(x)
    assert type(y.grad_fn)._forward_cls.__name__ == "gelu_Partials"
    (grad,) = torch.autograd.grad(y.sum(), [x])
    xr = x.detach().clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(torch.nn.functional.gelu(xr).sum(), [xr])
    torch.testing.assert_close(y, torch.nn.functional.gelu(x.detach()), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-6)


SUMS = """\
(def total Float (x : (Tensor 1 Float)) (sum x))
(def total2 Float (x : (Tensor 2 Float)) (sum x))
"""


def _sequential(x: torch.Tensor) -> float:
    """ksc's order: one float32 add after another."""
    total = x[0].clone()
    for v in x[1:]:
        total = total + v
    return float(total)


@needs_ksc
def test_sums_of_float_tensors_are_exact_in_ksc_order_when_small_and_close_when_large(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSBIND_VECTOR_MATH", raising=False)
    m = ksbind.load_ks(SUMS, ["total", "total2"], target="torch", ksc=KSC, ksc_runtime=RUNTIME,
                       cache_dir=tmp_path, quiet=True)
    g = torch.Generator().manual_seed(8)
    for n in range(1, 16):  # fewer than sixteen: ksc's order, ksc's result to the bit
        x = torch.randn(n, generator=g) * 1e3
        assert float(m.total(x)) == _sequential(x), n
    for n in (16, 17, 31, 32, 33, 255, 256, 1000, 4099, 100_000):
        x = torch.randn(n, generator=g) + 0.5
        exact = float(x.double().sum())
        # the pairwise partial sums: within a few float ulps of the exact sum, scaled by its terms
        assert abs(float(m.total(x)) - exact) <= 1e-6 * float(x.abs().double().sum()), n
        assert float(m.total2(x.reshape(1, n))) == float(m.total(x)), n
    with pytest.raises(Exception, match="ne > 0"):  # ksc's own check, kept: a sum of no elements
        m.total(torch.empty(0))


BUILDS = """\
(def sumb Float (x : (Tensor 1 Float)) (sumbuild (size x) (lam (i : Integer) (mul (index i x) 2.0))))
(def sumb2 Float (x : (Tensor 2 Float))
  (sumbuild (size x) (lam (ij : (Tuple Integer Integer)) (mul (index ij x) 2.0))))
(def twice2 (Tensor 2 Float) (x : (Tensor 2 Float))
  (build (size x) (lam (ij : (Tuple Integer Integer)) (mul (index ij x) 2.0))))
(def ramp (Tensor 1 Float) (a : Float) (build 1000 (lam (k : Integer) (add a (to_float k)))))
(def sumb_alloc Float (x : (Tensor 2 Float))
  (sumbuild (size x) (lam (ij : (Tuple Integer Integer)) (sum (ramp (index ij x))))))
"""


@needs_ksc
def test_sumbuilds_of_floats_are_exact_in_ksc_order_when_small_and_builds_row_by_row_exact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ksbind/float_builds.h: sumbuild returning a Float keeps sixteen running sums per row
    position (ksc's order below sixteen terms a row), a 2-D build writes the same elements,
    and every term's allocations are freed before the next."""
    monkeypatch.delenv("KSBIND_VECTOR_MATH", raising=False)
    m = ksbind.load_ks(BUILDS, ["sumb", "sumb2", "twice2", "sumb_alloc"], target="torch", ksc=KSC,
                       ksc_runtime=RUNTIME, cache_dir=tmp_path, quiet=True)
    g = torch.Generator().manual_seed(9)
    for n in range(1, 16):
        x = torch.randn(n, generator=g) * 1e3
        assert float(m.sumb(x)) == _sequential(x * 2), n
        assert float(m.sumb2(x.reshape(1, n))) == _sequential(x * 2), n
    for rows, cols in ((3, 5), (7, 15), (40, 1)):  # rows shorter than sixteen: ksc's order, row after row
        x = torch.randn(rows, cols, generator=g) * 1e3
        assert float(m.sumb2(x)) == _sequential(x.reshape(-1) * 2), (rows, cols)
    for shape in ((16,), (17,), (100_000,), (1, 16), (3, 20), (1000, 16), (50, 333)):
        x = torch.randn(*shape, generator=g) + 0.5
        exact = 2 * float(x.double().sum())
        got = float(m.sumb(x) if len(shape) == 1 else m.sumb2(x))
        assert abs(got - exact) <= 2e-6 * float(x.abs().double().sum()), shape
    x = torch.randn(1, 4099, generator=g)
    assert float(m.sumb2(x)) == float(m.sumb(x.reshape(-1)))  # one row: the 1-D sum's order
    for shape in ((3, 20), (1, 1), (33, 7), (64, 64)):
        x = torch.randn(*shape, generator=g)
        assert torch.equal(m.twice2(x), x * 2), shape  # the same elements in the same places
    # 40,000 terms each allocating 4 kB (160 MB, past the 100 MB arena): each term's are freed before the next
    x = torch.randn(200, 200, generator=g)
    expected = float((x.double() * 1000 + sum(range(1000))).sum())
    assert abs(float(m.sumb_alloc(x)) - expected) <= 1e-5 * abs(expected) + 1.0
    with pytest.raises(Exception, match="> 0"):  # ksc's check, kept: a sumbuild of no terms
        m.sumb(torch.empty(0))


#: Two Float sumbuilds (1-D and 2-D) of an opaque, side-effect-free term, their values dropped or
#: returned, in a function with every call inlined, as the torch build's per-CPU kernels are.
DROPPED_SUMS = """\
#include "knossos.h"
#include <ksbind/float_builds.h>

[[gnu::const]] float term_of(float);

[[gnu::flatten]] float sums(ks::allocator* alloc, ks::tensor<1, ks::Float> v, ks::tensor<2, ks::Float> m) {
    ks::Float one = ks::sumbuild<ks::Float>(alloc, ks::size(v), [=](ks::allocator*, ks::Integer i) {
        return term_of(v[i]);
    });
    ks::Float two = ks::sumbuild<ks::Float>(alloc, ks::size(m), [=](ks::allocator*, ks::Integer i, ks::Integer j) {
        return term_of(m.index(ks::make_Tuple(i, j)));
    });
    return RESULT;
}
"""


@needs_ksc
@pytest.mark.parametrize("result, computed", [("one + two", True), ("1.0f", False)])
def test_a_float_sumbuild_whose_value_is_unused_compiles_to_nothing(tmp_path: Path, result: str,
                                                                    computed: bool) -> None:
    """A vjp's forward pass computes each value ksc's suffwdpass returns and [sufrev f] drops the
    ones its reverse pass never reads (the front end's sum before a mean): g++ must be able to
    drop the whole loop. It could not while the running sums were passed to a helper by pointer."""
    source = tmp_path / "sums.cpp"
    source.write_text(DROPPED_SUMS.replace("RESULT", result))
    include = INCLUDE_DIR
    done = subprocess.run(["g++", *torch_build.CFLAGS, f"-I{RUNTIME}", f"-I{include}", "-S", str(source), "-o", "-"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert ("term_of" in done.stdout) is computed
