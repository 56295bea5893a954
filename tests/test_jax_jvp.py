"""Forward mode on the jax target: bindings with a jvp (``jvp:``, ksc's ``[fwd F]``), built
once from tests/data/jax/fwd.yaml with the real ksc. jax.jvp, jacfwd and linearize go
through the jvp's FFI handler (eager and jit; plain, elementwise and vmap modes; tuples,
an Integer argument's float0 tangent; under jax.vmap), checked against the analytic
derivatives; a binding with a vjp too keeps jax.grad/vjp/jacrev (the jvp's transpose is the
vjp); reverse mode of a jvp-only binding and second derivatives are errors naming it.

Skipped without jax or ksc (in CI both are required: tests/test_jax.py, tests/conftest.py)."""
from __future__ import annotations

import dataclasses
import os
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import ksbind
from ksbind.config import load_config
from ksbind.spec import BindingSpec
from tests.e2e_support import session_cache_dir
from tests.test_ksc import KSC, RUNTIME

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs jax for tests/test_jax_jvp.py (scripts/setup.sh installs jax==0.10.2)") from None
    jax = None  # type: ignore[assignment]
pytestmark = pytest.mark.skipif(jax is None, reason="jax is not installed (pip install 'ksbind[jax]')")

FWD = os.path.join(os.path.dirname(__file__), "data", "jax", "fwd.yaml")
TWICE = r"binding '{}' cannot be differentiated twice: .*second derivatives .* are not available"
NO_VJP = r"binding '{}' has a jvp but no vjp; give it vjp:"


def test_a_jvp_is_a_handler_of_its_own_in_the_generated_module() -> None:
    """Rendered only (no compiler, no ksc: the jvps are declared): the jvp's handler takes the
    arguments, then their tangents (a ks::Tuple<> for an Integer's, no buffer); it has no shape
    probe (its shapes are the primal's); an elementwise binding's is a loop over 2 Float inputs."""
    decls = ksbind.parse_ks("(edef f Float (Float (Vec Float) Integer))\n"
                            "(edef [fwd f] Float ((Tuple Float (Vec Float) Integer) (Tuple Float (Vec Float) (Tuple))))\n"
                            "(edef g Float (Float)) (edef [fwd g] Float (Float Float))")
    files = ksbind.render_module(decls, "mj", "jax", bindings=[BindingSpec("f", jvp="f_jvp"),
                                                               BindingSpec("g", jvp="g_jvp", mode="elementwise")]).files
    handlers = files["jax_handlers.cpp"]
    assert "XLA_FFI_DEFINE_HANDLER_SYMBOL(ksbind_jax_f_jvp, " in handlers
    assert "ks::Integer, ks::Float, ks::tensor<1, ks::Float>, ks::Tuple<>>(ksbind_jax_f_jvp_site" in handlers
    assert "ksbind_jax_probe_f(" in handlers and "ksbind_jax_probe_f_jvp" not in handlers
    assert "jt::elementwise<2, 1>(ksbind_jax_g_jvp_site" in handlers
    assert "jvp='f_jvp',\n        jvp_handler='ksbind_jax_f_jvp'" in files["mj.py"]
    assert "def f_jvp(arg0: jax.Array | float, arg1: jax.Array, arg2: jax.Array, darg0: jax.Array | float, " \
           "darg1: jax.Array, darg2: tuple[()]) -> jax.Array:" in files["mj.pyi"]


@pytest.fixture(scope="module")
def m() -> ModuleType:
    if not KSC.is_file():
        pytest.skip(f"ksc is not at {KSC} (shared/ksc absent)")
    [spec] = load_config(FWD)
    assert spec.ksc is not None
    spec = dataclasses.replace(spec, ksc=dataclasses.replace(spec.ksc, path=KSC, runtime=RUNTIME))
    return ksbind.build(spec, quiet=True, cache_dir=session_cache_dir())


