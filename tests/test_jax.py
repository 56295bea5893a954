"""The jax target end to end: modules really compiled with g++ against jaxlib's
FFI headers, loaded through ctypes and called from real jax: eagerly, under
jax.jit, jax.grad/jax.vjp and jax.vmap, in each mode; dtype and rank errors at
trace time; tuples, tensors of tensors and of tuples, scalars, float0
cotangents; result shapes (probe, result_shape) and the run-time mismatch
error; KS_ASSERT's message; threads; refused types at generation time.

Without jax these tests skip, except in CI (``CI`` set), where a missing jax
is a failure (scripts/setup.sh installs it)."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import ksbind
from ksbind.errors import BindingError, ConfigError
from ksbind.spec import BindingSpec
from tests.e2e_support import run_python, session_cache_dir

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "jax"

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs jax for tests/test_jax.py (scripts/setup.sh installs jax==0.10.2)") from None
    jax = None  # type: ignore[assignment]
pytestmark = pytest.mark.skipif(jax is None, reason="jax is not installed (pip install 'ksbind[jax]')")


@pytest.fixture(scope="module")
def m() -> ModuleType:
    return ksbind.build(DATA / "calls.yaml", quiet=True, cache_dir=session_cache_dir())


@pytest.fixture(scope="module")
def relu3() -> ModuleType:
    return ksbind.build(REPO / "configs" / "relu3_jax.yaml", quiet=True, cache_dir=session_cache_dir())


def f32(*values: Any) -> Any:
    return jnp.asarray(np.array(values, dtype=np.float32))


def relu3_np(x: Any) -> Any:
    x = np.asarray(x, dtype=np.float64)
    return np.where(x < 0, 0, np.where(x < 1, x ** 3 / 3, x - 2 / 3))


def drelu3_np(x: Any) -> Any:
    x = np.asarray(x, dtype=np.float64)
    return np.where(x < 0, 0, np.where(x < 1, x * x, 1))


# ------------------------------------------------------------ modes

@pytest.mark.parametrize("how", ["eager", "jit"])
def test_elementwise_any_shape_broadcasting_and_its_gradient(relu3: ModuleType, m: ModuleType, how: str) -> None:
    wrap = jax.jit if how == "jit" else (lambda f: f)
    x = jnp.linspace(-1.5, 2.5, 24, dtype=jnp.float32).reshape(2, 3, 4)
    np.testing.assert_allclose(wrap(relu3.relu3)(x), relu3_np(x), rtol=1e-6)
    np.testing.assert_allclose(wrap(jax.grad(lambda v: relu3.relu3(v).sum()))(x), drelu3_np(x), rtol=1e-6)
    # (Float, Float) -> Float over broadcast shapes: the gradient is summed back to each argument's shape.
    a, b = jnp.ones((2, 3), jnp.float32) * 2, f32(0.3, 0.7, 1.1)
    np.testing.assert_allclose(wrap(m.mulsin)(a, b), 2 * np.sin(np.asarray(b))[None, :].repeat(2, 0), rtol=1e-6)
    da, db = wrap(jax.grad(lambda x, y: m.mulsin(x, y).sum(), argnums=(0, 1)))(a, b)
    assert da.shape == (2, 3) and db.shape == (3,)
    np.testing.assert_allclose(db, 2 * 2 * np.cos(np.asarray(b)), rtol=1e-5)
    np.testing.assert_allclose(m.mulsin(2.0, 0.5), 2 * np.sin(0.5), rtol=1e-6)  # Python numbers are taken
    # jax.vmap of an elementwise binding is the same loop over a bigger array.
    np.testing.assert_allclose(jax.vmap(relu3.relu3)(x), relu3_np(x), rtol=1e-6)


def test_long_elementwise_loops_split_over_threads_and_fail_cleanly(relu3: ModuleType, m: ModuleType) -> None:
    # Above the length the loop is split over XLA's intra-op pool: every chunk
    # is computed, odd lengths included, and a failure in any chunk is the call's.
    x = jnp.linspace(-1.5, 2.5, 100_003, dtype=jnp.float32)
    np.testing.assert_allclose(jax.jit(relu3.relu3)(x), relu3_np(x), rtol=1e-6, atol=1e-7)
    # The gradient multiplies the cotangent by the derivatives at dret = 1: the
    # same as the vjp binding itself with that cotangent.
    g = jnp.cos(x)
    _, pull = jax.vjp(relu3.relu3, x)
    np.testing.assert_allclose(pull(g)[0], relu3.relu3_vjp(x, g), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda v: relu3.relu3(v).sum()))(x), drelu3_np(x), rtol=1e-6)
    big = jnp.linspace(0, 8, 70_000, dtype=jnp.float32)
    np.testing.assert_allclose(jax.jit(m.checked_e)(big), np.sqrt(np.asarray(big)), rtol=1e-6)
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match=r"checked_e \(ks function \[checked Float\]\) failed an assertion in ks code: .*Assert failed "
                                                                        r"\[x >= 0.0f\]"):
        np.asarray(jax.jit(m.checked_e)(big.at[65_000].set(-1.0)))
    assert m.allocator_top() == 0


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_plain_binding_under_jit_grad_vjp_and_vmap(relu3: ModuleType, m: ModuleType, how: str) -> None:
    wrap = jax.jit if how == "jit" else (lambda f: f)
    x = jnp.linspace(-1, 2, 10, dtype=jnp.float32)
    np.testing.assert_allclose(wrap(relu3.vrelu3)(x), relu3_np(x), rtol=1e-6)
    np.testing.assert_allclose(wrap(jax.grad(lambda v: relu3.vrelu3(v).sum()))(x), drelu3_np(x), rtol=1e-6)
    out, pullback = jax.vjp(relu3.vrelu3, x)
    (dx,) = pullback(jnp.full(10, 2.0, jnp.float32))
    np.testing.assert_allclose(dx, 2 * drelu3_np(x), rtol=1e-6)
    # plain under jax.vmap: a sequential loop of calls; and vmap of its gradient
    xs = jnp.stack([x, x * 2, x - 1])
    np.testing.assert_allclose(wrap(jax.vmap(relu3.vrelu3))(xs), relu3_np(xs), rtol=1e-6)
    np.testing.assert_allclose(wrap(jax.vmap(jax.grad(lambda v: relu3.vrelu3(v).sum())))(xs), drelu3_np(xs), rtol=1e-6)
    # two arguments, one a scalar: both get gradients
    v = f32(1, 2, 3)
    dv, ds = wrap(jax.grad(lambda v, s: (m.scale(v, s) ** 2).sum(), argnums=(0, 1)))(v, jnp.float32(2))
    np.testing.assert_allclose(dv, 2 * 2 * 2 * np.asarray(v), rtol=1e-6)
    np.testing.assert_allclose(ds, 2 * 2 * (np.asarray(v) ** 2).sum(), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(m.scale)(jnp.stack([v, v]), f32(1, 3)), [[1, 2, 3], [3, 6, 9]])


def test_vmap_mode_maps_the_leading_axis_natively(m: ModuleType) -> None:
    xs = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    np.testing.assert_allclose(m.rowsum(xs), (np.asarray(xs) ** 2).sum(1))
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: m.rowsum(x).sum()))(xs), 2 * np.asarray(xs))
    # a scalar shared by every step
    np.testing.assert_allclose(m.scale_v(xs, 0.5), np.asarray(xs) * 0.5)
    # under jax.vmap: more leading axes, still one handler call
    xss = jnp.stack([xs, xs + 1])
    np.testing.assert_allclose(jax.vmap(m.rowsum)(xss), (np.asarray(xss) ** 2).sum(2))
    np.testing.assert_allclose(jax.vmap(m.scale_v, in_axes=(0, 0))(xss, f32(1, 2)),
                               np.asarray(xss) * np.array([1, 2])[:, None, None])
    np.testing.assert_allclose(jax.vmap(jax.grad(lambda x: m.rowsum(x).sum()))(xss), 2 * np.asarray(xss))
    with pytest.raises(TypeError, match=r"rowsum: argument 'arg0' .* rank 2 \(a leading batch axis, mode vmap\)"):
        m.rowsum(f32(1, 2))


# ------------------------------------------------------------ types

def test_dtypes_are_checked_at_trace_time_and_never_cast(relu3: ModuleType, m: ModuleType) -> None:
    x = jnp.arange(3, dtype=jnp.int32)
    with pytest.raises(TypeError, match=r"vrelu3: argument 't' \(ks \(Tensor 1 Float\)\) must be a float32 array, "
                                        r"got int32 \(no implicit cast"):
        relu3.vrelu3(x)
    with pytest.raises(TypeError, match="must be a float32 array"):
        jax.jit(relu3.vrelu3)(x)  # at trace time, under jit too
    with pytest.raises(TypeError, match=r"argument 'arg1' \(ks Integer\) must be a int32 number"):
        m.stats(f32(1, 2), 2.5)
    with pytest.raises(TypeError, match=r"mode elementwise, ks Float\) must be a float32 array"):
        relu3.relu3(jnp.ones(3, jnp.float16))
    with pytest.raises(TypeError, match=r"rank 1, got shape \(2, 2\)"):
        relu3.vrelu3(jnp.ones((2, 2), jnp.float32))
    with pytest.raises(TypeError, match=r"scale\(\) missing argument 'arg1'"):
        m.scale(f32(1))


def test_tuples_integers_and_float0_cotangents(m: ModuleType) -> None:
    v = f32(1, 2, 3)
    s, n, twice = m.stats(v, 4)
    assert (float(s), int(n)) == (6.0, 7) and n.dtype == jnp.int32 and s.shape == ()
    np.testing.assert_allclose(twice, [2, 4, 6])
    out, pullback = jax.vjp(m.stats, v, jnp.int32(4))
    dv, dn = pullback((jnp.float32(1), np.zeros((), jax.dtypes.float0), jnp.ones(3, jnp.float32)))
    np.testing.assert_allclose(dv, [3, 3, 3])
    assert dn.dtype == jax.dtypes.float0 and dn.shape == ()
    # the vjp binding itself, gradients in the arguments' layout
    dv2, dn2 = m.stats_vjp(v, 4, (1.0, (), jnp.ones(3, jnp.float32)))
    np.testing.assert_allclose(dv2, dv)
    assert dn2.dtype == jax.dtypes.float0
    assert bool(m.flag(jnp.array([0, 2], jnp.int32), True)) and not bool(m.flag(jnp.array([0, 2], jnp.int32), False))
    assert m.flag(jnp.array([0], jnp.int32), True).dtype == jnp.bool_


def test_python_numbers_under_jit_with_x64_are_taken_as_eagerly(m: ModuleType) -> None:
    """Under jax_enable_x64, jit makes a Python int a weakly typed int64 (a float, float64): taken as
    the ks Integer (Float) it is eagerly (it was "must be a int32 array, got int64")."""
    v = f32(1, 2, 3)
    with jax.enable_x64(True):
        s, n, _ = jax.jit(lambda v, k: m.stats(v, k))(v, 4)
        assert (float(s), int(n)) == (6.0, 7) and n.dtype == jnp.int32
        with pytest.raises(TypeError, match=r"must be a int32 array, got int64"):  # a typed array is not converted
            m.stats(v, jnp.asarray(4, dtype=jnp.int64))


def test_forward_mode_and_second_derivatives_name_the_binding(relu3: ModuleType) -> None:
    """JAX's own message named the FFI target (`ksbind.relu3_jax_jaxffi_HASH.ksbind_jax_vrelu3`)."""
    v = f32(0.5, 1.5, -1.0)
    says = (r"binding '{}' cannot be differentiated in forward mode or twice: .*reverse mode through its vjp.*"
            r"forward mode .* needs a jvp \(give the binding jvp: in its config\)")
    np.testing.assert_allclose(jax.grad(lambda w: relu3.vrelu3(w).sum())(v), [0.25, 1.0, 0.0])  # first order
    with pytest.raises(TypeError, match=says.format("vrelu3")):
        jax.jvp(relu3.vrelu3, (v,), (v,))
    with pytest.raises(TypeError, match=says.format("vrelu3")):
        jax.hessian(lambda w: relu3.vrelu3(w).sum())(v)
    with pytest.raises(TypeError, match=says.format("relu3")):
        jax.grad(jax.grad(lambda x: relu3.relu3(x)))(0.5)
    with pytest.raises(TypeError, match=says.format("vrelu3")):
        jax.jit(jax.grad(lambda w: jax.grad(lambda u: relu3.vrelu3(u).sum())(w).sum()))(v)


