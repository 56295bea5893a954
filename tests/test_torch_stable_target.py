"""The torch_stable target at generation time (no compiler): how values become op leaves and
schemas, what it refuses (a BindingError naming the type) or skips, and the wheel namespace."""
from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import ksbind
from ksbind.errors import BindingError, KsbindWarning
from ksbind.spec import BindingSpec, ModuleOptions

DECLS = ksbind.parse_ks("""
(edef vrelu3 (Vec Float) ((Vec Float)))
(edef [sufrev vrelu3] (Vec Float) ((Vec Float) (Vec Float)))
(edef tsum Float ((Tuple (Vec Float) Float) Integer))
(edef scale (Vec Float) ((Vec Float) Float))
(edef [sufrev scale] (Tuple (Vec Float) Float) ((Tuple (Vec Float) Float) (Vec Float)))
(edef stats (Tuple Float Integer (Vec Float)) ((Vec Float)))
(edef nested (Vec (Vec Float)) ((Vec (Vec Float))))
(edef texts (Vec String) (String))
(edef shout String (String Integer))
(edef count Integer (String String))
(edef pairs Float ((Vec (Tuple Float Integer))))
(edef wsum Float ((Vec Float) (Vec (Tuple Float Integer))))
""", "decls.ks")


def _rendered(*specs: BindingSpec, **options: object) -> dict[str, str]:
    module = ModuleOptions("m", "torch_stable", **options)  # type: ignore[arg-type]
    return dict(ksbind.render_module(DECLS, bindings=list(specs), options=module).files)


def _schemas(files: dict[str, str]) -> list[str]:
    return [s for s in re.findall(r'm\.def\("([^"]+)"\);', files["torch_stable_ops.cpp"])
            if not s.startswith(("_direct_", "_ksbind_"))]


def _bindings(files: dict[str, str]) -> list[dict[str, Any]]:
    """The wrapper's BINDINGS table (what ksbind/torch_runtime.py's install_stable reads)."""
    found = re.search(r"^BINDINGS = (\[.*?\])\n\n", files["m.py"], re.M | re.S)
    assert found
    table: list[dict[str, Any]] = ast.literal_eval(found.group(1))
    return table


def _namespace(files: dict[str, str]) -> str:
    found = re.search(r"^STABLE_TORCH_LIBRARY\((\w+), m\)", files["torch_stable_ops.cpp"], re.M)
    assert found
    return found.group(1)


def test_tuples_flatten_into_leaves_and_floats_with_a_vjp_are_zero_dim_tensors() -> None:
    files = _rendered(BindingSpec("tsum"), BindingSpec("scale", vjp="scale_vjp"), BindingSpec("vrelu3", vjp="vrelu3_vjp"))
    schemas = _schemas(files)
    assert re.fullmatch(r"tsum\(Tensor (\w+)_0, float \1_1, int (\w+)\) -> Tensor", schemas[0]), schemas[0]
    # With a vjp, a Float argument is a 0-dim tensor (autograd gives it a gradient); the vjp op takes
    # the primal's leaves then dret's, and returns one gradient per Float leaf.
    assert re.fullmatch(r"scale\(Tensor \w+, Tensor \w+\) -> Tensor", schemas[1]), schemas[1]
    assert re.fullmatch(r"scale_vjp\(Tensor \w+, Tensor \w+, Tensor dret\) -> \(Tensor, Tensor\)", schemas[2])
    assert re.fullmatch(r"vrelu3\(Tensor (\w+)\) -> Tensor", schemas[3])
    assert re.fullmatch(r"vrelu3_vjp\(Tensor \w+, Tensor dret\) -> Tensor", schemas[4])
    ops = files["torch_stable_ops.cpp"]
    assert all(f'm.def("_direct_{schema}");' in ops for schema in schemas)  # each op twice


def test_string_arguments_are_str_leaves() -> None:
    (schema,) = _schemas(_rendered(BindingSpec("count")))
    assert re.fullmatch(r"count\(str \w+, str \w+\) -> Tensor", schema), schema