def f32(*values: Any) -> Any:
    return jnp.asarray(np.array(values, dtype=np.float32))


def close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want, dtype=np.float64), rtol=2e-6, atol=1e-6)


def wrapper(how: str) -> Any:
    return jax.jit if how == "jit" else (lambda f: f)


X, V = np.float32(1.5), np.array([1, -2, 0.5], np.float32)
DX, DV = np.float32(0.5), np.array([1, 2, 3], np.float32)
FLOAT0 = np.zeros((), dtype=jax.dtypes.float0) if jax is not None else None


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_plain_bindings_in_forward_mode_with_tuples_and_an_integer(m: ModuleType, how: str) -> None:
    wrap = wrapper(how)
    x, v, dx, dv = jnp.float32(X), jnp.asarray(V), jnp.float32(DX), jnp.asarray(DV)
    # dot(x, v) = x^2 + x sum(v)
    want = (2 * X + V.sum()) * DX + X * DV.sum()
    y, t = wrap(lambda a, b, da, db: jax.jvp(m.dot, (a, b), (da, db)))(x, v, dx, dv)
    close(y, X * X + X * V.sum())
    close(t, want)
    jx, jv = wrap(jax.jacfwd(m.dot, argnums=(0, 1)))(x, v)
    close(jx, 2 * X + V.sum())
    close(jv, np.full(3, X))
    _, lin = jax.linearize(m.dot, x, v)
    close(wrap(lin)(dx, dv), want)
    close(m.dot_jvp(x, v, dx, dv), want)  # the jvp binding itself
    close(m.dot_jvp(x, v, dv=dv, dx=dx), want)
    # pack((x, v), n) = (x n, n, x v^2): a tuple argument, an Integer (float0 tangent), a tuple result
    out, tout = wrap(lambda p, dp: jax.jvp(lambda q: m.pack(q, 3), (p,), (dp,)))((x, v), (dx, dv))
    close(out[2], X * V * V)
    close(tout[0], 3 * DX)
    assert tout[1].dtype == jax.dtypes.float0 and tout[1].shape == ()
    close(tout[2], DX * V * V + 2 * X * V * DV)
    _, tout = jax.jvp(m.pack, ((x, v), jnp.int32(3)), ((dx, dv), FLOAT0))
    close(tout[0], 3 * DX)
    t0, none, t2 = m.pack_jvp((x, v), 3, (dx, dv), ())  # ks's tangent of the result: () for the Integer
    assert none == ()
    close(t0, 3 * DX)
    close(m.pack_jvp((x, v), 3, (dx, dv))[0], 3 * DX)  # the Integer's tangent may be left out
    close(t2, DX * V * V + 2 * X * V * DV)


