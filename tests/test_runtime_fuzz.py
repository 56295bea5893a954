"""Fuzz: generated entry points called with random wrong arguments (types,
ranks, dtypes, sizes, None, huge tensors) must raise a Python exception,
never crash; afterwards every module still computes the right results."""
from __future__ import annotations

import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

CALLS_PER_TARGET = 2500
#: ZeroDivisionError: Weird's own, raised by its __float__/__len__ while converting, passes through unchanged.
EXPECTED = (TypeError, ValueError, RuntimeError, MemoryError, OverflowError, IndexError, ZeroDivisionError)


class Weird:
    """An object that is nothing ks knows, with a broken __len__ and __float__."""

    def __len__(self) -> int:
        raise ZeroDivisionError("no length")

    def __float__(self) -> float:
        raise ZeroDivisionError("no float")


class LyingSequence:
    """Claims a length its items do not have."""

    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: int) -> float:
        if i >= 2:
            raise IndexError(i)
        return 1.0


def junk(rng: random.Random, depth: int = 0) -> Any:
    """A random value of any shape and type, sometimes nearly right."""
    choice = rng.randrange(22)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([0, -1, 2**31, -(2**63), 2**100, True, False])
    if choice == 2:
        return rng.choice([0.0, float("nan"), float("inf"), -1e300, 1.5])
    if choice == 3:
        return rng.choice(["", "x", "héllo", "\0", "a" * 1000])
    if choice == 4:
        return b"bytes"
    if choice == 5:
        dtype = rng.choice([np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64, np.uint8])
        shape = tuple(rng.randrange(0, 4) for _ in range(rng.randrange(0, 4)))
        return np.zeros(shape, dtype=dtype)
    if choice == 6:
        return np.zeros((4, 4), dtype=np.float32)[:, ::2]  # not contiguous
    if choice == 7:
        return np.zeros(rng.choice([30_000_000, 26_000_000]), dtype=np.float32)  # bigger than the arena
    if choice == 8:
        return range(rng.choice([10**8, 2**31 + 5]))  # huge lazy sequence
    if choice == 9:
        return Weird()
    if choice == 10:
        return LyingSequence()
    if choice == 11:
        return object()
    if choice == 12:
        return {"a": 1}
    if choice == 13:
        return [[1.0, 2.0], [3.0]]  # ragged
    if choice == 14:
        return np.float32(1.0)
    if choice in (15, 16) and depth < 3:
        return tuple(junk(rng, depth + 1) for _ in range(rng.randrange(0, 4)))
    if choice in (17, 18) and depth < 3:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if choice == 19:
        return [1.0] * rng.randrange(0, 6)
    if choice == 20:
        return [[1.0] * 3] * rng.randrange(0, 3)
    return ((1.0, 2), (True, (1.0, 2.0)))


ENTRY_POINTS = ["relu3", "relu3_vjp", "vrelu3", "vrelu3_vjp", "matvec", "matvec_vjp", "rowsums", "rowsums_vjp",
                "mix", "mix_vjp", "shout", "count"]


def valid_args(name: str, target: str) -> list[Any]:
    """Correct arguments for each entry point (numpy for ks, lists for python)."""
    arr: Callable[[Any], Any] = (lambda a: np.asarray(a, dtype=np.float32)) if target == "ks" else (lambda a: a)
    v, m2 = arr([1.0, 2.0]), arr([[1.0, 2.0], [3.0, 4.0]])
    mix = [(1.0, 2), (True, (1.0, 2.0))]
    return {
        "relu3": [0.5], "relu3_vjp": [0.5, 1.0], "vrelu3": [v], "vrelu3_vjp": [v, v], "matvec": [m2, v],
        "matvec_vjp": [m2, v, v], "rowsums": [m2], "rowsums_vjp": [m2, v], "mix": mix,
        "mix_vjp": mix + [((1.0, ()), ())], "shout": ["a", 1], "count": ["aa", "a"],
    }[name]


def check_still_working(m: ModuleType, target: str) -> None:
    arr: Callable[[Any], Any] = (lambda a: np.asarray(a, dtype=np.float32)) if target == "ks" else (lambda a: a)
    assert np.array(m.vrelu3(arr([-1.0, 0.5, 2.0])), dtype=np.float64) == pytest.approx([0, 0.5 ** 3 / 3, 2 - 2 / 3])
    assert np.array(m.matvec(arr([[1.0, 2.0], [3.0, 4.0]]), arr([1.0, 1.0]))) == pytest.approx([3.0, 7.0])
    assert m.mix((1.0, 2), (True, (2.0, 3.0))) == ((5.0, 3), False)
    assert m.shout("ok", 2) == "OK!!"


@pytest.mark.parametrize("target", ["ks", "python"])
def test_random_wrong_arguments_raise_and_module_survives(target: str, ks_examples: ModuleType,
                                                          py_examples: ModuleType) -> None:
    m = ks_examples if target == "ks" else py_examples
    rng = random.Random(1234 if target == "ks" else 4321)
    raised: dict[str, int] = {}
    huge_ks = np.zeros(m.arena_bytes() // 4 + 1, dtype=np.float32)
    calls = 0
    for i in range(CALLS_PER_TARGET):
        name = rng.choice(ENTRY_POINTS)
        if i % 100 == 0:  # a huge tensor of the right type: must stop at the arena
            name = rng.choice(["vrelu3", "vrelu3_vjp"])
            big = huge_ks if target == "ks" else range(10**8)
            args: list[Any] = [big, big]
            args = args[:1] if name == "vrelu3" else args
        elif rng.random() < 0.5:  # nearly right: one argument (or one part of it) replaced by junk
            args = valid_args(name, target)
            k = rng.randrange(len(args))
            if isinstance(args[k], tuple) and rng.random() < 0.5:
                parts = list(args[k])
                parts[rng.randrange(len(parts))] = junk(rng)
                args[k] = tuple(parts)
            else:
                args[k] = junk(rng)
        else:
            args = [junk(rng) for _ in range(rng.choice([0, 1, 2, 3, 3, 2]))]
        calls += 1
        try:
            getattr(m, name)(*args)
        except EXPECTED as e:
            raised[type(e).__name__] = raised.get(type(e).__name__, 0) + 1
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"{name}{tuple(type(a).__name__ for a in args)} raised {type(e).__name__}: {e}")
        else:
            pass  # junk can be valid by chance (e.g. relu3(1.5)): fine
        if target == "ks" and i % 200 == 0:
            m.reset_allocator()
        if target == "python":
            assert m.allocator_top() == 0, name
    m.reset_allocator()
    check_still_working(m, target)
    assert calls == CALLS_PER_TARGET
    assert raised.get("TypeError", 0) > CALLS_PER_TARGET // 4  # most junk is refused as the wrong type
    assert raised.get("MemoryError", 0) > 0  # huge tensors reached the arena and were refused
