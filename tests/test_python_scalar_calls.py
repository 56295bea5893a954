"""The python target's scalar calls (its fast path for scalars): every entry point converts its
arguments inside this thread's arena guard (ksbind::CallArena: no mutex at all), reads exact
float/int/bool arguments inline and returns Float/Integer/Bool as C++ values, made into Python
objects by the method. They must behave exactly as the general path does: same values, same
errors, arena reset, logging, threads.

Uses the session-built examples modules (no build of its own)."""
from __future__ import annotations

import enum
import math
import re
import threading
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import ksbind
from ksbind.spec import BindingSpec

# ------------------------------------------------------------ generated code (no build)

DECLS = ksbind.parse_ks("""
(edef [f (Tuple Float Integer)] Float (Float Integer))
(edef [s (Tuple String (Tuple Bool Float))] String (String (Tuple Bool Float)))
(edef [b Float] Bool (Float))
(edef [t (Tensor 1 Float)] Float ((Tensor 1 Float)))
(edef [p Float] (Tuple Float Float) (Float))
""")


def _functions(cpp: str) -> dict[str, str]:
    """Entry point name -> its C++ function text."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^\S[^\n]* (\w+)\(.*?^}$", cpp, re.M | re.S)}


def test_every_python_call_takes_this_threads_arena_then_converts() -> None:
    specs = [BindingSpec(n) for n in ("f", "s", "b", "t", "p")]
    files = ksbind.render_module(DECLS, "m", "python", bindings=specs).files
    fns = _functions(files["entry_points.cpp"])
    for body in fns.values():
        assert "ksbind::CallArena arena;" in body, body
        assert "ks::allocator& g_alloc = arena.allocator();" in body, body
        # every argument converted inside the guard, on this thread's arena
        assert body.index("CallArena") < body.index("ksbind::python::from_py<"), body
        assert "mutex" not in body and "ArenaLock" not in body
    # Float/Integer/Bool results are returned as C++ values; strings and tuples through to_py
    assert fns["f"].startswith("ks::Float f(") and fns["b"].startswith("ks::Bool b(")
    assert fns["s"].startswith("ksbind::python::Object s(") and "return ksbind::python::to_py(ret);" in fns["s"]
    assert fns["p"].startswith("ksbind::python::Object p(")
    stub = files["m.pyi"]  # the stub is unchanged by the C++ result type
    assert "def f(arg0: float, arg1: int) -> float:" in stub and "def b(arg0: float) -> bool:" in stub


def test_the_gil_policy_is_rendered_per_binding() -> None:
    specs = [BindingSpec("f"), BindingSpec("t"), BindingSpec("s", release_gil="always"),
             BindingSpec("b", release_gil="never"), BindingSpec("p", long_call=True)]
    fns = _functions(ksbind.render_module(DECLS, "m", "python", bindings=specs).files["entry_points.cpp"])
    assert "const bool release_gil = ksbind::large_call(arg0_ks, arg1_ks);" in fns["f"]
    assert "const bool release_gil = ksbind::large_call(arg0_ks);" in fns["t"]
    assert "const bool release_gil = true;" in fns["s"] and "const bool release_gil = true;" in fns["p"]
    assert "const bool release_gil = false;" in fns["b"]
    # Torch ops are called through torch's dispatcher, which releases the GIL for each: `never` says so.
    with pytest.warns(ksbind.KsbindWarning, match=r"binding 'f': release_gil: never has no effect on the torch target"):
        ksbind.render_module(DECLS, "m", "torch", bindings=[BindingSpec("t", release_gil="always"),
                                                            BindingSpec("f", release_gil="never")])


def test_the_ks_target_keeps_its_own_guard() -> None:
    files = ksbind.render_module(DECLS, "m", "ks", bindings=[BindingSpec("f")]).files
    assert "CallArena" not in files["entry_points.cpp"]
    assert "ksbind::ArenaLock arena(g_alloc, release_gil);" in files["entry_points.cpp"]


# ------------------------------------------------------------ built modules

class Floaty:
    # v: what __float__ returns, a float or not (a str: what the module must refuse).
    def __init__(self, v: Any) -> None:
        self.v = v

    def __float__(self) -> float:
        return self.v


class Index:
    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v


class MyFloat(float):
    pass


class MyInt(int):
    pass


class Color(enum.IntEnum):
    RED = 2


FLOATS = [0.5, -1.0, 0.0, -0.0, 1.0, 7.25, 1e30, -1e-30, math.inf, -math.inf, 3, -4, 0, 2**70,
          MyFloat(0.75), np.float64(0.25), np.float32(1.5), Floaty(0.5), np.int64(2), MyInt(5)]


def test_float_results_match_the_ks_target(py_examples: ModuleType, ks_examples: ModuleType) -> None:
    """Every accepted kind of Float argument gives the value the ks target gives for float(v)."""
    p, k = py_examples, ks_examples
    for v in FLOATS:
        got = p.relu3(v)
        assert type(got) is float
        assert got == k.relu3(float(v)), v
        grad = p.relu3_vjp(v, 2.0)
        assert type(grad) is float and grad == k.relu3_vjp(float(v), 2.0), v
    assert math.isnan(p.relu3(math.nan)) == math.isnan(k.relu3(math.nan))
    assert p.relu3(x=0.5) == k.relu3(0.5)  # keywords as before
    assert p.allocator_top() == 0


def test_integer_and_string_results(py_examples: ModuleType) -> None:
    p = py_examples
    for n in (0, 3, MyInt(2), Color.RED, np.int64(1), np.int32(2), Index(3)):
        assert p.shout("ab", n) == "AB" + "!" * int(n)
    got = p.count("banana", "a")
    assert type(got) is int and got == 3
    assert p.count("naïve ✓", "v") == 1
    # in range (-2**31 is a valid ks Integer: the ks function's own assertion refuses it)
    with pytest.raises(RuntimeError, match=r"Assert failed \[n >= 0\]"):
        p.shout("x", -2**31)
    with pytest.raises(RuntimeError, match=r"Assert failed \[n >= 0\]"):
        p.shout("x", Index(-1))
    assert p.allocator_top() == 0


@pytest.mark.parametrize("call, exc, message", [
    (lambda m: m.relu3(True), TypeError, "argument 'x': expected a float, got bool"),
    (lambda m: m.relu3(None), TypeError, "argument 'x': expected a float, got NoneType"),
    (lambda m: m.relu3("1.0"), TypeError, "argument 'x': expected a float, got str"),
    (lambda m: m.relu3(b"1"), TypeError, "argument 'x': expected a float, got bytes"),
    (lambda m: m.relu3([1.0]), TypeError, "argument 'x': expected a float, got list"),
    (lambda m: m.relu3(10**400), OverflowError, "argument 'x': int too large for ks Float (32-bit float)"),
    (lambda m: m.relu3(Floaty("no")), TypeError, "argument 'x': expected a float, got Floaty"),
    (lambda m: m.relu3_vjp(0.5, False), TypeError, "argument 'dret': expected a float, got bool"),
    (lambda m: m.shout("x", True), TypeError, "argument 'arg1': expected an int, got bool"),
    (lambda m: m.shout("x", 2.0), TypeError, "argument 'arg1': expected an int, got float"),
    (lambda m: m.shout("x", np.float64(2)), TypeError, "argument 'arg1': expected an int, got numpy.float64"),
    (lambda m: m.shout("x", "2"), TypeError, "argument 'arg1': expected an int, got str"),
    (lambda m: m.shout("x", 2**31), OverflowError, "argument 'arg1': int out of range for ks Integer (32-bit)"),
    (lambda m: m.shout("x", -2**31 - 1), OverflowError, "argument 'arg1': int out of range"),
    (lambda m: m.shout("x", 2**64), OverflowError, "argument 'arg1': int out of range"),
    (lambda m: m.shout("x", MyInt(2**40)), OverflowError, "argument 'arg1': int out of range"),
    (lambda m: m.shout("x", Index(2**31)), OverflowError, "argument 'arg1': int out of range"),
    (lambda m: m.shout(1, 1), TypeError, "argument 'arg0': expected a str, got int"),
    (lambda m: m.shout("\ud800", 1), ValueError, "argument 'arg0': string is not encodable as UTF-8"),
    (lambda m: m.count("abc", "ab"), RuntimeError, r"Assert failed [c.size() == 1]"),
    (lambda m: m.relu3(), TypeError, "incompatible function arguments"),
])
def test_errors_are_the_general_paths(py_examples: ModuleType, call, exc, message: str) -> None:
    with pytest.raises(exc) as info:
        call(py_examples)
    assert message in str(info.value)
    assert py_examples.allocator_top() == 0


def test_a_conversion_that_calls_the_module_again(py_examples: ModuleType) -> None:
    """An argument's __float__ / __index__ may call the module itself: the nested call stacks
    on this thread's arena, above the outer call's values."""
    p = py_examples

    class Reentrant:
        def __float__(self) -> float:
            return p.relu3(2.0) + p.count("aa", "a")

    class ReentrantIndex:
        def __index__(self) -> int:
            return len(p.shout("ab", 1))

    assert p.relu3(Reentrant()) == p.relu3(p.relu3(2.0) + 2)
    assert p.shout("q", ReentrantIndex()) == "Q!!!"
    assert p.allocator_top() == 0


def test_scalar_calls_next_to_calls_holding_the_arena(py_examples: ModuleType) -> None:
    """Scalar calls from threads while other threads run large calls that release the GIL, each
    thread on its own arena: correct results, arena flat at 0."""
    p = py_examples
    p.reset_allocator()
    big = [float(i % 7) / 3 for i in range(20000)]  # above the 2048-element GIL-release bar
    want_big = p.vrelu3(big)
    xs = [(i % 50) / 25.0 - 0.5 + k for k in range(4) for i in range(50)]
    want = {x: p.relu3(x) for x in xs}
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def scalar_worker(k: int) -> None:
        try:
            barrier.wait()
            for i in range(3000):
                x = (i % 50) / 25.0 - 0.5 + k
                assert p.relu3(x) == want[x]
                assert p.count("a" * (i % 9), "a") == i % 9
                assert p.shout("z", k) == "Z" + "!" * k
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    def big_worker() -> None:
        try:
            barrier.wait()
            for _ in range(15):
                assert p.vrelu3(big) == want_big
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=scalar_worker, args=(k,)) for k in range(4)]
    threads += [threading.Thread(target=big_worker) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert p.allocator_top() == 0


def test_scalar_calls_are_logged(py_examples: ModuleType, capfd: pytest.CaptureFixture[str]) -> None:
    p = py_examples
    p.logging(True)
    try:
        assert p.relu3(0.5) == pytest.approx(0.5 ** 3 / 3)
        assert p.count("abca", "a") == 2
    finally:
        p.logging(False)
    p.relu3(0.25)  # not logged any more
    lines = capfd.readouterr().err.splitlines()
    assert lines == ["relu3$af(0.5) =", "0.0416667", 'count$ass("abca", "a") =', "2"]