def test_tensor_of_tensors_is_one_stacked_array_and_tensor_of_tuples_a_tuple_of_arrays(m: ModuleType) -> None:
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    np.testing.assert_allclose(m.nested(x), np.asarray(x) ** 2)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda a: m.nested(a).sum()))(x), 2 * np.asarray(x))
    assert float(m.pairs((f32(1.5, 2), jnp.array([2, 3], jnp.int32)))) == 9.0
    # ragged: rows of lengths 1..n+2 (the probe's n is 1: three rows)
    with pytest.raises(ValueError, match=r"binding 'ragged': finding the result's shape by calling it on ones "
                                         r"failed: the result is ragged: row 0 and row 1 differ in shape"):
        m.ragged(0)


# ------------------------------------------------------------ shapes

def test_result_shapes_by_probe_by_result_shape_and_the_run_time_check(m: ModuleType) -> None:
    v = f32(1, 2)
    # result_shape: an expression over the arguments (shapes, and the values of concrete scalars)
    np.testing.assert_allclose(m.repeat_sized(v, 3), [1, 2, 1, 2, 1, 2])
    with pytest.raises(TypeError, match=r"result_shape uses argument 'arg1', whose value is not known when tracing"):
        jax.jit(m.repeat_sized)(v, 3)
    np.testing.assert_allclose(jax.jit(m.repeat_sized, static_argnums=1)(v, 3), [1, 2, 1, 2, 1, 2])
    # A shape that depends on a value the probe (ones) cannot see: a clear error at run time, naming both shapes.
    with pytest.raises(Exception, match=r"binding 'repeat': the result has shape \(6,\), but shape \(2,\) was found "
                                        r"when tracing"):
        np.asarray(m.repeat(v, 3))
    with pytest.raises(Exception, match=r"binding 'repeat_wrong': the result has shape \(6,\), but shape \(2,\)"):
        np.asarray(jax.jit(m.repeat_wrong)(v, 3))
    # The probe runs once per shape signature (eager and jitted calls alike).
    b = m._bindings["scale"]
    real = b.probe_fn
    calls: list[tuple[Any, ...]] = []

    def probe(*a: Any) -> Any:
        calls.append(a)
        return real(*a)

    b.probe_fn = probe
    try:
        for s in (1.0, 2.0):
            np.testing.assert_allclose(m.scale(jnp.ones(13, jnp.float32), s), np.full(13, s))
        np.asarray(jax.jit(m.scale)(jnp.ones(13, jnp.float32), 3.0))
        assert len(calls) == 1
        np.asarray(m.scale(jnp.ones(14, jnp.float32), 1.0))
        assert len(calls) == 2
    finally:
        b.probe_fn = real


