"""tests/test_calls.py's guarantees on the ks and torch targets, wherever Python code runs inside
their conversions: Python numbers given for scalars (``__float__``/``__index__``), lists
(of numbers, of tensors), ``__torch_function__`` subclasses. The code may call back into
the module, mutate the list being read, or raise: the call returns the right value or a
clean exception. Uses the session-built modules, and builds configs/torch_ops.yaml's
torch_ops_packed (its packed bindings warn at build time: recorded here)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


def test_ks_target_calls_from_inside_its_conversions(ks_examples: ModuleType) -> None:
    k = ks_examples

    class CallsBack:
        def __float__(self) -> float:
            return k.relu3(2.0) + k.count("aa", "a")

    assert k.relu3(CallsBack()) == pytest.approx(k.relu3(k.relu3(2.0) + 2))
    parts: list[Any] = []

    class Mutates:  # clears the tuple-to-be's list while pybind11 reads it
        def __float__(self) -> float:
            parts.clear()
            return float(k.count("abab", "b"))

    parts.extend([(Mutates(), 3), (True, (2.0, 1.0))])
    assert k.mix(*parts) == ((2.0 * 2.0 + 1.0, 4), False)

    class Raises:
        def __float__(self) -> float:
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        k.relu3(Raises())
    with pytest.raises(OverflowError, match="int out of range for ks Integer"):
        k.shout("x", 2**40)
    with pytest.raises(OverflowError, match="int too large for ks Float"):
        k.relu3(10**400)
    assert k.relu3(2) == k.relu3(2.0) and k.shout("x", True) == "X!"  # what pybind11 accepted still is
    assert k.allocator_top() < 1_000_000


def test_torch_target_calls_from_inside_its_conversions(torch_ops: ModuleType) -> None:
    import torch

    ops = torch_ops

    class Index:  # an Integer given as an object whose __index__ calls the module
        def __index__(self) -> int:
            return int(ops.tsum((torch.ones(2), 1.0), 1).item()) + 2

    a, b = torch.ones(3), torch.full((3,), 2.0)
    n = int(ops.tsum((torch.ones(2), 1.0), 1).item()) + 2
    assert ops.scale_add(a, b, Index()).tolist() == ops.scale_add(a, b, n).tolist()

    class Raises:
        def __index__(self) -> int:
            raise KeyboardInterrupt

        def __float__(self) -> float:
            raise KeyError("mine")

    with pytest.raises(KeyboardInterrupt):
        ops.scale_add(a, b, Raises())
    with pytest.raises(OverflowError, match="int out of range for ks Integer"):
        ops.scale_add(a, b, 2**40)

    class Noisy(torch.Tensor):
        """A subclass whose __torch_function__ calls the module on every torch call."""

        calls = 0

        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            Noisy.calls += 1
            ops.vrelu3(torch.ones(2))
            return super().__torch_function__(func, types, args, kwargs or {})

    rows = [torch.tensor([1.0, 2.0]).as_subclass(Noisy), torch.tensor([3.0])]
    w = ops.weighted(rows, torch.tensor([1.0, 10.0]), 1.0)
    assert float(w) == pytest.approx(ops.weighted([torch.tensor([1.0, 2.0]), torch.tensor([3.0])],
                                                  torch.tensor([1.0, 10.0]), 1.0).item())
    assert ops.allocator_top() == 0


@pytest.fixture(scope="module")
def torch_packed() -> ModuleType:
    """configs/torch_ops.yaml's torch_ops_packed (pairsum: a list of tuples, a packed op), built
    here with its build's KsbindWarnings recorded (each packed binding warns; the suite's
    filterwarnings would make them errors)."""
    import warnings

    from ksbind.errors import KsbindWarning
    from tests.e2e_support import _build

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", KsbindWarning)
        return _build("torch_ops.yaml", "torch_ops_packed", "bundled")


def test_torch_packed_calls_from_inside_its_conversions(torch_packed: ModuleType) -> None:
    """A packed binding's list of tuples is read in Python (ksbind/targets/torch/runtime/packing.py packs it):
    a number's conversion that raises, overflows or empties the list gives a clean result."""
    import torch

    m = torch_packed

    class Raises:
        def __float__(self) -> float:
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        m.pairsum([(Raises(), torch.ones(1))])
    with pytest.raises(OverflowError, match="int too large for ks Float"):
        m.pairsum([(10**400, torch.ones(1))])
    pairs: list[Any] = []

    class Clears:  # empties the list of pairs while it is read
        def __float__(self) -> float:
            pairs.clear()
            return 1.5

    pairs.extend([(Clears(), torch.tensor([1.0, 2.0])), (2.0, torch.tensor([0.5]))])
    # The list is read as it was when the call began (as the python target reads a snapshot):
    # both pairs, though the second was removed while the first was converted.
    assert m.pairsum(pairs).item() == pytest.approx(1.5 * 3.0 + 2.0 * 0.5)
    assert m.allocator_top() == 0
