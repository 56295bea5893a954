"""The ksc step's gdef planner with the real ksc (../shared/ksc): every order of
the bindings and every mix of sufrev and rev vjps builds (gdefs follow ksc's call graph,
not the config), the errors when ksc cannot derive a vjp, a cached module that loads
without ksc, and the log lines of ksc's runs. Planning and ksc only, except one module
built and called end to end (shared by the tests that need a built module)."""
from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

import ksbind
from ksbind.errors import KscError, KscVjpError, Location
from ksbind.ksc.driver import scan_sources
from ksbind.ksc.planner import CallGraph
from ksbind.resolve import ResolvedModule, resolve_spec
from ksbind.spec import BindingSpec, KscSpec, ModuleSpec, RuntimeSpec, VjpFrom
from tests.test_ksc import KSC, RUNTIME, needs_ksc

pytestmark = needs_ksc

#: A small network, callers calling callees: net -> layer -> (vsoftplus -> softplus, mv).
NN = """\
(def softplus Float (x : Float) (log (add 1.0 (exp x))))
(def vsoftplus (Vec Float) (v : Vec Float)
  (build (size v) (lam (i : Integer) (softplus (index i v)))))
(def mv (Vec Float) ((m : Tensor 2 Float) (v : Vec Float))
  (let ((rows cols) (size m))
    (build rows (lam (i : Integer)
      (sumbuild cols (lam (j : Integer) (mul (index (tuple i j) m) (index j v))))))))
(def layer (Vec Float) ((m : Tensor 2 Float) (v : Vec Float))
  (vsoftplus (mv m v)))
(def net Float ((m : Tensor 2 Float) (v : Vec Float))
  (sum (layer m (layer m v))))
"""
FUNCTIONS = ("softplus", "vsoftplus", "mv", "layer", "net")
#: The orders an earlier planner failed on ("ksc still asked for more gdefs after 40 runs"), and two that worked.
ORDERS_ONCE_FAILING = [("layer", "vsoftplus"), ("layer", "mv"), ("softplus", "layer"), ("vsoftplus", "layer"),
                       ("mv", "layer")]


def nn_spec(tmp_path: Path, order: tuple[str, ...], vjp_from: dict[str, VjpFrom] | None = None) -> ModuleSpec:
    src = tmp_path / "nn.ks"
    if not src.is_file():
        src.write_text(NN, encoding="utf-8")
    bindings = tuple(BindingSpec(n, vjp=f"{n}_vjp", vjp_from=(vjp_from or {}).get(n, "auto"),
                                 location=Location("nn.yaml", 5 + i, 5)) for i, n in enumerate(order))
    return ModuleSpec(name="nn", config_path=tmp_path / "nn.yaml", target="python", ks_files=(src,),
                      bindings=bindings, runtime=RuntimeSpec(bundled=False, from_ksc=True), ksc=KscSpec(KSC),
                      output=tmp_path / "out")


def vjp_kinds(r: ResolvedModule) -> dict[str, str]:
    return {b.name: b.vjp_decl.name.name for b in r.bindings if b.vjp_decl is not None}


# ------------------------------------------------------------------ the call graph


def test_call_graph_orders_callees_first(tmp_path: Path) -> None:
    (tmp_path / "nn.ks").write_text(NN)
    [source] = scan_sources([tmp_path / "nn.ks"])
    graph = CallGraph([source], {"add", "mul", "log", "exp", "sum"})
    by_name = {n.name: n for n in graph.defs}
    assert {n.name for n in graph.exact[by_name["layer"]]} == {"vsoftplus", "mv"}
    assert {n.name for n in graph.reachable([by_name["net"]])} == set(FUNCTIONS)
    order = [n.name for n in graph.order([by_name[f] for f in reversed(FUNCTIONS)])]
    for caller, callee in [("vsoftplus", "softplus"), ("layer", "vsoftplus"), ("layer", "mv"), ("net", "layer")]:
        assert order.index(callee) < order.index(caller)
    assert not graph.recursive