def test_ks_assert_is_a_jax_error_carrying_its_message(m: ModuleType, capfd: pytest.CaptureFixture[str]) -> None:
    assert float(m.checked(4.0)) == 2.0
    capfd.readouterr()
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT: ksbind: checked \(ks function \[checked Float\]\) failed an "
                                        r"assertion in ks code: calls.cpp:\d+:Assert failed \[x >= 0.0f\]") as info:
        np.asarray(m.checked(-1.0))
    # named, and nothing of ksc's own print reaches stderr (the module's logging is off)
    assert "Assert failed" not in capfd.readouterr().err
    # eager dispatch raises XLA's INVALID_ARGUMENT as ValueError, a jitted call as JaxRuntimeError
    assert isinstance(info.value, (jax.errors.JaxRuntimeError, ValueError))
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"checked \(ks function \[checked Float\]\) failed an assertion .*Assert failed \[x >= 0.0f\]"):
        np.asarray(jax.jit(lambda x: m.checked(x) * 2)(jnp.float32(-2)))
    assert m.allocator_top() == 0  # the arena went back after the failure
    assert float(m.checked(9.0)) == 3.0


def test_threads_call_at_once_each_in_its_own_arena(relu3: ModuleType) -> None:
    f = jax.jit(relu3.vrelu3)
    xs = [jnp.linspace(-1, 2, 1000 + i, dtype=jnp.float32) for i in range(8)]
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(20):
                results[i] = np.asarray(f(xs[i]))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        np.testing.assert_allclose(results[i], relu3_np(xs[i]), rtol=1e-6)