def test_tangents_of_arguments_named_like_tangents_have_names_of_their_own(m: ModuleType) -> None:
    # collide(x, dx, ddx) = x dx ddx: its jvp's tangents are dddx, ddddx, dddddx (each unique)
    x, y, z = jnp.float32(1.5), jnp.float32(-2.0), jnp.float32(0.5)
    want = 0.25 * (-2.0 * 0.5) + 1.0 * (1.5 * 0.5) + 4.0 * (1.5 * -2.0)
    close(m.collide_jvp(x, y, z, dddx=jnp.float32(0.25), ddddx=jnp.float32(1.0), dddddx=jnp.float32(4.0)), want)
    close(jax.jvp(m.collide, (x, y, z), (jnp.float32(0.25), jnp.float32(1.0), jnp.float32(4.0)))[1], want)
    with pytest.raises(TypeError, match="multiple values for argument 'ddx'"):  # ddx is an argument's name
        m.collide_jvp(x, y, z, 0.25, 1.0, ddx=4.0)


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_elementwise_bindings_in_forward_mode_broadcast_and_under_vmap(m: ModuleType, how: str) -> None:
    wrap = wrapper(how)
    xs = jnp.linspace(-1.5, 2.0, 6, dtype=jnp.float32).reshape(2, 3)
    ts = jnp.cos(xs)
    # cube (a jvp, no vjp): 3 x^2 dx, elementwise over any shape
    y, t = wrap(lambda a, da: jax.jvp(m.cube, (a,), (da,)))(xs, ts)
    close(y, np.asarray(xs) ** 3)
    close(t, 3 * np.asarray(xs) ** 2 * np.asarray(ts))
    close(wrap(jax.jacfwd(m.cube))(xs[0]), np.diag(3 * np.asarray(xs[0]) ** 2))
    _, lin = jax.linearize(m.cube, xs)
    close(wrap(lin)(ts), 3 * np.asarray(xs) ** 2 * np.asarray(ts))
    close(m.cube_jvp(xs, ts), 3 * np.asarray(xs) ** 2 * np.asarray(ts))
    # mulsin(a, b) = a sin b over broadcast shapes: (2, 3) with (3,)
    b, db = jnp.asarray(V), jnp.asarray(DV)
    _, t = wrap(lambda *a: jax.jvp(m.mulsin, a[:2], a[2:]))(xs, b, ts, db)
    a_, t_ = np.asarray(xs, np.float64), np.asarray(ts, np.float64)
    close(t, np.sin(V) * t_ + a_ * np.cos(V) * DV)
    close(m.mulsin_jvp(xs, b, ts, db), np.sin(V) * t_ + a_ * np.cos(V) * DV)
    # jax.vmap of a jvp, and a jvp of jax.vmap: the same loop over the bigger array
    _, t = wrap(jax.vmap(lambda a, da: jax.jvp(m.cube, (a,), (da,))))(xs, ts)
    close(t, 3 * a_ ** 2 * t_)
    _, t = wrap(lambda *a: jax.jvp(jax.vmap(m.mulsin, in_axes=(0, None)), a[:2], a[2:]))(xs, b, ts, db)
    close(t, np.sin(V) * t_ + a_ * np.cos(V) * DV)


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_vmap_mode_bindings_in_forward_mode(m: ModuleType, how: str) -> None:
    wrap = wrapper(how)
    vs = jnp.linspace(-1, 2, 6, dtype=jnp.float32).reshape(2, 3)
    dvs = jnp.sin(vs) + 1
    v_, d_ = np.asarray(vs, np.float64), np.asarray(dvs, np.float64)
    # sq: each row squared; its jacfwd (through the jvp) is its jacrev (through the vjp)
    _, t = wrap(lambda a, da: jax.jvp(m.sq, (a,), (da,)))(vs, dvs)
    close(t, 2 * v_ * d_)
    jf = wrap(jax.jacfwd(m.sq))(vs)
    assert jf.shape == (2, 3, 2, 3)
    close(jf, wrap(jax.jacrev(m.sq))(vs))
    close(jf.reshape(6, 6), np.diag(2 * v_.ravel()))
    # scaled(v, s) = s sin v, s shared by every row (a jvp only): tangents of both
    s, ds = jnp.float32(1.5), jnp.float32(-0.5)
    _, t = wrap(lambda *a: jax.jvp(m.scaled, a[:2], a[2:]))(vs, s, dvs, ds)
    close(t, 1.5 * np.cos(v_) * d_ - 0.5 * np.sin(v_))
    close(wrap(jax.jacfwd(m.scaled, argnums=1))(vs, s), np.sin(v_))
    close(m.scaled_jvp(vs, s, dvs, ds), 1.5 * np.cos(v_) * d_ - 0.5 * np.sin(v_))
    # jax.vmap over a jvp: one more leading batch axis
    _, t = wrap(jax.vmap(lambda a, da: jax.jvp(m.sq, (a,), (da,))))(jnp.stack([vs, -vs]), jnp.stack([dvs, dvs]))
    close(t, np.stack([2 * v_ * d_, -2 * v_ * d_]))


