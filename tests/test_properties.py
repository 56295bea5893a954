"""Property tests: printing round-trips, symbols, random configs, and random input never crashes."""
from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ksbind
from ksbind.errors import KsbindError, KsbindWarning
from ksbind.lang.model import FunctionDecl, StructuredName
from ksbind.lang.types import TensorType, TupleType
from ksbind.pipeline import prepare

from .conftest import REPO
from .strategies import (
    bindable_types,
    decls,
    ks_types,
    mangleable_types,
    names,
    structured_names,
)

CPP_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


# ------------------------------------------------------------ round trips

@settings(max_examples=300, deadline=None)
@given(structured_names(ks_types(lm=True)), ks_types(), ks_types())
def test_edef_round_trip(name: StructuredName, arg: ksbind.KsType, ret: ksbind.KsType) -> None:
    if not name.is_derived:
        assert name.arg_type is not None  # a base name states its argument type
        arg = name.arg_type
    d = FunctionDecl(name, arg, ret)
    [back] = ksbind.parse_ks(d.to_edef())
    assert back == d
    assert back.to_edef() == d.to_edef()


@settings(max_examples=300, deadline=None)
@given(decls(ks_types()), st.data())
def test_def_round_trip_keeps_parameter_names(d: FunctionDecl, data: st.DataObject) -> None:
    n = len(d.params)
    if isinstance(d.arg_type, TupleType) and n != 1:
        param_names = tuple(data.draw(st.lists(names, min_size=n, max_size=n, unique=True)))
    else:
        param_names = (data.draw(names),)
    d = FunctionDecl(d.name, d.arg_type, d.return_type, param_names)
    [back] = ksbind.parse_ks(d.to_def("(body ignored)"))
    assert back == d and back.param_names == param_names


@settings(max_examples=200, deadline=None)
@given(st.lists(decls(ks_types()), max_size=6))
def test_many_decls_round_trip(ds: list[FunctionDecl]) -> None:
    unique = list({d.name: d for d in ds}.values())
    text = "\n".join(d.to_edef() if i % 2 else d.to_def() for i, d in enumerate(unique))
    back = ksbind.parse_ks(text)
    assert [(b.name, b.arg_type, b.return_type) for b in back] == [(d.name, d.arg_type, d.return_type) for d in unique]


# ------------------------------------------------------------ symbols

def _singleton_tuple_arg(n: StructuredName) -> bool:
    t = n.base_name.arg_type
    return isinstance(t, TupleType) and len(t.elements) == 1


@settings(max_examples=500, deadline=None)
@given(structured_names())
def test_symbols_are_cpp_identifiers(name: StructuredName) -> None:
    assert CPP_IDENTIFIER.match(name.cpp_symbol), name.cpp_symbol


@settings(max_examples=300, deadline=None)
@given(st.lists(structured_names(), min_size=2, max_size=10, unique=True))
def test_distinct_names_have_distinct_symbols(ns: list[StructuredName]) -> None:
    """Except ksc's own quirk: [f (Tuple T)] and [f T] share a symbol (docs/errors.md)."""
    ns = [n for n in ns if not _singleton_tuple_arg(n)]
    assert len({n.cpp_symbol for n in ns}) == len(ns)


@settings(max_examples=200, deadline=None)
@given(names, mangleable_types)
def test_singleton_tuple_quirk(name: str, t: ksbind.KsType) -> None:
    assume(not isinstance(t, TupleType))
    assert StructuredName.base(name, TupleType((t,))).cpp_symbol == StructuredName.base(name, t).cpp_symbol


# ------------------------------------------------------------ random configs

#: What the torch target carries: tensors of Float/Integer/Bool only (it rejects the rest clearly),
#: numbers, strings and tuples (a String result is a packed op, with a warning).
torch_types = st.recursive(
    st.sampled_from([ksbind.parse_type(t) for t in ("Float", "Integer", "Bool", "String")])
    | st.builds(TensorType, st.integers(1, 4), st.sampled_from([ksbind.parse_type(t) for t in
                                                                ("Float", "Integer", "Bool")])),
    lambda c: st.lists(c, max_size=3).map(lambda ts: TupleType(tuple(ts))), max_leaves=6)