def test_allocator_functions(relu3: ModuleType) -> None:
    assert relu3.arena_bytes() == 100_000_000
    relu3.set_arena_bytes(1 << 20)
    try:
        assert relu3.arena_bytes() == 1 << 20
        np.asarray(relu3.vrelu3(jnp.ones(10, jnp.float32)))
        relu3.reset_allocator()
        assert relu3.allocator_top() == 0
    finally:
        relu3.set_arena_bytes(100_000_000)
    with pytest.raises(ValueError):
        relu3.set_arena_bytes(0)


def test_export_with_the_custom_call_check_disabled(relu3: ModuleType) -> None:
    x = jnp.ones(4, jnp.float32)
    target = relu3._bindings["vrelu3"].target
    exported = jax.export.export(jax.jit(relu3.vrelu3), disabled_checks=[
        jax.export.DisabledSafetyCheck.custom_call(target)])(x)
    np.testing.assert_allclose(exported.call(x), relu3_np(x), rtol=1e-6)


def test_gradients_inside_shard_map_with_the_default_check_vma(m: ModuleType, relu3: ModuleType) -> None:
    """Inside shard_map a gradient must vary over the mesh axes as its argument does; an FFI call's
    results vary over none, so every binding with a vjp failed ("Custom VJP bwd rule must produce an
    output with the same type"). A sharded argument's gradient is made varying; a replicated one's is
    summed over the shards (here one device: the types are checked all the same)."""
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((1,), ("x",))
    v = jax.device_put(f32(-0.5, 0.5, 1.5, 3.0), jax.NamedSharding(mesh, P("x")))
    w = jax.device_put(f32(2.0, -1.0, 0.5, 1.0), jax.NamedSharding(mesh, P()))
    s = jax.device_put(jnp.float32(1.5), jax.NamedSharding(mesh, P()))
    cases = [  # (function of (v, w, s), in_specs): plain, elementwise; sharded and replicated arguments
        (lambda a, b, c: relu3.vrelu3(a).sum(), (P("x"), P(), P())),
        (lambda a, b, c: relu3.relu3(a).sum(), (P("x"), P(), P())),
        (lambda a, b, c: m.scale(a, c).sum(), (P("x"), P(), P())),     # s replicated: its gradient summed
        (lambda a, b, c: m.mulsin(a, b).sum(), (P("x"), P(), P())),   # w replicated, elementwise
    ]
    for f, specs in cases:
        sharded = jax.shard_map(lambda a, b, c, f=f: jax.lax.psum(f(a, b, c), "x"), mesh=mesh, in_specs=specs,
                                out_specs=P())
        got = jax.jit(jax.grad(sharded, argnums=(0, 1, 2)))(v, w, s)
        want = jax.grad(f, argnums=(0, 1, 2))(*(jnp.asarray(np.asarray(a)) for a in (v, w, s)))  # unsharded
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-6)