def central_difference(f: Any, args: tuple[Any, ...], tangents: tuple[Any, ...], eps: float = 1e-3) -> Any:
    """(f(args + eps t) - f(args - eps t)) / 2 eps, the arguments moved in float64, rounded to float32."""
    def at(sign: float) -> Any:
        moved = [jnp.asarray((np.asarray(a, np.float64) + sign * eps * np.asarray(t, np.float64)).astype(np.float32))
                 for a, t in zip(args, tangents)]
        return np.asarray(f(*moved), np.float64)

    return (at(1.0) - at(-1.0)) / (2 * eps)


@pytest.mark.parametrize("name, args", [
    ("dot", (np.float32(0.7), np.array([0.5, -1.5, 2.0], np.float32))),                    # plain
    ("mulsin", (np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), V)),               # elementwise, broadcast
    ("sq", (np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3),)),                       # vmap mode
    ("rows", (np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),)),                    # a tensor of tensors
])
def test_forward_mode_matches_central_differences(m: ModuleType, name: str, args: tuple[Any, ...]) -> None:
    """Against finite differences: float64 steps of 1e-3 over float32 kernels keep rounding (about
    1e-4 relative) and truncation (1e-6 times the third derivative) under the 2e-3 tolerance."""
    f = getattr(m, name)
    rng = np.random.default_rng(5)
    tangents = tuple(rng.standard_normal(np.shape(a)).astype(np.float32) for a in args)
    _, t = jax.jit(lambda *a: jax.jvp(f, a[:len(args)], a[len(args):]))(*map(jnp.asarray, args),
                                                                         *map(jnp.asarray, tangents))
    np.testing.assert_allclose(np.asarray(t), central_difference(f, args, tangents), rtol=2e-3, atol=2e-3)


def test_a_binding_with_both_keeps_reverse_mode_through_its_vjp(m: ModuleType) -> None:
    """jax.grad is linearize + transpose: the jvp's transpose calls the vjp's handler. The two
    agree: <jvp(t), g> = <t, vjp(g)>."""
    x, v = jnp.float32(X), jnp.asarray(V)
    for wrap in (wrapper("eager"), jax.jit):
        gx, gv = wrap(jax.grad(m.dot, argnums=(0, 1)))(x, v)
        close(gx, 2 * X + V.sum())
        close(gv, np.full(3, X))
        gp = wrap(jax.grad(lambda p: m.pack(p, 3)[0] + m.pack(p, 3)[2].sum()))((x, v))
        close(gp[0], 3 + (V * V).sum())
        close(gp[1], 2 * X * V)
    vs = jnp.stack([v, 2 * v])
    close(jax.jacrev(m.sq)(vs).reshape(6, 6), np.diag(2 * np.asarray(vs, np.float64).ravel()))
    a, b = jnp.linspace(-1, 1, 6, dtype=jnp.float32).reshape(2, 3), v
    da, db = jax.jit(jax.grad(lambda p, q: m.mulsin(p, q).sum(), argnums=(0, 1)))(a, b)
    close(da, np.broadcast_to(np.sin(V), (2, 3)))
    close(db, np.asarray(a, np.float64).sum(0) * np.cos(V))  # summed back to b's shape
    # under jax.vmap either way round
    xs, vss = jnp.asarray([1.0, -2.0], jnp.float32), jnp.stack([v, -v])
    close(jax.vmap(jax.grad(m.dot))(xs, vss), 2 * np.asarray(xs) + np.asarray(vss).sum(1))
    close(jax.grad(lambda p, q: jax.vmap(m.dot)(p, q).sum())(xs, vss), 2 * np.asarray(xs) + np.asarray(vss).sum(1))
    # the adjoint identity, with a tuple and an Integer
    t, g = (jnp.float32(DX), jnp.asarray(DV)), (jnp.float32(0.25), FLOAT0, jnp.asarray(V[::-1]))
    _, tout = jax.jvp(lambda p: m.pack(p, 3), ((x, v),), (t,))
    _, pull = jax.vjp(lambda p: m.pack(p, 3), (x, v))
    (ct,) = pull(g)
    lhs = float(tout[0] * g[0]) + float(jnp.vdot(tout[2], g[2]))
    rhs = float(t[0] * ct[0]) + float(jnp.vdot(t[1], ct[1]))
    assert abs(lhs - rhs) <= 1e-5 * max(1.0, abs(lhs))