@st.composite
def configs(draw: st.DrawFn) -> dict:
    target = draw(st.sampled_from(["ks", "python", "torch"]))
    types = torch_types if target == "torch" else bindable_types
    ds = draw(st.lists(decls(types), min_size=1, max_size=5, unique_by=lambda d: d.name.name))
    lines = [d.to_edef() for d in ds]
    gdefs = draw(st.lists(st.sampled_from(ds), unique_by=lambda d: d.name.name))
    lines += [f"(gdef sufrev {d.name})" for d in gdefs]
    config: dict = {"name": draw(names), "target": target,
                    "declarations": "\n".join(lines), "layout": draw(st.sampled_from(["split", "single"])),
                    "logging": draw(st.booleans()),
                    "arena_bytes": draw(st.integers(1, 2**40))}
    if target == "ks":  # tensor classes are the ks target's (elsewhere tensor_types is a ConfigError)
        config["tensor_types"] = draw(st.lists(st.tuples(st.integers(1, 4), st.sampled_from(
            ["Float", "Integer", "Bool"])).map(list), max_size=3))
    if draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(ds), min_size=1, unique_by=lambda d: d.name.name))
        config["bindings"] = [
            {"name": f"b{i}_{d.name.name}", "function": draw(st.sampled_from([d.name.name, str(d.name)])),
             **({"vjp": f"b{i}_vjp"} if draw(st.booleans()) else {})} for i, d in enumerate(chosen)]
    return config


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("props")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_random_valid_configs_render(scratch: Path, config: dict) -> None:
    path = scratch / "random.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [module] = prepare(path, out_dir=scratch / "out")  # renders everything in memory
    # The only warning: a torch binding whose values no op schema can say (a String result) is packed.
    said = [str(w.message) for w in caught]
    assert all(issubclass(w.category, KsbindWarning) for w in caught) and all(
        "is not an op with a schema" in m for m in said), said
    files = module.rendered.files
    assert files and all(text.strip() for text in files.values())
    for b in config.get("bindings", []):
        assert any(f"{b['name']}(" in text for text in files.values())
    # The files go where asked and nowhere else.
    assert all(p.path.parent == scratch / "out" / config["name"] for p in module.planned)


# ------------------------------------------------------------ random input never crashes

KS_ALPHABET = st.sampled_from(list("()[]\";#|: \n\t\\") + ["def", "edef", "gdef", "rule", "Float", "Integer",
                                                        "Tensor", "Vec", "Tuple", "Lam", "LM", "sufrev",
                                                        "fwd", "shape", "1", "0", "-1", "f", "x", "é", "\x00"])


def _only_ksbind_errors(fn: Callable[..., object], *args: object) -> None:
    try:
        fn(*args)
    except KsbindError as e:
        assert e.message and "\n" not in str(e).replace("\\n", "")
    # anything else propagates and fails the test


@settings(max_examples=600, deadline=None)
@given(st.lists(KS_ALPHABET, max_size=40).map(" ".join))
def test_random_ks_text(text: str) -> None:
    _only_ksbind_errors(lambda t: ksbind.render_module(ksbind.parse_ks(t)), text)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=80))
def test_random_unicode_text(text: str) -> None:
    _only_ksbind_errors(ksbind.parse_ks, text)
    _only_ksbind_errors(ksbind.parse_type, text)


SEED_KS = (REPO / "examples" / "relu3" / "relu3.ks").read_text()
SEED_YAML = """name: m
target: ks
declarations: |
  (edef f (Vec Float) ((Vec Float) Float))
  (gdef sufrev [f (Tuple (Tensor 1 Float) Float)])
bindings:
  - name: f
    function: "[f (Tuple (Tensor 1 Float) Float)]"
    vjp: f_vjp
    mode: plain
tensor_types: [[1, Float], [2, Integer]]
logging: false
arena_bytes: 1000
layout: split
"""


@st.composite
def mutations(draw: st.DrawFn, text: str) -> str:
    """text with a few characters deleted, inserted or replaced."""
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "replace"]))
        ch = draw(st.sampled_from(list("()[]{}\"':;#|!&*-\n\t 0123456789abcFIT\\")))
        if op == "delete":
            text = text[:i] + text[i + 1:]
        elif op == "insert":
            text = text[:i] + ch + text[i:]
        else:
            text = text[:i] + ch + text[i + 1:]
    return text


@settings(max_examples=500, deadline=None)
@given(mutations(SEED_KS))
def test_mutated_ks(text: str) -> None:
    _only_ksbind_errors(lambda t: ksbind.render_module(ksbind.parse_ks(t, "m.ks"), tensor_types=[(1, "Float")]),
                        text)


@settings(max_examples=400, deadline=None)
@given(mutations(SEED_YAML))
def test_mutated_yaml(scratch: Path, text: str) -> None:
    path = scratch / "mutated.yaml"
    path.write_text(text)
    out = scratch / "never"
    _only_ksbind_errors(lambda: prepare(path, out_dir=out))
    assert not out.exists()  # prepare renders in memory only