SHARD_MAP_TWO_DEVICES = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax, jax.numpy as jnp, numpy as np, ksbind
from jax.sharding import PartitionSpec as P
m = ksbind.build({calls!r}, quiet=True, cache_dir={cache!r})
relu3 = ksbind.build({relu3!r}, quiet=True, cache_dir={cache!r})
mesh = jax.make_mesh((2,), ("x",))
v0 = jnp.asarray(np.array([-0.5, 0.5, 1.5, 3.0], np.float32))
w0 = jnp.asarray(np.array([2.0, -1.0, 0.5, 1.0], np.float32))
s0 = jnp.float32(1.5)
put = lambda a, spec: jax.device_put(a, jax.NamedSharding(mesh, spec))
cases = [(lambda a, b, c: relu3.vrelu3(a).sum(), P()), (lambda a, b, c: relu3.relu3(a).sum(), P()),
         (lambda a, b, c: m.scale(a, c).sum(), P()), (lambda a, b, c: m.mulsin(a, b).sum(), P("x"))]
for f, w_spec in cases:
    specs = (P("x"), w_spec, P())
    sharded = jax.shard_map(lambda a, b, c, f=f: jax.lax.psum(f(a, b, c), "x"), mesh=mesh, in_specs=specs,
                            out_specs=P())
    got = jax.jit(jax.grad(sharded, argnums=(0, 1, 2)))(put(v0, P("x")), put(w0, w_spec), put(s0, P()))
    want = jax.grad(f, argnums=(0, 1, 2))(v0, w0, s0)
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-6)
print("ok")
"""


def test_gradients_inside_shard_map_over_two_devices_sum_a_replicated_arguments_shards() -> None:
    """Two (host) devices: a replicated argument's gradient (scale's s) is the sum of the shards'
    partial gradients, as without shard_map; a sharded one's is each shard's own."""
    code = SHARD_MAP_TWO_DEVICES.format(calls=str(DATA / "calls.yaml"), relu3=str(REPO / "configs" / "relu3_jax.yaml"),
                                        cache=str(session_cache_dir()))
    proc = run_python(code, env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_shape_polymorphic_export(relu3: ModuleType) -> None:
    """Symbolic shapes: an elementwise binding (its result has its arguments' shape) exports and runs
    at any size; one whose result shape ksbind finds by calling it on ones says, naming the binding,
    what to do (it was "'_DimExpr' object cannot be interpreted as an integer")."""
    checks = [jax.export.DisabledSafetyCheck.custom_call(t) for b in relu3._bindings.values()
              for t in (b.target, b.vjp_target, b.jacobian_target) if t]
    (n,) = jax.export.symbolic_shape("n")
    spec = jax.ShapeDtypeStruct((n,), jnp.float32)
    exported = jax.export.export(jax.jit(relu3.relu3), disabled_checks=checks)(spec)
    for size in (3, 5):
        x = jnp.linspace(-1, 2, size, dtype=jnp.float32)
        np.testing.assert_allclose(exported.call(x), relu3.relu3(x), rtol=1e-6)
    with pytest.raises(ValueError, match=r"binding 'vrelu3': its result's shape is found by calling it on ones .* "
                                         r"has the dimension n; give the binding result_shape:"):
        jax.export.export(jax.jit(relu3.vrelu3), disabled_checks=checks)(spec)


def test_the_export_recipe_covers_gradients(relu3: ModuleType) -> None:
    """docs/jax.md's recipe disables the check for every handler of the module (primal, vjp, an
    elementwise binding's derivatives): a gradient exports too (the primal's alone failed)."""
    checks = [jax.export.DisabledSafetyCheck.custom_call(t) for b in relu3._bindings.values()
              for t in (b.target, b.vjp_target, b.jacobian_target) if t]
    x = jnp.asarray([-0.5, 0.5, 1.5, 3.0], jnp.float32)

    def loss(v: Any) -> Any:
        return relu3.vrelu3(v).sum() + relu3.relu3(v).sum()

    want = jax.grad(loss)(x)
    exported = jax.export.export(jax.jit(jax.grad(loss)), disabled_checks=checks)(x)
    np.testing.assert_allclose(exported.call(x), want, rtol=1e-6)
    primal_only = [jax.export.DisabledSafetyCheck.custom_call(relu3._bindings["vrelu3"].target)]
    with pytest.raises(ValueError, match="custom call"):
        jax.export.export(jax.jit(jax.grad(loss)), disabled_checks=primal_only)(x)


# ------------------------------------------------------------ at generation time

DECLS = ksbind.parse_ks("""
(edef texts String (String))
(edef grid (Tensor 2 (Vec Float)) ((Tensor 2 (Vec Float))))
(edef tups Float ((Tensor 2 (Tuple Float Float))))
(edef vrelu3 (Vec Float) ((Vec Float)))
(edef count Integer (Integer))
""", "decls.ks")


@pytest.mark.parametrize("name, why", [
    ("texts", "String holds a String, which no jax array holds"),
    ("grid", r"\(Tensor 2 \(Tensor 1 Float\)\) is a rank-2 tensor of \(Tensor 1 Float\); tensors of tensors or tuples cross as rank 1"),
    ("tups", r"\(Tensor 2 \(Tuple Float Float\)\) is a rank-2 tensor of"),
])
def test_what_cannot_cross_is_refused_when_generating(name: str, why: str) -> None:
    with pytest.raises(BindingError, match=rf"binding '{name}' \(\[{name} .*\): {why}"):
        ksbind.render_module(DECLS, "m", "jax", bindings=[BindingSpec(name)])


def test_mode_and_result_shape_checks() -> None:
    with pytest.raises(BindingError, match="mode elementwise needs a scalar function"):
        ksbind.render_module(DECLS, "m", "jax", bindings=[BindingSpec("vrelu3", mode="elementwise")])
    with pytest.raises(BindingError, match="mode vmap maps over the leading axis of tensor arguments"):
        ksbind.render_module(DECLS, "m", "jax", bindings=[BindingSpec("count", mode="vmap")])
    with pytest.raises(BindingError, match="result_shape is for results holding tensors"):
        ksbind.render_module(DECLS, "m", "jax", bindings=[BindingSpec("count", result_shape="()")])
    with pytest.raises(BindingError, match="result_shape is for targets that must know result shapes"):
        ksbind.render_module(DECLS, "m", "python", bindings=[BindingSpec("vrelu3", result_shape="(3,)")])


def test_result_shape_is_a_config_key(tmp_path: Path) -> None:
    from ksbind.config import load_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\ntarget: jax\ndeclarations: '(edef f (Vec Float) (Integer))'\n"
                   "bindings:\n  - {name: f, result_shape: '(arg0,)'}\n")
    (spec,) = load_config(cfg)
    assert spec.bindings is not None and spec.bindings[0].result_shape == "(arg0,)"
    cfg.write_text("name: c\ntarget: jax\ndeclarations: '(edef f (Vec Float) (Integer))'\n"
                   "bindings:\n  - {name: f, result_shape: [3]}\n")
    with pytest.raises(ConfigError, match="'result_shape'"):
        load_config(cfg)


def test_load_ks_target_jax_with_ksc_and_result_shape() -> None:
    from tests.test_ksc import KSC, RUNTIME

    if not KSC.is_file():
        pytest.skip(f"ksc is not at {KSC} (shared/ksc absent)")
    text = """