def test_forward_and_reverse_mode_inside_shard_map_and_exported(m: ModuleType) -> None:
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((1,), ("x",))
    v = jax.device_put(f32(1, 2, 3, 4), jax.NamedSharding(mesh, P("x")))
    w = jax.device_put(f32(0.5, -1, 2, 1), jax.NamedSharding(mesh, P()))
    s = jax.device_put(jnp.float32(1.5), jax.NamedSharding(mesh, P()))
    plain = (jnp.asarray(np.asarray(v)), jnp.asarray(np.asarray(w)), jnp.float32(1.5))
    for f in (lambda a, b, c: m.dot(c, a), lambda a, b, c: m.mulsin(a, b).sum()):
        sharded = jax.shard_map(lambda a, b, c, f=f: jax.lax.psum(f(a, b, c), "x"), mesh=mesh,
                                in_specs=(P("x"), P(), P()), out_specs=P())
        for got, want in zip(jax.jit(jax.grad(sharded, argnums=(0, 1, 2)))(v, w, s),
                             jax.grad(f, argnums=(0, 1, 2))(*plain)):
            close(got, want)
        close(jax.jit(lambda *a, g=sharded: jax.jvp(g, a, a)[1])(v, w, s), jax.jvp(f, plain, plain)[1])
    checks = [jax.export.DisabledSafetyCheck.custom_call(t) for b in m._bindings.values()
              for t in (b.target, b.vjp_target, b.jacobian_target, b.jvp_target) if t]
    x = f32(1, 2, 3)
    exported = jax.export.export(jax.jit(lambda a: jax.jvp(m.cube, (a,), (a,))[1]), disabled_checks=checks)(x)
    close(exported.call(x), 3 * np.asarray(x) ** 3)


def test_reverse_mode_of_a_jvp_only_binding_names_it(m: ModuleType) -> None:
    xs, vs = f32(0.5, 1.0), jnp.ones((2, 3), jnp.float32)
    with pytest.raises(TypeError, match=NO_VJP.format("cube")):
        jax.grad(lambda a: m.cube(a).sum())(xs)
    with pytest.raises(TypeError, match=NO_VJP.format("cube")):
        jax.jit(jax.jacrev(m.cube))(xs)
    _, pull = jax.vjp(lambda a: m.scaled(a, 2.0), vs)  # the forward (a linearize) works
    with pytest.raises(TypeError, match=NO_VJP.format("scaled")):
        pull(vs)


def test_second_derivatives_name_the_binding(m: ModuleType) -> None:
    x, v = jnp.float32(X), jnp.asarray(V)
    for binding, f in [("dot", lambda a: m.dot(a, v)), ("cube", m.cube), ("mulsin", lambda a: m.mulsin(a, a))]:
        for second in (jax.hessian, lambda g: jax.jacfwd(jax.jacfwd(g)), lambda g: jax.grad(jax.grad(g))):
            with pytest.raises(TypeError, match=TWICE.format(binding)):
                jax.jit(second(f))(x)
    with pytest.raises(TypeError, match=TWICE.format("dot")):  # grad of a jvp
        jax.grad(lambda a: jax.jvp(m.dot, (a, v), (jnp.float32(1), v))[1])(x)
    # a jvp is linear in its tangents: differentiating it there is no second derivative
    _, t = jax.jvp(lambda d: jax.jvp(m.dot, (x, v), (d, v))[1], (jnp.float32(1),), (jnp.float32(1),))
    close(t, 2 * X + V.sum())