def test_call_graph_overloads_and_recursion() -> None:
    text = ("(def f Float (x : Float) (mul x 2.0))\n"
            "(def f Float (v : Vec Float) (sum (build (size v) (lam (i : Integer) (f (index i v))))))\n"
            "(def rec Float ((x : Float) (n : Integer)) (if (eq n 0) x (rec (mul x 2.0) (sub n 1))))\n"
            "(def g Float (x : Float) ([f Float] x))\n")
    graph = CallGraph([ksbind.lang.reader.scan_ks(text, "o.ks")], {"mul", "sum", "eq", "sub"})
    f_float, f_vec, rec, g = graph.defs  # in the sources' order
    assert graph.exact[f_vec] == set()          # (f x) may be either f: only ordered by, never assumed
    assert graph.edges[f_vec] == {f_vec, f_float}
    assert graph.exact[g] == {f_float}          # written in full: exact
    assert graph.recursive == {rec}             # an overload calling another is not recursion


# ------------------------------------------------------------------ every order, every mix


def _mixes() -> Iterator[tuple[tuple[str, ...], dict[str, VjpFrom]]]:
    """Every order of the five bindings, each with its own mix of vjp_from (auto, sufrev, rev):
    the i-th order gets the base-3 digits of i as the functions' choices."""
    choices: tuple[VjpFrom, ...] = ("auto", "sufrev", "rev")
    for i, order in enumerate(itertools.permutations(FUNCTIONS)):
        digits = [(i // 3 ** k) % 3 for k in range(len(FUNCTIONS))]
        yield order, {f: choices[d] for f, d in zip(FUNCTIONS, digits)}


@pytest.fixture(scope="module")
def planner_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("planner")


@pytest.mark.parametrize("order", ORDERS_ONCE_FAILING, ids=["-".join(o) for o in ORDERS_ONCE_FAILING])
def test_issue_orders_build_in_one_ksc_run(planner_dir: Path, order: tuple[str, ...],
                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ksbind.ksc"):
        r = resolve_spec(nn_spec(planner_dir, order), planner_dir / f"cache-{'-'.join(order)}")
    assert vjp_kinds(r) == {f: "sufrev" for f in order}
    runs = [rec.getMessage() for rec in caplog.records if rec.name == "ksbind.ksc" and "(run " in rec.getMessage()]
    assert len(runs) == 1, runs  # callees' gdefs first: ksc needs nothing more


@pytest.mark.parametrize("order,vjp_from", list(_mixes()), ids=[
    "-".join(f"{f}:{m[f][0]}" for f in o) for o, m in _mixes()])
def test_every_order_and_mix_of_vjps(planner_dir: Path, order: tuple[str, ...], vjp_from: dict[str, VjpFrom]) -> None:
    r = resolve_spec(nn_spec(planner_dir, order, vjp_from), planner_dir / "cache")
    expected = {f: "rev" if vjp_from[f] == "rev" else "sufrev" for f in order}
    assert vjp_kinds(r) == expected
    assert [b.name for b in r.bindings] == list(order)
    kso = r.spec.ks_files[0].read_text()
    for f, kind in expected.items():
        assert f"[{kind} [{f} " in kso


def test_load_ks_issue_orders_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """load_ks plans the same way: stopped after ksc (nothing compiled)."""
    import ksbind.pipeline as pipeline_module

    planned: list[ResolvedModule] = []

    class Planned(Exception):
        pass

    def plan_only(spec: ModuleSpec, cache_dir: Path | None = None) -> ResolvedModule:
        planned.append(real(spec, cache_dir))
        raise Planned

    real = resolve_spec  # what pipeline calls (imported from ksbind.resolve)
    monkeypatch.setattr(pipeline_module, "resolve_spec", plan_only)
    for order in ORDERS_ONCE_FAILING[:3]:
        with pytest.raises(Planned):
            ksbind.load_ks(NN, bindings=[{"name": f, "vjp": f"{f}_vjp"} for f in order], ksc=KSC,
                           ksc_runtime=RUNTIME, cache_dir=tmp_path, quiet=True)
        assert vjp_kinds(planned[-1]) == {f: "sufrev" for f in order}


def test_a_call_through_an_overloaded_name_is_added_when_ksc_names_it(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """(g x) may be either g: ksbind does not guess, ksc says which, and the second run builds."""
    text = ("(def g Float (x : Float) (mul x 3.0))\n(def g Float (v : Vec Float) (sum v))\n"
            "(def f Float (x : Float) (g x))\n(def top Float (x : Float) (f x))\n")
    with caplog.at_level(logging.INFO, logger="ksbind.ksc"):
        r = resolve_spec(calls_spec(tmp_path, ("top", "auto"), ("f", "sufrev"), text=text), tmp_path / "c")
    assert vjp_kinds(r) == {"top": "sufrev", "f": "sufrev"}
    assert sum("(run " in rec.getMessage() for rec in caplog.records) == 2
    gdefs = (r.spec.ks_files[0].parent / "ksc.json").read_text()
    assert gdefs.index("suffwdpass [g Float]") < gdefs.index("suffwdpass [f Float]") < gdefs.index(
        "suffwdpass [top Float]")
    assert "[g (Tensor 1 Float)]" not in gdefs  # the other g is not needed, and not asked for


# ------------------------------------------------------------------ when ksc cannot derive a vjp

CALLS = """\
(def h Float (x : Float) (mul x 2.0))
(def rec Float ((x : Float) (n : Integer)) (if (eq n 0) x (rec (mul x 2.0) (sub n 1))))
(def k Float (x : Float) (rec (h x) 3))
(edef my_log Float (Float))
(def uses_log Float (x : Float) (my_log x))
"""
#: The sources gdef via_sq but not sq, which it calls: ksc derives gdefs in order.
GDEF_BEFORE_CALLEE = """\
(def sq Float (x : Float) (mul x x))
(def via_sq Float (x : Float) (sq x))
(gdef suffwdpass [via_sq Float])
(gdef sufrevpass [via_sq Float])
(gdef sufrev [via_sq Float])
"""


def calls_spec(tmp_path: Path, *bindings: tuple[str, VjpFrom], text: str = CALLS) -> ModuleSpec:
    src = tmp_path / "calls.ks"
    src.write_text(text)
    specs = tuple(BindingSpec(n, vjp=f"{n}_vjp", vjp_from=v, location=Location("calls.yaml", 5 + i, 5))
                  for i, (n, v) in enumerate(bindings))
    return ModuleSpec(name="calls", config_path=tmp_path / "calls.yaml", target="python", ks_files=(src,),
                      bindings=specs, runtime=RuntimeSpec(bundled=False, from_ksc=True), ksc=KscSpec(KSC),
                      output=tmp_path / "out")


def test_recursion_is_rev_without_asking_ksc(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ksbind.ksc"):
        r = resolve_spec(calls_spec(tmp_path, ("k", "auto"), ("h", "sufrev"), ("rec", "auto")), tmp_path / "c")
    assert vjp_kinds(r) == {"k": "rev", "h": "sufrev", "rec": "rev"}
    assert sum("(run " in rec.getMessage() for rec in caplog.records) == 1


def test_sufrev_of_a_recursive_function_names_it_and_what_to_write(tmp_path: Path) -> None:
    with pytest.raises(KscVjpError) as e:
        resolve_spec(calls_spec(tmp_path, ("h", "auto"), ("k", "sufrev")), tmp_path / "c")
    assert str(e.value).startswith(
        "calls.yaml:6:5: ksc cannot derive [sufrev [k Float]]: it asked for [suffwdpass [rec (Tuple Float Integer)]] "
        "again after being given it (SUF-AD cannot derive recursion or fold). Write vjp_from: rev (or auto) on the "
        "binding, for ksc's [rev [k Float]], or define [sufrev [k Float]] by hand in the .ks (ksc: mkSufFuns")
    assert isinstance(e.value, KscError) and "\n" not in str(e.value)


def test_an_edef_in_a_vjp_names_the_gdef_ksc_asked_for(tmp_path: Path) -> None:
    with pytest.raises(KscVjpError, match=r"^calls.yaml:5:5: ksc cannot derive \[sufrev \[uses_log Float\]\]: it asked "
                       r"for \[suffwdpass \[my_log Float\]\], and \[my_log Float\] is not a def of the sources"):
        resolve_spec(calls_spec(tmp_path, ("uses_log", "sufrev")), tmp_path / "c")
    with pytest.raises(KscVjpError, match=r"^calls.yaml:5:5: ksc cannot derive \[rev \[uses_log Float\]\]: it asked "
                       r"for \[D \[my_log Float\]\].*define \[rev my_log\] \(or \[D my_log\]\) in the .ks, or bind "
                       r"uses_log without vjp:"):
        resolve_spec(calls_spec(tmp_path, ("uses_log", "auto")), tmp_path / "c")


def test_a_vjp_ksc_cannot_derive_either_way_is_named(tmp_path: Path) -> None:
    """map2 over a lambda: SUF-AD and rev both fail, without naming a function. auto tries
    sufrev, then rev; the vjp that fails alone is named, and the one that builds is not blamed."""
    text = ("(def sq Float (x : Float) (mul x x))\n"
            "(def pairs (Vec Float) ((t1 : Vec Float) (t2 : Vec Float))\n"
            "  (map2 (lam (x : Tuple Float Float) (add x)) t1 t2))\n")
    with pytest.raises(KscVjpError) as e:
        resolve_spec(calls_spec(tmp_path, ("sq", "auto"), ("pairs", "auto"), text=text), tmp_path / "c")
    assert str(e.value).startswith(
        "calls.yaml:6:5: ksc cannot derive [rev [pairs (Tuple (Tensor 1 Float) (Tensor 1 Float))]] (nor [sufrev "
        "[pairs (Tuple (Tensor 1 Float) (Tensor 1 Float))]]: ksc fails on it alone): bind pairs without vjp:, or "
        "define [rev [pairs (Tuple (Tensor 1 Float) (Tensor 1 Float))]] by hand in the .ks (ksc: ")


def test_sources_gdefs_before_their_callees_are_located(tmp_path: Path) -> None:
    with pytest.raises(KscVjpError) as e:
        resolve_spec(calls_spec(tmp_path, ("via_sq", "auto"), text=GDEF_BEFORE_CALLEE), tmp_path / "c")
    assert str(e.value).startswith(f"{tmp_path / 'calls.ks'}:3:1: (gdef suffwdpass [via_sq Float]) needs the SUF "
                                   "gdefs of [sq Float], which it calls, before it")
    assert "write (gdef suffwdpass [sq Float]) (gdef sufrevpass [sq Float]) (gdef sufrev [sq Float]) above it" \
        in str(e.value)


# ------------------------------------------------------------------ finding ksc, logging


def test_load_ks_without_ksc_says_pass_ksc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KscError) as e:
        ksbind.load_ks("(def f Float (x : Float) x)", cache_dir=tmp_path, quiet=True)
    assert "pass ksc= (the ksc binary) to load_ks, or set the KSC environment variable" in str(e.value)
    assert "config" not in str(e.value)
    with pytest.raises(KscError, match=r"ksc not found at .*nope \(from load_ks's ksc=\): pass ksc="):
        ksbind.load_ks("(def f Float (x : Float) x)", ksc=tmp_path / "nope", cache_dir=tmp_path, quiet=True)


def test_one_info_line_per_ksc_run_and_its_command_at_debug(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="ksbind.ksc"):
        resolve_spec(nn_spec(tmp_path, ("layer",)), tmp_path / "c")
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(info) == 1 and info[0].startswith("ksc: nn.ks (run 1) ") and info[0].endswith(" s")
    assert any(m.startswith("ksc command (run 1): ") and "--ks-source-file" in m for m in debug)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ksbind.ksc"):
        resolve_spec(nn_spec(tmp_path, ("layer",)), tmp_path / "c")
    assert not caplog.records  # cached: no run, nothing said


# ------------------------------------------------------------------ one module end to end, and its cache


def reference(m: list[list[float]], v: list[float]) -> tuple[float, list[list[float]], list[float]]:
    """net and its gradient, by PyTorch in float64."""
    torch = pytest.importorskip("torch")
    tm = torch.tensor(m, dtype=torch.float64, requires_grad=True)
    tv = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.softplus(tm @ torch.nn.functional.softplus(tm @ tv)).sum()
    out.backward()
    assert tm.grad is not None and tv.grad is not None
    return float(out.detach()), tm.grad.tolist(), tv.grad.tolist()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """nn.ks bound callers first (an order the earlier planner failed on), mixing rev and sufrev,
    built once: (config, cache folder)."""
    d = tmp_path_factory.mktemp("nn_built")
    (d / "nn.ks").write_text(NN)
    cfg = d / "nn.yaml"
    cfg.write_text(f"name: ksc_planner_nn\ntarget: python\nks: [nn.ks]\nksc: {{path: {KSC}, runtime: {RUNTIME}}}\n"
                   "output: out\nbindings:\n  - {name: net, vjp: net_vjp}\n"
                   "  - {name: layer, vjp: layer_vjp, vjp_from: rev}\n  - {name: softplus, vjp: softplus_vjp}\n")
    ksbind.build(cfg, cache_dir=d / "cache", quiet=True)
    return cfg, d / "cache"


M = [[0.5, -0.25, 1.0], [0.1, 0.2, -0.3], [-1.0, 0.5, 0.25]]
V = [1.0, -2.0, 0.5]


def test_callers_first_module_computes_values_and_vjps(built: tuple[Path, Path]) -> None:
    cfg, cache = built
    m = ksbind.build(cfg, cache_dir=cache, quiet=True)  # the fixture's build, from the cache
    value, dm, dv = reference(M, V)
    assert m.net(M, V) == pytest.approx(value, rel=1e-5)
    got_dm, got_dv = m.net_vjp(M, V, 1.0)
    assert got_dm == [pytest.approx(row, rel=1e-4, abs=1e-6) for row in dm]
    assert got_dv == pytest.approx(dv, rel=1e-4, abs=1e-6)
    assert m.softplus(0.5) == pytest.approx(math.log1p(math.exp(0.5)), rel=1e-6)
    assert m.softplus_vjp(0.5, 2.0) == pytest.approx(2.0 / (1.0 + math.exp(-0.5)), rel=1e-6)
    layer_dm, layer_dv = m.layer_vjp(M, V, [1.0, 1.0, 1.0])  # [rev layer] agrees with its sufrev-built caller
    assert len(layer_dm) == 3 and len(layer_dv) == 3


def test_cached_module_loads_without_ksc(built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg, cache = built
    text = cfg.read_text()
    monkeypatch.delenv("KSC", raising=False)
    monkeypatch.delenv("KSC_RUNTIME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no ksc on PATH
    nowhere = cfg.with_name("nowhere.yaml")
    for config in (text.replace(f"ksc: {{path: {KSC}, runtime: {RUNTIME}}}", "ksc: {path: /nonexistent/ksc}"),
                   text.replace(f"ksc: {{path: {KSC}, runtime: {RUNTIME}}}", "ksc: {}")):
        nowhere.write_text(config)
        with caplog.at_level(logging.INFO, logger="ksbind.ksc"):
            m = ksbind.build(nowhere, cache_dir=cache, quiet=False)
        assert m.softplus(0.0) == pytest.approx(math.log(2.0), rel=1e-6)
        said = [r.getMessage() for r in caplog.records if r.name == "ksbind.ksc"]
        assert said and all("(run " not in s for s in said) and "cached output reused" in said[-1]
        caplog.clear()
    # A changed source needs ksc: today's error, as if nothing were cached.
    (cfg.parent / "nn.ks").write_text(NN + "(def extra Float (x : Float) x)\n")
    try:
        with pytest.raises(KscError, match=r"nowhere.yaml:4:6: ksc \(the Knossos compiler\) not found: set ksc: "):
            ksbind.build(nowhere, cache_dir=cache, quiet=True)
    finally:
        (cfg.parent / "nn.ks").write_text(NN)


def test_kso_only_module_needs_ksc_runtime_not_ksc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kso = resolve_spec(nn_spec(tmp_path, ("net",)), tmp_path / "c").spec.ks_files[0]
    monkeypatch.delenv("KSC", raising=False)
    monkeypatch.delenv("KSC_RUNTIME", raising=False)
    spec = ModuleSpec(name="direct", config_path=tmp_path / "d.yaml", ks_files=(kso,), bindings=(BindingSpec("net"),),
                      runtime=RuntimeSpec(bundled=False, from_ksc=True), ksc=KscSpec(tmp_path / "nope", RUNTIME))
    r = resolve_spec(spec)  # ksc has nothing to compile: its runtime is enough
    assert r.spec.runtime.include_dirs == (RUNTIME.resolve(),) and [b.name for b in r.bindings] == ["net"]
    with pytest.raises(KscError, match="ksc not found at .*nope"):
        resolve_spec(dataclasses.replace(spec, ksc=KscSpec(tmp_path / "nope")))


def test_a_changed_ksc_runs_again(tmp_path: Path) -> None:
    """The entry records which ksc made it: another ksc (other content) does not reuse it."""
    spec = nn_spec(tmp_path, ("net",))
    assert resolve_spec(spec, tmp_path / "c").ksc_ran
    other = tmp_path / "bin" / "ksc"
    other.parent.mkdir()
    other.write_bytes(KSC.read_bytes() + b"\0")  # same program, other bytes
    other.chmod(0o755)
    again = dataclasses.replace(spec, ksc=KscSpec(other, RUNTIME))
    assert resolve_spec(again, tmp_path / "c").ksc_ran
    assert not resolve_spec(again, tmp_path / "c").ksc_ran


@pytest.mark.parametrize("first_rev", [True, False], ids=["rev-first", "rev-second"])
def test_vjp_from_rev_holds_for_every_binding_of_the_function_in_any_order(tmp_path: Path, first_rev: bool) -> None:
    """Two bindings of one function, one vjp_from: rev and one auto: both get [rev F], whichever
    comes first (the later binding's auto once replaced the earlier rev with sufrev)."""
    rev = BindingSpec("by_rev", function="softplus", vjp="by_rev_vjp", vjp_from="rev", location=Location("nn.yaml", 5, 5))
    auto = BindingSpec("by_auto", function="softplus", vjp="by_auto_vjp", location=Location("nn.yaml", 6, 5))
    spec = dataclasses.replace(nn_spec(tmp_path, ()), bindings=(rev, auto) if first_rev else (auto, rev))
    r = resolve_spec(spec, tmp_path / "cache")
    assert vjp_kinds(r) == {"by_rev": "rev", "by_auto": "rev"}
    assert "[rev [softplus Float]]" in r.spec.ks_files[0].read_text()


def test_two_bindings_asking_for_different_vjps_of_one_function_are_an_error(tmp_path: Path) -> None:
    rev = BindingSpec("a", function="softplus", vjp="a_vjp", vjp_from="rev", location=Location("nn.yaml", 5, 5))
    suf = BindingSpec("b", function="softplus", vjp="b_vjp", vjp_from="sufrev", location=Location("nn.yaml", 6, 5))
    with pytest.raises(KscVjpError, match="ask for different vjps, vjp_from: rev .* and sufrev") as e:
        resolve_spec(dataclasses.replace(nn_spec(tmp_path, ()), bindings=(rev, suf)), tmp_path / "cache")
    assert e.value.location == Location("nn.yaml", 6, 5)