(def cube Float (x : Float) (mul x (mul x x)))
(def twice (Vec Float) (v : Vec Float) (build (size v) (lam (i : Integer) (mul 2.0 (index i v)))))
(def ones (Vec Float) (n : Integer) (build n (lam (i : Integer) 1.0)))
"""
    m = ksbind.load_ks(text, bindings=[{"name": "cube", "vjp": "cube_vjp"}, {"name": "twice", "vjp": "twice_vjp"},
                                       {"name": "ones", "result_shape": "(n,)"}],
                       target="jax", ksc=KSC, ksc_runtime=RUNTIME, quiet=True, cache_dir=session_cache_dir())
    assert float(jax.grad(m.cube)(jnp.float32(2))) == 12.0
    v = f32(1, 2, 3)
    np.testing.assert_allclose(jax.jit(m.twice)(v), [2, 4, 6])
    np.testing.assert_allclose(jax.grad(lambda a: m.twice(a).sum())(v), [2, 2, 2])
    np.testing.assert_allclose(m.ones(4), np.ones(4))


def test_a_second_library_of_the_module_registers_per_build_names_and_calls_its_own_handlers(
        relu3: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """FFI target names are process-wide. A second library of the module (its stable names taken
    by the first) registers its handlers under per-build names, saying so, and calls them, never
    the first one's; a third whose per-build names are taken too (a copy in another folder of the
    same name) is refused rather than silently calling another library's handlers."""
    from ksbind.targets.jax import runtime as jax_runtime

    lib = Path(relu3._library._name)
    for b in relu3._bindings.values():  # the fixture's own handlers (under their stable names, unless
        for t in (b.target, b.vjp_target, b.jacobian_target):  # another test loaded relu3_jax first)
            assert t is None or jax_runtime._registered[t] == str(lib)
    copies = [tmp_path / d / "relu3_jax_jaxffi-copy" for d in ("a", "b")]
    namespaces: list[dict[str, Any]] = []
    for folder in copies:
        folder.mkdir(parents=True)
        shutil.copy(lib, folder / lib.name)
        namespaces.append({"__file__": str(folder / "relu3_jax.py"), "__name__": "relu3_jax"})
    caplog.set_level("INFO", logger="ksbind")
    jax_runtime.install(namespaces[0], lib.name, relu3.BINDINGS, arena_bytes=1 << 20, logging=False)
    copy = namespaces[0]["_bindings"]["vrelu3"]
    assert (copy.target, copy.vjp_target) == ("ksbind.relu3_jax_jaxffi_copy.ksbind_jax_vrelu3",
                                              "ksbind.relu3_jax_jaxffi_copy.ksbind_jax_vrelu3_vjp")
    assert jax_runtime._registered[copy.target] == str(copies[0] / lib.name)
    (record,) = [r for r in caplog.records if "per-build names" in r.getMessage()]
    assert record.levelname == "INFO" and record.name == "ksbind"
    assert re.search(r"^relu3_jax: another library in this process registered these FFI target names first: "
                     r"ksbind\.relu3_jax\.ksbind_jax_relu3\.[0-9a-f]{12} \(from .*\); .* a jax\.export of this "
                     r"module names those", record.getMessage())
    x = f32(-0.5, 0.5, 1.5, 3.0)
    np.testing.assert_allclose(jax.jit(namespaces[0]["vrelu3"])(x), relu3_np(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: namespaces[0]["relu3"](v).sum())(x), drelu3_np(x), rtol=1e-6)
    with pytest.raises(ImportError, match=r"relu3_jax: FFI target 'ksbind\.relu3_jax_jaxffi_copy\..*' is already "
                                          r"registered from " + re.escape(str(copies[0] / lib.name)) + ", not "
                                          + re.escape(str(copies[1] / lib.name))):
        jax_runtime.install(namespaces[1], lib.name, relu3.BINDINGS, arena_bytes=1 << 20, logging=False)


