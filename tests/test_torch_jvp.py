"""Forward mode on the torch target: a binding's ``jvp:`` ([fwd F]) under
torch.autograd.forward_ad, torch.func.jvp, jacfwd and vmap over them, against
finite differences and against the same function written in torch; plain,
elementwise and vmap bindings; tuples, Integer arguments and tensors of tensors;
a binding with a vjp and a jvp; the errors (no jvp, second order, a jvp ksc
cannot derive).

The hand-written [fwd F] of examples/torch_ops (configs/torch_ops.yaml, the
session's torch_ops module) need no ksc; the module built here from ks text does.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402
import torch.autograd.forward_ad as fwAD  # noqa: E402

import ksbind  # noqa: E402
from ksbind.errors import BindingError, KscJvpError  # noqa: E402
from tests.e2e_support import session_cache_dir  # noqa: E402
from tests.test_ksc import KSC, RUNTIME, needs_ksc  # noqa: E402

#: Central differences in float64 over a float32 kernel: the step keeps rounding (about
#: 6e-8 / 1e-3 relative) and truncation (1e-6 x the third derivative) well under the tolerance.
EPS = 1e-3
FD_TOL = 2e-3


def finite_difference(f: Callable[..., Any], args: tuple[Any, ...], tangents: tuple[Any, ...]) -> torch.Tensor:
    """(f(args + eps t) - f(args - eps t)) / 2 eps, arguments moved in float64 and rounded to float32."""
    def at(sign: float) -> torch.Tensor:
        moved = tuple(a if t is None else (a.double() + sign * EPS * t.double()).float()
                      for a, t in zip(args, tangents))
        return f(*moved).double()

    return (at(1.0) - at(-1.0)) / (2 * EPS)


def jvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """torch.func.jvp's (output, tangent)."""
    result = torch.func.jvp(f, primals, tangents)
    return result[0], result[1]


