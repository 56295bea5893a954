"""End to end: every example, generated, compiled with g++, imported and
compared with numpy, for the ks and python targets, vjps included; each
against the bundled runtime and against ksc's (the session fixtures'
`runtime`, tests/e2e_support.py)."""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.e2e_support import REPO, built, run_python, session_cache_dir

rng = np.random.default_rng(0)


def relu3_ref(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.where(x < 0, 0.0, np.where(x < 1, x ** 3 / 3, x - 2 / 3))


def relu3_grad_ref(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.where(x < 0, 0.0, np.where(x < 1, x * x, 1.0))


def finite_difference(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-3) -> np.ndarray:
    """Central differences of a scalar function of x (float64 arithmetic on float32 calls)."""
    g = np.zeros(x.shape, dtype=np.float64)
    flat = x.reshape(-1)
    for i in range(flat.size):
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        g.reshape(-1)[i] = (f(up.reshape(x.shape)) - f(down.reshape(x.shape))) / (2 * eps)
    return g


class Targets:
    """Calls each example through either target with numpy in and numpy out."""

    def __init__(self, m: ModuleType, target: str) -> None:
        self.m, self.target = m, target

    def arr(self, a: np.ndarray) -> Any:
        a = np.ascontiguousarray(a, dtype=np.float32)
        return a if self.target == "ks" else a.tolist()

    def out(self, r: Any) -> np.ndarray:
        return np.array(r, dtype=np.float64)  # a copy: ks results live in the arena


@pytest.fixture(params=["ks", "python"])
def t(request: pytest.FixtureRequest, ks_examples: ModuleType, py_examples: ModuleType) -> Targets:
    return Targets(ks_examples if request.param == "ks" else py_examples, request.param)


def test_relu3_scalar_and_vjp(t: Targets) -> None:
    for x in [-1.5, -0.0, 0.25, 0.5, 0.999, 1.0, 3.0]:
        assert t.m.relu3(x) == pytest.approx(float(relu3_ref(np.array(x))), rel=1e-6, abs=1e-7)
        assert t.m.relu3_vjp(x, 2.0) == pytest.approx(2 * float(relu3_grad_ref(np.array(x))), rel=1e-6)
        if abs(x) > 1e-2 and abs(x - 1) > 1e-2:
            fd = (t.m.relu3(x + 1e-3) - t.m.relu3(x - 1e-3)) / 2e-3
            assert t.m.relu3_vjp(x, 1.0) == pytest.approx(fd, rel=2e-2, abs=1e-3)


def test_vrelu3_matches_numpy(t: Targets) -> None:
    x = rng.uniform(-2, 3, size=1000).astype(np.float32)
    np.testing.assert_allclose(t.out(t.m.vrelu3(t.arr(x))), relu3_ref(x), rtol=1e-5, atol=1e-6)
    assert t.out(t.m.vrelu3(t.arr(np.zeros(0)))).shape == (0,)


def test_vrelu3_vjp_against_analytic_and_finite_difference(t: Targets) -> None:
    x = rng.uniform(-2, 3, size=50).astype(np.float32)
    x[np.abs(x) < 0.05] = 0.5
    x[np.abs(x - 1) < 0.05] = 1.5
    dr = rng.normal(size=50).astype(np.float32)
    got = t.out(t.m.vrelu3_vjp(t.arr(x), t.arr(dr)))
    np.testing.assert_allclose(got, dr * relu3_grad_ref(x), rtol=1e-5, atol=1e-6)
    fd = finite_difference(lambda v: float(np.dot(dr, t.out(t.m.vrelu3(t.arr(v))))), x.astype(np.float64))
    np.testing.assert_allclose(got, fd, rtol=2e-2, atol=2e-2)


def test_matvec_and_rowsums_match_numpy(t: Targets) -> None:
    shapes = [(3, 4), (1, 7), (5, 1)]
    if t.target == "ks":  # an empty nested list cannot say how many columns it has
        shapes.append((0, 3))
    for rows, cols in shapes:
        m = rng.normal(size=(rows, cols)).astype(np.float32)
        v = rng.normal(size=cols).astype(np.float32)
        np.testing.assert_allclose(t.out(t.m.matvec(t.arr(m), t.arr(v))).reshape(rows), m.astype(np.float64) @ v,
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(t.out(t.m.rowsums(t.arr(m))).reshape(rows), m.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_matvec_vjp_against_analytic_and_finite_difference(t: Targets) -> None:
    m = rng.normal(size=(3, 4)).astype(np.float32)
    v = rng.normal(size=4).astype(np.float32)
    dr = rng.normal(size=3).astype(np.float32)
    dm, dv = t.m.matvec_vjp(t.arr(m), t.arr(v), t.arr(dr))
    dm, dv = t.out(dm), t.out(dv)
    np.testing.assert_allclose(dm, np.outer(dr, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dv, m.T.astype(np.float64) @ dr, rtol=1e-5, atol=1e-5)
    fd_m = finite_difference(lambda a: float(np.dot(dr, t.out(t.m.matvec(t.arr(a), t.arr(v))))), m.astype(np.float64))
    fd_v = finite_difference(lambda a: float(np.dot(dr, t.out(t.m.matvec(t.arr(m), t.arr(a))))), v.astype(np.float64))
    np.testing.assert_allclose(dm, fd_m, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(dv, fd_v, rtol=1e-2, atol=1e-2)


def test_rowsums_vjp(t: Targets) -> None:
    m = rng.normal(size=(4, 3)).astype(np.float32)
    dr = rng.normal(size=4).astype(np.float32)
    got = t.out(t.m.rowsums_vjp(t.arr(m), t.arr(dr)))
    np.testing.assert_allclose(got, np.repeat(dr[:, None], 3, axis=1), rtol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_nested_tuples_in_and_out(t: Targets, flag: bool) -> None:
    x, n, a, b = 1.5, 7, -2.0, 0.25
    (y, n1), not_flag = t.m.mix((x, n), (flag, (a, b)))
    assert y == pytest.approx(x * a + b if flag else x - b)
    assert n1 == n + 1 and isinstance(n1, int)
    assert not_flag is (not flag)
    # vjp: tangents of Integer and Bool are the empty tuple.
    (dx, unit1), (unit2, (da, db)) = t.m.mix_vjp((x, n), (flag, (a, b)), ((3.0, ()), ()))
    assert unit1 == () and unit2 == ()
    assert (dx, da, db) == pytest.approx((3.0 * a, 3.0 * x, 3.0) if flag else (3.0, 0.0, -3.0))
    eps = 1e-2
    fd = (t.m.mix((x + eps, n), (flag, (a, b)))[0][0] - t.m.mix((x - eps, n), (flag, (a, b)))[0][0]) / (2 * eps)
    assert dx / 3.0 == pytest.approx(fd, rel=1e-3)


def test_strings(t: Targets) -> None:
    assert t.m.shout("hello, world", 3) == "HELLO, WORLD!!!"
    assert t.m.shout("", 0) == ""
    assert t.m.shout("naïve ✓", 1) == "NAïVE ✓!"
    assert t.m.count("banana", "a") == 3
    assert t.m.count("", "x") == 0


def test_ks_tensors_view_buffers_without_copying(ks_examples: ModuleType) -> None:
    m = ks_examples
    a = np.arange(6, dtype=np.float32)
    view = m.Tensor_1_Float(a)
    a[2] = 10.0  # a view: the tensor sees the change
    assert view[2] == 10.0 and view.shape == (6,) and view.num_elements() == 6
    r = m.vrelu3(view)
    assert np.asarray(r).dtype == np.float32 and np.asarray(r)[2] == pytest.approx(10 - 2 / 3)
    mem = np.asarray(r)
    assert not mem.flags.owndata  # numpy views the arena, no copy
    two = m.Tensor_2_Float(np.ones((2, 3), dtype=np.float32))
    assert two.shape == (2, 3) and two.size() == (2, 3)
    del a, view
    m.reset_allocator()
    assert m.allocator_top() == 0


def test_ks_tensors_from_torch_without_copying(ks_examples: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.float32)
    view = ks_examples.Tensor_1_Float(t)
    t[1] = 5.0
    assert view[1] == 5.0
    np.testing.assert_allclose(np.asarray(ks_examples.vrelu3(view)), relu3_ref(t.numpy()), rtol=1e-6)
    with pytest.raises(TypeError, match="Tensor_1_Float"):
        ks_examples.Tensor_1_Float(torch.zeros(3, dtype=torch.float64))


def test_readme_main_job_script() -> None:
    """examples/relu3/run.py (what scripts/demo.sh runs) prints inputs, results and the vjp."""
    built("relu3.yaml")  # the script's config (bundled runtime): it must find this build in the cache
    out = run_python(f"import runpy, sys; sys.argv = ['run.py']; "
                     f"runpy.run_path({str(REPO / 'examples' / 'relu3' / 'run.py')!r}, run_name='__main__')",
                     env={"KSBIND_CACHE_DIR": str(session_cache_dir())})
    assert out.returncode == 0, out.stderr
    assert "vrelu3(x)       = [0.     0.     0.     0.0417 0.243  0.3333 1.3333 2.8333]" in out.stdout
    assert "vrelu3_vjp(x, 1)= [0.   0.   0.   0.25 0.81 1.   1.   1.  ]" in out.stdout
    assert "matches numpy: True" in out.stdout
    assert "compiling" not in out.stderr  # the session's relu3 build was reused: keys are path-independent


def test_python_target_ragged_nested_tensors(py_examples: ModuleType) -> None:
    rows = [[1.0, 2.0], [], [3.0, 4.0, 5.0], [0.5]]
    assert py_examples.sums(rows) == pytest.approx([3.0, 0.0, 12.0, 0.5])
    assert py_examples.sums([]) == []
    with pytest.raises(TypeError, match=r"'rows\[1\]\[0\]': expected a float"):
        py_examples.sums([[1.0], ["x"]])


def test_ks_tensor_keeps_its_buffer_alive(ks_examples: ModuleType) -> None:
    import gc

    view = ks_examples.Tensor_1_Float(np.arange(5, dtype=np.float32) * 2)  # the only reference to the array
    gc.collect()
    np.asarray(np.zeros(10000, dtype=np.float32))  # reuse freed memory, if any was freed
    assert [view[i] for i in range(5)] == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert view.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert view[-1] == 8.0
    with pytest.raises(IndexError):
        view[5]