EXPORT_FROM_ONE_BUILD = """
import re, jax, jax.numpy as jnp, ksbind
m = ksbind.build({config!r}, quiet=True, cache_dir={cache!r})
targets = [t for b in m._bindings.values() for t in (b.target, b.vjp_target, b.jacobian_target) if t]
assert all(re.fullmatch(r"ksbind\\.relu3_jax\\.ksbind_jax_\\w+\\.[0-9a-f]{{12}}", t) for t in targets), targets
checks = [jax.export.DisabledSafetyCheck.custom_call(t) for t in targets]
x = jnp.asarray([-0.5, 0.5, 1.5, 3.0], jnp.float32)
loss = lambda v: m.vrelu3(v).sum() + m.relu3(v).sum()
for name, f in (("vrelu3", m.vrelu3), ("grad", jax.grad(loss))):
    with open({out!r} + "/" + name + ".bin", "wb") as fh:
        fh.write(jax.export.export(jax.jit(f), disabled_checks=checks)(x).serialize())
print("ok")
"""

RUN_AGAINST_ANOTHER_BUILD = """
import logging, re, jax, jax.numpy as jnp, numpy as np, ksbind
records = []
handler = logging.Handler()
handler.emit = records.append
logging.getLogger("ksbind").addHandler(handler)
logging.getLogger("ksbind").setLevel(logging.INFO)
edited = ksbind.build({edited!r}, quiet=True, cache_dir={other_cache!r})
x = jnp.asarray([-0.5, 0.5, 1.5, 3.0], jnp.float32)
relu3 = np.where(x < 0, 0, np.where(x < 1, x ** 3 / 3, x - 2 / 3))
load = lambda name: jax.export.deserialize(bytearray(open({out!r} + "/" + name + ".bin", "rb").read()))
# The artifacts name the handlers by their stable names: this process has only the edited build's.
np.testing.assert_allclose(load("vrelu3").call(x), relu3 + 1, rtol=1e-6)
np.testing.assert_allclose(load("grad").call(x), jax.grad(lambda v: edited.vrelu3(v).sum() + edited.relu3(v).sum())(x),
                           rtol=1e-6)
# The first build in the same process (under a versioned name, relu3_jax_vKEY): its stable names
# (those of relu3_jax, the name it was versioned from) are taken, so it takes per-build ones.
first = ksbind.build({config!r}, quiet=False, cache_dir={cache!r})
assert first.__name__.startswith("relu3_jax_v"), first.__name__
target = first._bindings["vrelu3"].target
assert re.fullmatch(r"ksbind\\.relu3_jax_v\\w+_jaxffi_[0-9a-f]+\\.ksbind_jax_vrelu3", target), target
assert all(b.target.startswith("ksbind.relu3_jax.ksbind_jax_") for b in edited._bindings.values())
notes = [r.getMessage() for r in records if "per-build names" in r.getMessage()]
assert len(notes) == 1 and notes[0].startswith(first.__name__ + ": another library"), notes
for f in (lambda v: v, jax.jit):
    np.testing.assert_allclose(f(first.vrelu3)(x), relu3, rtol=1e-6)
    np.testing.assert_allclose(f(edited.vrelu3)(x), relu3 + 1, rtol=1e-6)
np.testing.assert_allclose(load("vrelu3").call(x), relu3 + 1, rtol=1e-6)
print("ok")
"""