def scale_add_ref(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    return n * a * b + a


# ------------------------------------------------------------ hand-written [fwd F] (torch_ops)

def test_jvp_of_a_plain_binding_matches_finite_differences_and_torch(ops: ModuleType) -> None:
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(5, generator=g), torch.randn(5, generator=g)
    da, db = torch.randn(5, generator=g), torch.randn(5, generator=g)
    out, tangent = jvp(lambda a, b: ops.scale_add(a, b, 3), (a, b), (da, db))
    want, want_tangent = jvp(lambda a, b: scale_add_ref(a, b, 3), (a, b), (da, db))
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(tangent, want_tangent)
    fd = finite_difference(lambda a, b: ops.scale_add(a, b, 3), (a, b), (da, db))
    torch.testing.assert_close(tangent.double(), fd, rtol=FD_TOL, atol=FD_TOL)
    # The jvp binding itself: the arguments, then one tangent each (() for the Integer).
    torch.testing.assert_close(ops.scale_add_jvp(a, b, 3, da, db, ()), want_tangent)
    torch.testing.assert_close(ops.scale_add_jvp(a=a, b=b, n=3, da=da, db=db, dn=()), want_tangent)


def test_forward_ad_dual_tensors_carry_the_tangent(ops: ModuleType) -> None:
    """The dual tensor's tangent reaches [fwd F] (it used to be dropped without a word), also
    mixed with torch's own ops and with a tensor that has none."""
    a, b = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.5, 0.25, -2.0])
    da = torch.tensor([1.0, 2.0, -1.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(a, da)
        out = ops.scale_add(dual, b, 2) + dual
        tangent = fwAD.unpack_dual(out).tangent
    torch.testing.assert_close(tangent, da * (2 * b + 1) + da)


def test_jacfwd_equals_jacrev_and_vmap_of_jvp_equals_the_loop(ops: ModuleType) -> None:
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(4, generator=g), torch.randn(4, generator=g)
    fwd = torch.func.jacfwd(ops.scale_add, argnums=(0, 1))(a, b, 2)
    rev = torch.func.jacrev(ops.scale_add, argnums=(0, 1))(a, b, 2)
    for f, r in zip(fwd, rev):
        torch.testing.assert_close(f, r)
    tangents = torch.randn(3, 4, generator=g)

    def jvp_of(t: torch.Tensor) -> torch.Tensor:
        return jvp(lambda a: ops.scale_add(a, b, 2), (a,), (t,))[1]

    torch.testing.assert_close(torch.vmap(jvp_of)(tangents), torch.stack([jvp_of(t) for t in tangents]))


def test_elementwise_binding_gets_the_tangent_elementwise_with_broadcasting(ops: ModuleType) -> None:
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(3, 4, generator=g), torch.randn(4, generator=g)
    dx, dy = torch.randn(3, 4, generator=g), torch.randn(4, generator=g)
    out, tangent = jvp(ops.mulsin, (x, y), (dx, dy))
    torch.testing.assert_close(out, x * torch.sin(y))
    torch.testing.assert_close(tangent, dx * torch.sin(y) + x * torch.cos(y) * dy)
    torch.testing.assert_close(tangent.double(), finite_difference(ops.mulsin, (x, y), (dx, dy)),
                               rtol=FD_TOL, atol=FD_TOL)
    jac = torch.func.jacfwd(ops.mulsin)(torch.tensor([0.5, 1.0]), torch.tensor([2.0, -1.0]))
    torch.testing.assert_close(jac, torch.diag(torch.sin(torch.tensor([2.0, -1.0]))))


def test_vmap_mode_binding_maps_the_tangent_over_rows(ops: ModuleType) -> None:
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
    da = torch.randn(3, 4, generator=g)
    out, tangent = jvp(lambda a: ops.scale_add_rows(a, b, 2), (a,), (da,))
    torch.testing.assert_close(out, scale_add_ref(a, b, 2))
    torch.testing.assert_close(tangent, da * (2 * b + 1))
    fd = finite_difference(lambda a: ops.scale_add_rows(a, b, 2), (a,), (da,))
    torch.testing.assert_close(tangent.double(), fd, rtol=FD_TOL, atol=FD_TOL)
    with fwAD.dual_level():
        dual_tangent = fwAD.unpack_dual(ops.scale_add_rows(fwAD.make_dual(a, da), b, 2)).tangent
    torch.testing.assert_close(dual_tangent, tangent)


@pytest.mark.parametrize("second", ["hessian", "jacfwd_jacfwd"])
def test_second_order_is_a_clear_error_naming_the_binding(ops: ModuleType, second: str) -> None:
    a, b = torch.tensor([0.5, 1.5]), torch.tensor([1.0, -1.0])

    def total(a: torch.Tensor) -> torch.Tensor:
        return ops.scale_add(a, b, 2).sum()

    with pytest.raises(RuntimeError, match="scale_add: (a second derivative|double backward) is not supported"):
        if second == "hessian":
            torch.func.hessian(total)(a)
        else:
            torch.func.jacfwd(torch.func.jacfwd(lambda a: ops.scale_add(a, b, 2)))(a)


def test_a_binding_without_jvp_still_says_so(ops: ModuleType) -> None:
    with pytest.raises(NotImplementedError, match=r"vrelu3: forward-mode AD .* this binding has no jvp; "
                                                  r"give it one \(a config's jvp: vrelu3_jvp"):
        jvp(ops.vrelu3, (torch.tensor([0.5]),), (torch.ones(1),))


# ------------------------------------------------------------ [fwd F] derived by ksc

KS = """\
(def g Float (x : Float) (mul x x))
(def f Float ((x : Float) (v : Vec Float)) (add (g x) (mul x (sum v))))
(def tup (Tuple Float Integer) ((p : Tuple Float (Vec Float)) (n : Integer))
     (tuple (mul (get$1$2 p) (sum (get$2$2 p))) (add n 1)))
(def rows (Vec Float) (m : Vec (Vec Float))
     (build (size m) (lam (i : Integer) (let (r (index i m)) (sum (build (size r) (lam (j : Integer)
        (mul (index j r) (index j r)))))))))
(def sq (Vec Float) ((v : Vec Float) (w : Vec Float))
     (build (size v) (lam (i : Integer) (mul (index i w) (mul (index i v) (index i v))))))
(def lam_map (Vec Float) (v : Vec Float) (map (lam (t : Float) (mul t t)) v))
(def collide Float ((x : Float) (dx : Float) (ddx : Float)) (mul x (mul dx ddx)))
"""


@pytest.fixture(scope="module")
def fwd() -> ModuleType:
    return ksbind.load_ks(KS, bindings=[
        {"name": "f", "vjp": "f_vjp", "jvp": "f_jvp"},
        {"name": "tup", "jvp": "tup_jvp"},
        {"name": "rows", "jvp": "rows_jvp"},
        {"name": "sq_rows", "function": "sq", "jvp": "sq_rows_jvp", "mode": "vmap"},
        {"name": "collide", "jvp": "collide_jvp"},
    ], target="torch", ksc=KSC, ksc_runtime=RUNTIME, cache_dir=session_cache_dir(), quiet=True)


@needs_ksc
def test_ksc_fwd_of_floats_and_tensors_with_a_vjp_beside_it(fwd: ModuleType) -> None:
    x, v = torch.tensor(1.5), torch.tensor([0.5, -2.0, 1.0])
    dx, dv = torch.tensor(0.7), torch.tensor([1.0, 0.5, -1.0])
    _, tangent = jvp(fwd.f, (x, v), (dx, dv))
    torch.testing.assert_close(tangent, dx * (2 * x + v.sum()) + x * dv.sum())
    torch.testing.assert_close(tangent.double(), finite_difference(fwd.f, (x, v), (dx, dv)),
                               rtol=FD_TOL, atol=FD_TOL)
    # Reverse mode still: the vjp beside the jvp.
    gx, gv = torch.func.grad(fwd.f, argnums=(0, 1))(x, v)
    torch.testing.assert_close(gx, 2 * x + v.sum())
    torch.testing.assert_close(gv, x.expand(3))
    # A number given for a Float is a constant: its tangent is 0.
    _, only_v = jvp(lambda v: fwd.f(1.5, v), (v,), (dv,))
    torch.testing.assert_close(only_v, 1.5 * dv.sum())


@needs_ksc
def test_tangents_of_arguments_named_like_tangents_have_names_of_their_own(fwd: ModuleType) -> None:
    # collide(x, dx, ddx) = x dx ddx: its jvp's tangents are dddx, ddddx, dddddx (each unique)
    x, y, z = torch.tensor(1.5), torch.tensor(-2.0), torch.tensor(0.5)
    tx, ty, tz = torch.tensor(0.25), torch.tensor(1.0), torch.tensor(4.0)
    want = torch.tensor(0.25 * (-2.0 * 0.5) + 1.0 * (1.5 * 0.5) + 4.0 * (1.5 * -2.0))
    torch.testing.assert_close(fwd.collide_jvp(x, y, z, dddx=tx, ddddx=ty, dddddx=tz), want)
    torch.testing.assert_close(jvp(fwd.collide, (x, y, z), (tx, ty, tz))[1], want)
    with fwAD.dual_level():
        dual = fwd.collide(fwAD.make_dual(x, tx), fwAD.make_dual(y, ty), fwAD.make_dual(z, tz))
        torch.testing.assert_close(fwAD.unpack_dual(dual).tangent, want)


@needs_ksc
def test_ksc_fwd_through_tuples_and_integers(fwd: ModuleType) -> None:
    s, v = torch.tensor(2.0), torch.tensor([1.0, 3.0])
    ds, dv = torch.tensor(0.5), torch.tensor([1.0, -2.0])
    (value, count), (tangent, count_tangent) = jvp(lambda s, v: fwd.tup((s, v), 4), (s, v), (ds, dv))
    assert int(count) == 5
    torch.testing.assert_close(tangent, ds * v.sum() + s * dv.sum())
    assert not count_tangent.any()  # an Integer result carries no tangent
    # The jvp binding itself: the tuple's tangent as a tuple, () for the Integer.
    torch.testing.assert_close(fwd.tup_jvp((s, v), 4, (ds, dv), ())[0], tangent)
    with fwAD.dual_level():
        out = fwd.tup((fwAD.make_dual(s, ds), v), 4)
        torch.testing.assert_close(fwAD.unpack_dual(out[0]).tangent, ds * v.sum())


@needs_ksc
def test_ksc_fwd_of_a_tensor_of_tensors_and_of_a_vmap_binding(fwd: ModuleType) -> None:
    g = torch.Generator().manual_seed(13)
    m, dm = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
    _, tangent = jvp(fwd.rows, (m,), (dm,))
    torch.testing.assert_close(tangent, (2 * m * dm).sum(1))
    torch.testing.assert_close(tangent.double(), finite_difference(fwd.rows, (m,), (dm,)), rtol=FD_TOL, atol=FD_TOL)
    v, w = torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g)
    dv, dw = torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g)
    _, tangent = jvp(fwd.sq_rows, (v, w), (dv, dw))
    torch.testing.assert_close(tangent, dw * v * v + 2 * w * v * dv)
    torch.testing.assert_close(torch.func.jacfwd(fwd.sq_rows)(v, w), torch.func.jacrev(
        lambda v: w * v * v)(v))