def test_tuple_results_are_one_tensor_per_leaf_and_stacked_tensors_of_tensors_one() -> None:
    files = _rendered(BindingSpec("stats"), BindingSpec("nested"))
    stats, nested, packed_nested = _schemas(files)
    assert stats.endswith("-> (Tensor, Tensor, Tensor)") and nested.endswith("-> Tensor")
    # A tensor of tensors also has a packed op, which eager calls take for lists and ragged results.
    assert packed_nested == "_packed_nested(Tensor[] leaves) -> Tensor[]"
    bindings = _bindings(files)
    assert bindings[0]["ragged"] is None and bindings[0]["packed"] is None
    assert bindings[1]["ragged"]["params"] == [["v", ["t", 1, "float32"]]] and bindings[1]["packed"] is None
    assert bindings[0]["result"] == {"kind": "tuple", "parts": [
        {"kind": "leaf", "dtype": "float32", "rank": 0}, {"kind": "leaf", "dtype": "int32", "rank": 0},
        {"kind": "leaf", "dtype": "float32", "rank": 1}]}
    assert [(x["kind"], x["rank"]) for x in bindings[1]["leaves"]] == [("stacked", 2)]
    assert bindings[1]["result"] == {"kind": "leaf", "dtype": "float32", "rank": 2}


@pytest.mark.parametrize("name, says", [
    ("shout", "a String result, which an op's schema cannot return"),
    ("pairs", "(Tensor 1 (Tuple Float Integer)) is a tensor of (Tuple Float Integer), a list in Python, which an op's "
              "schema cannot say"),
])
def test_what_no_schema_can_say_is_a_packed_op_with_a_warning(name: str, says: str) -> None:
    with pytest.warns(KsbindWarning, match=re.escape(says)):
        files = _rendered(BindingSpec(name))
    (schema,) = _schemas(files)
    assert schema == f"{name}(Tensor[] leaves) -> Tensor[]"
    (binding,) = _bindings(files)
    assert binding["packed"]["params"] == {"shout": ["s", "i"], "pairs": [["v", ["tuple", ["f", "i"]]]]}[name]
    ops = files["torch_stable_ops.cpp"]
    assert "tt::Unpacker packed_in(&g_alloc, a_leaves);" in ops and "return tt::packed(ret);" in ops
    # The dispatcher cannot choose a device by an empty list: registered as the tensorless ops are.
    assert re.search(r"CompositeExplicitAutograd, m\) \{\n(    m\.impl\(.*\n)*    m\.impl\(\"" + name + '"', ops)


def test_only_plain_bindings_are_packed() -> None:
    with pytest.raises(BindingError, match=r"mode vmap takes tensors \(batched\) and scalars"):
        ksbind.render_module(DECLS, "m", "torch_stable", bindings=[BindingSpec("wsum", mode="vmap")])


def test_a_tensor_of_strings_is_a_binding_error_and_default_bindings_skip_it(tmp_path: Path) -> None:
    with pytest.raises(BindingError, match=re.escape("(Tensor 1 String) is a tensor of String; torch tensors cannot")):
        ksbind.render_module(DECLS, "m", "torch_stable", bindings=[BindingSpec("texts")])
    from ksbind.pipeline import render_spec
    from ksbind.resolve import resolve_spec

    config = tmp_path / "m.yaml"
    config.write_text("name: m\ntarget: torch_stable\ndeclarations: |\n  (edef vrelu3 (Vec Float) ((Vec Float)))\n"
                      "  (edef texts (Vec String) (String))\n  (edef pairs Float ((Vec (Tuple Float Integer))))\n")
    (spec,) = ksbind.load_config(config)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resolved = resolve_spec(spec, tmp_path / "cache")
        files = render_spec(resolved).files
    said = [str(w.message) for w in caught if issubclass(w.category, KsbindWarning)]
    assert any("texts" in m and "torch tensors cannot hold it" in m for m in said), said
    assert any("'pairs'" in m and "packed tensors" in m for m in said), said
    assert [b.name for b in resolved.bindings] == ["vrelu3", "pairs"]
    assert 'm.def("vrelu3(' in files["torch_stable_ops.cpp"] and 'm.def("pairs(Tensor[] leaves)' in files[
        "torch_stable_ops.cpp"]


def test_a_wheels_namespace_is_its_full_import_name() -> None:
    assert _namespace(_rendered(BindingSpec("vrelu3"), standalone=True, package="pkg.sub")) == "pkg_sub_m"
    assert _namespace(_rendered(BindingSpec("vrelu3"))) == "m"
    assert _namespace(_rendered(BindingSpec("vrelu3"), torch_library="ns")) == "ns"