def test_an_exported_artifact_runs_against_another_build_of_the_module(tmp_path: Path) -> None:
    """FFI target names are stable across rebuilds of a module whose handlers keep their signatures:
    an artifact exported (with a gradient) from one build runs in a process where only another build
    of the module is loaded, here edited (vrelu3 adds 1) and built in another cache. Loading the first
    build there too, its handlers take per-build names (logged) and each module calls its own."""
    if importlib.util.find_spec("flatbuffers") is None and not os.environ.get("CI"):
        pytest.skip("jax.export's serialization needs flatbuffers (pip install flatbuffers; the test extra has it)")
    config = REPO / "configs" / "relu3_jax.yaml"
    src = tmp_path / "edited"
    src.mkdir()
    shutil.copy(REPO / "examples" / "relu3" / "relu3.ks", src / "relu3.ks")
    cpp = (REPO / "examples" / "relu3" / "relu3.cpp").read_text()
    line = "ret[i] = relu3$af($alloc, t[i]);"
    assert cpp.count(line) == 1
    (src / "relu3.cpp").write_text(cpp.replace(line, "ret[i] = relu3$af($alloc, t[i]) + 1.0f;"))
    edited = src / "relu3_jax.yaml"
    edited.write_text(config.read_text().replace("../examples/relu3/", "").replace("../build/relu3_jax",
                                                                                  str(tmp_path / "out")))
    values = {"config": str(config), "cache": str(session_cache_dir()), "out": str(tmp_path),
              "edited": str(edited), "other_cache": str(tmp_path / "cache")}
    for code in (EXPORT_FROM_ONE_BUILD, RUN_AGAINST_ANOTHER_BUILD):
        proc = run_python(code.format(**values), env={"PYTHONPATH": str(REPO)})
        assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


# ------------------------------------------------------------ the build's units

@pytest.mark.parametrize("config, module, loops", [(DATA / "calls.yaml", "jax_calls", True),
                                                   (REPO / "examples" / "gmm" / "gmm.yaml", "gmm_jax", False)])
def test_the_users_unit_holds_nothing_of_xla_and_the_handlers_are_a_unit_of_their_own(
        config: Path, module: str, loops: bool, tmp_path: Path) -> None:
    """The user's C++ compiles with the entry points only (so its cost is about g++ alone's), the
    handlers apart at -O2 (in parallel); checked on what the preprocessor really includes."""
    import dataclasses
    import subprocess

    from ksbind.codegen.output import write_generated
    from ksbind.config import load_config
    from ksbind.pipeline import render_spec
    from ksbind.targets.jax import build as jax_build

    spec = next(s for s in load_config(config) if s.name == module)
    spec = dataclasses.replace(spec, output=tmp_path / "out", fast_math=True)
    units = jax_build.jax_units(spec, write_generated(spec.output, render_spec(spec)), None)
    assert [u.source.name for u in units[:2]] == ["jax_unit.cpp", "jax_handlers.cpp"]
    user, handlers = units[0], units[1]
    assert "-O2" in handlers.flags and "-ffinite-math-only" not in handlers.flags  # fast_math: the user's code only
    assert "-ffinite-math-only" in user.flags
    tc = jax_build.toolchain(spec)

    def headers(u: Any) -> str:
        cmd = [*tc.cxx, *tc.compile_args(u.flags), "-M", str(u.source)]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

    user_headers, handler_headers = headers(user), headers(handlers)
    assert "xla/ffi" not in user_headers and "ksbind/jax.h" not in user_headers
    assert ("ksbind/jax_entry.h" in user_headers) == loops  # the loops' header only where a loop is
    assert all(str(p) in user_headers for p in spec.cpp)
    assert "xla/ffi/api/ffi.h" in handler_headers and "jax_entry_points.h" in handler_headers
    assert not any(str(p) in handler_headers for p in spec.cpp)


def test_the_ffi_headers_are_found_as_jax_finds_them() -> None:
    from ksbind.targets.jax import build as jax_build

    assert jax_build.ffi_include_dir() == Path(jax.ffi.include_dir())
    assert (jax_build.ffi_include_dir() / "xla" / "ffi" / "api" / "ffi.h").is_file()