@needs_ksc
def test_ksc_cannot_derive_fwd_through_a_lambda_names_the_binding(tmp_path: Any) -> None:
    with pytest.raises(KscJvpError, match=r"binding 'squares': ksc cannot derive \[fwd \[lam_map \(Tensor 1 "
                                          r"Float\)\]\].*lambda.*Bind squares without jvp:"):
        ksbind.load_ks(KS, bindings=[{"name": "squares", "function": "lam_map", "jvp": "squares_jvp"}], ksc=KSC,
                       ksc_runtime=RUNTIME,
                       cache_dir=tmp_path, quiet=True)


@needs_ksc
def test_python_target_binds_the_jvp_as_a_function(tmp_path: Any) -> None:
    m = ksbind.load_ks(KS, bindings=[{"name": "f", "jvp": "f_jvp"}], ksc=KSC, ksc_runtime=RUNTIME,
                       cache_dir=tmp_path, quiet=True)
    assert m.f_jvp(2.0, [1.0, 2.0], 1.0, [0.0, 0.0]) == pytest.approx(7.0)
    assert m.f_jvp(2.0, [1.0, 2.0], 0.0, [1.0, 0.0]) == pytest.approx(2.0)


@needs_ksc
def test_vmap_mode_jvp_refuses_a_shared_float(tmp_path: Any) -> None:
    text = "(def vs (Vec Float) ((v : Vec Float) (s : Float)) (build (size v) (lam (i : Integer) " \
           "(mul s (index i v)))))"
    with pytest.raises(BindingError, match="mode vmap with a jvp: a Float argument shared by every step"):
        ksbind.load_ks(text, bindings=[{"name": "vs", "jvp": "vs_jvp", "mode": "vmap"}], target="torch", ksc=KSC,
                       ksc_runtime=RUNTIME, cache_dir=tmp_path, quiet=True)


@needs_ksc
def test_ksc_cannot_derive_fwd_through_an_edef_names_the_binding_and_the_linear_map(tmp_path: Any) -> None:
    text = "(edef my_log Float (Float))\n(def uses_log Float (x : Float) (mul 2.0 (my_log x)))\n"
    with pytest.raises(KscJvpError, match=r"binding 'ul': ksc cannot derive \[fwd \[uses_log Float\]\].*asked for "
                                          r"\[D \[my_log Float\]\], and \[my_log Float\] is not a def"):
        ksbind.load_ks(text, bindings=[{"name": "ul", "function": "uses_log", "jvp": "ul_jvp"}], ksc=KSC,
                       ksc_runtime=RUNTIME, cache_dir=tmp_path, quiet=True)
