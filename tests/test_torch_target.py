"""The torch target at generation time (no compiler): the Python types of its values, how
values become op leaves and schemas, what it refuses (a BindingError before anything is
written, naming the type) or packs (with a warning), what the rendered files include, and
how the wrapper's runtime refuses a library it cannot load."""
from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import ksbind
from ksbind.codegen.targets.common import Crossing
from ksbind.errors import BindingError, ConfigError, KsbindWarning
from ksbind.lang.types import parse_type
from ksbind.spec import BindingSpec, ModuleOptions
from ksbind.targets.registry import get_target
from ksbind.targets.torch import target as torch_target

REPO = Path(__file__).resolve().parents[1]

DECLS = ksbind.parse_ks("""
(edef relu3 Float (Float))
(edef mulsin Float (Float Float))
(edef vrelu3 (Vec Float) ((Vec Float)))
(edef [sufrev vrelu3] (Vec Float) ((Vec Float) (Vec Float)))
(edef sumsq Float ((Vec Float)))
(edef scale (Vec Float) ((Vec Float) Float))
(edef [sufrev scale] (Tuple (Vec Float) Float) ((Tuple (Vec Float) Float) (Vec Float)))
(edef norm Float (Float))
(edef tally Integer (Integer))
(edef nested (Vec (Vec Float)) ((Vec (Vec Float))))
(edef pair (Tuple Float (Vec Float)) ((Vec Float)))
(edef texts (Vec String) (String))
(edef grid (Tensor 2 (Vec Float)) ((Tensor 2 (Vec Float))))
(edef tsum Float ((Tuple (Vec Float) Float) Integer))
(edef stats (Tuple Float Integer (Vec Float)) ((Vec Float)))
(edef shout String (String Integer))
(edef count Integer (String String))
(edef pairs Float ((Vec (Tuple Float Integer))))
(edef wsum Float ((Vec Float) (Vec (Tuple Float Integer))))
""", "decls.ks")


def render(*specs: BindingSpec, torch_library: str | None = None) -> dict[str, str]:
    return dict(ksbind.render_module(DECLS, "m", "torch", bindings=list(specs), torch_library=torch_library).files)


def _rendered(*specs: BindingSpec, **options: object) -> dict[str, str]:
    module = ModuleOptions(name="m", target="torch", **options)  # type: ignore[arg-type]
    return dict(ksbind.render_module(DECLS, bindings=list(specs), options=module).files)


def _schemas(files: dict[str, str]) -> list[str]:
    """The bindings' op schemas (not the kernels' `_direct_` twins or the support ops)."""
    return [s for s in re.findall(r'm\.def\("([^"]+)"\);', files["torch_stable_ops.cpp"])
            if not s.startswith(("_direct_", "_ksbind_"))]


def _bindings(files: dict[str, str]) -> list[dict[str, Any]]:
    """The wrapper's BINDINGS table (what ksbind/targets/torch/runtime's install_stable reads)."""
    found = re.search(r"^BINDINGS: list\[_runtime\.BindingRecord\] = (\[.*?^\])\n", files["m.py"], re.M | re.S)
    assert found
    from ksbind.targets.torch import runtime  # its records' calls (they build plain dicts)

    table: list[dict[str, Any]] = eval(found.group(1), {"_runtime": runtime})  # noqa: S307
    return table


def _namespace(files: dict[str, str]) -> str:
    found = re.search(r"^STABLE_TORCH_LIBRARY\((\w+), m\)", files["torch_stable_ops.cpp"], re.M)
    assert found
    return found.group(1)


def test_torch_stable_is_another_name_of_the_torch_target() -> None:
    assert get_target("torch_stable") is get_target("torch")
    files = _rendered(BindingSpec("vrelu3"))
    aliased = ksbind.render_module(DECLS, "m", "torch_stable", bindings=[BindingSpec("vrelu3")]).files
    assert set(aliased) == set(files)
    assert aliased == files  # the same module: the wrapper and stub name the torch target too


# ------------------------------------------------------------ Python types

@pytest.mark.parametrize("text, param, result", [
    ("(Vec Float)", "torch.Tensor", "torch.Tensor"),
    ("(Tensor 3 Integer)", "torch.Tensor", "torch.Tensor"),
    # Numbers in: a Python number or a 0-dim tensor; numbers out: 0-dim tensors.
    ("Float", "float | torch.Tensor", "torch.Tensor"),
    ("(Tuple Integer Bool)", "tuple[int | torch.Tensor, bool | torch.Tensor]", "tuple[torch.Tensor, torch.Tensor]"),
    # Tensors of tensors: stacked or a list; tensors of tuples: lists.
    ("(Vec (Vec Float))", "torch.Tensor | Sequence[torch.Tensor]", "torch.Tensor | list[torch.Tensor]"),
    ("(Vec (Tuple Integer (Vec Float)))", "Sequence[tuple[int | torch.Tensor, torch.Tensor]]",
     "list[tuple[torch.Tensor, torch.Tensor]]"),
    ("(Tuple String String)", "tuple[str, str]", "tuple[str, str]"),
    # Tangents of discrete values hold nothing: ().
    ("(Vec (Tuple))", "tuple[()]", "tuple[()]"),
    ("(Tuple)", "tuple[()]", "tuple[()]"),
])
def test_stub_types(text: str, param: str, result: str) -> None:
    """The kernels convert op leaves themselves: a crossing only names the ks type and its Python type."""
    t = parse_type(text)
    assert torch_target.crossing(t, "param") == Crossing(t.cpp, "", param)
    assert torch_target.crossing(t, "result") == Crossing(t.cpp, "", result)


# ------------------------------------------------------------ the rendered files

def test_only_the_op_file_and_looping_kernels_include_torchs_stable_headers() -> None:
    """The library includes torch's stable ABI headers only, never torch/extension.h, pybind11 or
    Python; the kernels' file (compiled with the config's C++) includes them only when an op loops."""
    plain = render(BindingSpec("vrelu3", "vrelu3", "vrelu3_vjp"))
    assert set(plain) == {"torch_stable_entries.h", "torch_stable_entries.cpp", "torch_stable_ops.cpp", "m.py",
                          "m.pyi"}
    assert "torch/" not in plain["torch_stable_entries.h"] + plain["torch_stable_entries.cpp"]
    assert "#include <ksbind/torch_stable.h>" in plain["torch_stable_ops.cpp"]
    looping = render(BindingSpec("relu3", "relu3", mode="elementwise"))
    assert "#include <torch/csrc/stable/tensor.h>" in looping["torch_stable_entries.h"]
    assert "#include <ksbind/torch_stable.h>" in looping["torch_stable_entries.cpp"]
    for files in (plain, looping):
        cpp = "".join(text for name, text in files.items() if name.endswith((".h", ".cpp")))
        assert not re.search(r"#include <(torch/extension\.h|torch/csrc/utils/pybind\.h|pybind11/|Python\.h)", cpp)
    # A plain op views its tensors as ks values and calls the kernels' file in an arena.
    ops = plain["torch_stable_ops.cpp"]
    assert 'tt::view<ks::tensor<1, ks::Float>>(a_arg0, "arg0")' in ops and "ksbind::CallArena arena;" in ops
    assert "tt::call_entry(arena, vrelu3_site, \"vrelu3$aT1f\", &ke::vrelu3_ks, k0)" in ops
    assert "_runtime.install_stable(globals(), 'm_torchops', 'm', BINDINGS," in plain["m.py"]


def test_elementwise_and_vmap_render_loops() -> None:
    files = render(BindingSpec("relu3", "relu3", "relu3_vjp", "elementwise"),
                   BindingSpec("mulsin", "mulsin", "mulsin_vjp", "elementwise"),
                   BindingSpec("rows", "sumsq", "rows_vjp", "vmap"))
    cpp = files["torch_stable_entries.cpp"]
    assert "tt::elementwise<1, 1>(" in cpp and "tt::elementwise<2, 1>(" in cpp
    assert re.search(r"ks::sufrev\$mulsin\$aff\(alloc, ks::make_Tuple\(v0, v1\), v2\)", cpp)
    assert "tt::elementwise<3, 2>(" in cpp  # two gradients per element
    assert "tt::Stacker<ks::Float> out(batch);" in cpp and "tt::parallel_steps(batch" in cpp
    assert ("torch::stable::Tensor rows_vjp_kernel(torch::stable::Tensor a_arg0, torch::stable::Tensor a_dret);"
            in files["torch_stable_entries.h"])
    # The stub shows what Python passes in these modes: tensors.
    stub = files["m.pyi"]
    assert "def relu3(arg0: torch.Tensor) -> torch.Tensor:" in stub
    assert ("def mulsin_vjp(arg0: torch.Tensor, arg1: torch.Tensor, dret: torch.Tensor) "
            "-> tuple[torch.Tensor, torch.Tensor]:") in stub
    assert "def rows(arg0: torch.Tensor) -> torch.Tensor:" in stub


def test_elementwise_binding_with_a_vjp_has_an_op_of_its_value_and_partials() -> None:
    """Its kernel computes the function and its vjp at dret = 1 from each element in one loop (one
    output per argument's partial), registered once (only the runtime calls it); BINDINGS names it.
    Without a vjp, or in another mode, there is none."""
    files = render(BindingSpec("relu3", "relu3", "relu3_vjp", "elementwise"),
                   BindingSpec("mulsin", "mulsin", "mulsin_vjp", "elementwise"),
                   BindingSpec("norm", "norm", None, "elementwise"), BindingSpec("vrelu3", "vrelu3", "vrelu3_vjp"))
    cpp, ops = files["torch_stable_entries.cpp"], files["torch_stable_ops.cpp"]
    assert ("tt::elementwise<1, 2>(" in cpp and "ksbind::torch_stable::with_partials(ks::relu3$af(alloc, v0), "
            "ks::sufrev$relu3$af(alloc, v0, 1.0f))" in cpp)
    assert ("tt::elementwise<2, 3>(" in cpp and "with_partials(ks::mulsin$aff(alloc, v0, v1), "
            "ks::sufrev$mulsin$aff(alloc, ks::make_Tuple(v0, v1), 1.0f))" in cpp)
    assert 'm.def("_partials_relu3(Tensor arg0) -> (Tensor, Tensor)");' in ops
    assert 'm.impl("_partials_mulsin", KSBIND_BOX(&ke::_partials_mulsin_kernel));' in ops
    assert "_direct__partials" not in ops and "_partials_norm" not in ops and "_partials_vrelu3" not in ops
    partials = {b["name"]: b.get("partials") for b in _bindings(files)}
    assert partials == {"relu3": "_partials_relu3", "mulsin": "_partials_mulsin", "norm": None, "vrelu3": None}


def test_a_binding_named_as_a_partials_op_is_refused() -> None:
    with pytest.raises(BindingError, match="'_partials_relu3' is one ksbind gives an op of its own"):
        render(BindingSpec("relu3", "relu3", "relu3_vjp", "elementwise"), BindingSpec("_partials_relu3", "norm"))


def test_single_file_layout_is_the_split_one() -> None:
    """The kernels' file is compiled with the config's C++ and the op file without it: two units
    in either layout."""
    spec = BindingSpec("relu3", "relu3", "relu3_vjp", "elementwise")
    single = ksbind.render_module(DECLS, "m", "torch", bindings=[spec], layout="single").files
    assert dict(single) == render(spec)


def test_unit_includes_ks_sources_then_entry_points(tmp_path: Path) -> None:
    from ksbind.targets.torch.build import ENTRIES, unit_text

    spec = ksbind.load_config(REPO / "configs" / "relu3_torch.yaml")[0]
    text = unit_text(spec, tmp_path / ENTRIES)
    lines = [ln for ln in text.splitlines() if ln.startswith("#include")]
    assert lines == ["#include <ksbind/vector_math.h>",  # first: ks code's float calls find the float functions
                     "#include <ksbind/float_sums.h>",  # then ks's sum of a float tensor, vectorised
                     "#include <ksbind/float_builds.h>",  # and its build and sumbuild loops
                     f'#include "{(REPO / "examples" / "relu3" / "relu3.cpp").resolve()}"',
                     f'#include "{(tmp_path / ENTRIES).resolve()}"']


# ------------------------------------------------------------ leaves and schemas

def test_tuples_flatten_into_leaves_and_floats_with_a_vjp_are_zero_dim_tensors() -> None:
    files = _rendered(BindingSpec("tsum"), BindingSpec("scale", vjp="scale_vjp"), BindingSpec("vrelu3", vjp="vrelu3_vjp"))
    schemas = _schemas(files)
    assert re.fullmatch(r"tsum\(Tensor (\w+)_0, float \1_1, SymInt (\w+)\) -> Tensor", schemas[0]), schemas[0]
    # With a vjp, a Float argument is a 0-dim tensor (autograd gives it a gradient); the vjp op takes
    # the primal's leaves then dret's, and returns one gradient per Float leaf.
    assert re.fullmatch(r"scale\(Tensor \w+, Tensor \w+\) -> Tensor", schemas[1]), schemas[1]
    assert re.fullmatch(r"scale_vjp\(Tensor \w+, Tensor \w+, Tensor dret\) -> \(Tensor, Tensor\)", schemas[2])
    assert re.fullmatch(r"vrelu3\(Tensor (\w+)\) -> Tensor", schemas[3])
    assert re.fullmatch(r"vrelu3_vjp\(Tensor \w+, Tensor dret\) -> Tensor", schemas[4])
    ops = files["torch_stable_ops.cpp"]
    assert all(f'm.def("_direct_{schema}");' in ops for schema in schemas)  # each op twice


def test_torch_library_names_the_ops_namespace() -> None:
    files = render(BindingSpec("vrelu3", "vrelu3", "vrelu3_vjp"),
                   BindingSpec("mulsin", "mulsin", "mulsin_vjp", "elementwise"),
                   BindingSpec("rows", "vrelu3", "rows_vjp", "vmap"), torch_library="my_ops")
    assert _namespace(files) == "my_ops"
    assert _schemas(files) == ["vrelu3(Tensor arg0) -> Tensor", "vrelu3_vjp(Tensor arg0, Tensor dret) -> Tensor",
                               "mulsin(Tensor arg0, Tensor arg1) -> Tensor",
                               "mulsin_vjp(Tensor arg0, Tensor arg1, Tensor dret) -> (Tensor, Tensor)",
                               "_partials_mulsin(Tensor arg0, Tensor arg1) -> (Tensor, Tensor, Tensor)",
                               "rows(Tensor arg0) -> Tensor", "rows_vjp(Tensor arg0, Tensor dret) -> Tensor"]
    # The wrapper loads its library and installs the ops of that namespace.
    assert "_runtime.install_stable(globals(), 'm_torchops', 'my_ops', BINDINGS," in files["m.py"]


def test_a_wheels_namespace_is_its_full_import_name() -> None:
    assert _namespace(_rendered(BindingSpec("vrelu3"), standalone=True, package="pkg.sub")) == "pkg_sub_m"
    assert _namespace(_rendered(BindingSpec("vrelu3"))) == "m"
    assert _namespace(_rendered(BindingSpec("vrelu3"), torch_library="ns")) == "ns"


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


# ------------------------------------------------------------ refused or packed

@pytest.mark.parametrize("spec, words", [
    (BindingSpec("v", "vrelu3", None, "elementwise"), ["elementwise", "Float -> Float"]),
    (BindingSpec("c", "tally", None, "elementwise"), ["elementwise"]),
    (BindingSpec("n", "norm", None, "vmap"), ["vmap", "takes no tensor"]),
    (BindingSpec("s", "scale", "s_vjp", "vmap"), ["vmap with a vjp", "shared"]),
    (BindingSpec("p", "pair", "p_vjp", "vmap"), ["vmap", "(Tuple Float (Tensor 1 Float))"]),
    (BindingSpec("g", "grid"), ["(Tensor 2 (Tensor 1 Float))", "rank-2", "python target"]),
    (BindingSpec("t", "texts"), ["(Tensor 1 String)"]),
])
def test_signatures_that_do_not_fit_raise_binding_error(spec: BindingSpec, words: list[str]) -> None:
    with pytest.raises(BindingError) as info:
        render(spec)
    for w in words:
        assert w in str(info.value)


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


def test_mutates_declares_the_written_tensors_in_the_schema() -> None:
    """`mutates` names tensor arguments (an edef's are arg0, arg1...): each gets its own alias set,
    `Tensor(a!)`, on the op and its `_direct_` twin; its C++ views it without a copy."""
    files = _rendered(BindingSpec("scale_in", "scale", mutates=("arg0",)))
    assert _schemas(files)[0] == "scale_in(Tensor(a!) arg0, float arg1) -> Tensor"
    assert 'm.def("_direct_scale_in(Tensor(a!) arg0, float arg1) -> Tensor");' in files["torch_stable_ops.cpp"]
    assert "tt::view_written<ks::tensor<1, ks::Float>>(a_arg0" in files["torch_stable_ops.cpp"]
    scale_in = _bindings(files)[0]
    assert scale_in["mutates"] == ["arg0"] and "mutates" not in _bindings(_rendered(BindingSpec("scale")))[0]


@pytest.mark.parametrize("spec, says", [
    (BindingSpec("s", "scale", mutates=("x",)), "mutates names 'x', which is not one of its arguments (arg0, arg1"),
    (BindingSpec("s", "scale", mutates=("arg1",)), "mutates: argument 'arg1' is Float; an op declares writes into "
                                                   "tensors"),
    (BindingSpec("s", "scale", mutates=("arg0", "arg0")), "mutates names an argument twice"),
    (BindingSpec("s", "scale", "s_vjp", mutates=("arg0",)), "mutates with a vjp"),
    (BindingSpec("v", "vrelu3", mode="vmap", mutates=("arg0",)), "mutates is for plain-mode bindings"),
    (BindingSpec("w", "wsum", mutates=("arg0",)), "a packed op's schema cannot say which tensor it writes into"),
    (BindingSpec("n", "nested", mutates=("arg0",)), "mutates: argument 'arg0' is (Tensor 1 (Tensor 1 Float))"),
])
def test_mutates_that_no_op_can_declare_is_a_binding_error(spec: BindingSpec, says: str) -> None:
    with pytest.raises(BindingError, match=re.escape(says)):
        _rendered(spec)


def test_mutates_is_for_the_torch_target_and_read_from_configs_and_load_ks(tmp_path: Path) -> None:
    with pytest.raises(BindingError, match="mutates is for the torch target"):
        ksbind.render_module(DECLS, "m", "jax", bindings=[BindingSpec("s", "scale", mutates=("arg0",))])
    config = tmp_path / "m.yaml"
    config.write_text("name: m\ntarget: torch\ndeclarations: '(edef scale (Vec Float) ((Vec Float) Float))'\n"
                      "bindings:\n  - {name: a, function: scale, mutates: arg0}\n"
                      "  - {name: b, function: scale, mutates: [arg0]}\n")
    (spec,) = ksbind.load_config(config)
    assert spec.bindings is not None and [b.mutates for b in spec.bindings] == [("arg0",), ("arg0",)]
    config.write_text(config.read_text().replace("mutates: [arg0]", "mutates: [0]"))
    with pytest.raises(ConfigError, match=r"m\.yaml:6:.*each entry of .*mutates"):
        ksbind.load_config(config)
    from ksbind.load import _binding
    assert _binding({"name": "a", "function": "scale", "mutates": "arg0"}).mutates == ("arg0",)
    with pytest.raises(ConfigError, match="mutates must be an identifier or a list of identifiers"):
        _binding({"name": "a", "mutates": [3]})  # type: ignore[list-item]


def test_the_bindings_table_holds_the_runtimes_records() -> None:
    """What codegen writes into BINDINGS has exactly the keys ksbind/targets/torch/runtime/contract.py
    declares: every required key, optional ones only where the binding has them."""
    from ksbind.targets.torch.runtime.contract import BindingRecord, LeafRecord, PackRecord

    specs = [BindingSpec("vrelu3"), BindingSpec("scale", vjp="scale_vjp"), BindingSpec("relu3", mode="elementwise"),
             BindingSpec("stats"), BindingSpec("nested"), BindingSpec("pairs")]
    with pytest.warns(KsbindWarning):  # pairs is a packed op
        records = _bindings(_rendered(*specs))
    assert len(records) == len(specs)
    for r in records:
        assert BindingRecord.__required_keys__ <= r.keys() <= BindingRecord.__required_keys__ | \
            BindingRecord.__optional_keys__, r.keys()
        assert all(leaf.keys() == LeafRecord.__required_keys__ for leaf in (*r["leaves"], *r["vjp_leaves"]))
        for packs in (r["packed"], r["ragged"]):
            assert packs is None or packs.keys() == PackRecord.__required_keys__
    assert {r["name"]: bool(r["packed"]) for r in records}["pairs"]
    assert {r["name"]: r["vjp"] for r in records}["scale"] == "scale_vjp"


def test_only_plain_bindings_are_packed() -> None:
    with pytest.raises(BindingError, match=r"mode vmap takes tensors \(batched\) and scalars"):
        render(BindingSpec("wsum", mode="vmap"))


def test_a_tensor_of_strings_is_a_binding_error_and_default_bindings_skip_it(tmp_path: Path) -> None:
    with pytest.raises(BindingError, match=re.escape("(Tensor 1 String) is a tensor of String; torch tensors cannot")):
        render(BindingSpec("texts"))
    from ksbind.pipeline import render_spec
    from ksbind.resolve import resolve_spec

    config = tmp_path / "m.yaml"
    config.write_text("name: m\ntarget: torch\ndeclarations: |\n  (edef vrelu3 (Vec Float) ((Vec Float)))\n"
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


def test_bad_binding_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(f"""name: bad
target: torch
declarations: |
  (edef vrelu3 (Vec Float) ((Vec Float)))
bindings:
  - {{name: v, function: vrelu3, mode: elementwise}}
output: {tmp_path / 'out'}
""")
    with pytest.raises(BindingError) as info:
        ksbind.generate(config)
    assert info.value.location is not None and info.value.location.file == str(config)
    assert not (tmp_path / "out").exists()


def test_torch_library_needs_torch_target(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("name: c\ntarget: python\ntorch_library: ns\ndeclarations: '(edef f Float (Float))'\n")
    with pytest.raises(ConfigError, match="torch_library"):
        ksbind.load_config(config)


def test_shipped_torch_configs_render() -> None:
    from ksbind.pipeline import prepare

    for config in sorted((REPO / "configs").glob("*torch*.yaml")):
        for spec in ksbind.load_config(config):
            assert spec.target == "torch"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert prepare(config)
        # The one module of packed bindings says so, once per binding; nothing else warns.
        said = [str(w.message) for w in caught]
        assert all("a plain function over an op of packed tensors" in m for m in said), said
        packed = {re.search(r"binding '(\w+)'", m).group(1) for m in said}  # type: ignore[union-attr]
        assert packed == ({"pairsum", "numbered", "shout"} if config.name == "torch_ops.yaml" else set()), said
        assert len(said) == len(packed)


# ------------------------------------------------------------ which torch a library runs on

def _fake_library(folder: Path, marks: bytes) -> Path:
    """A file the loader refuses (not a shared library, as one with an undefined torch symbol
    would be refused), with the version marks a built library holds in its bytes."""
    lib = folder / "fake_torchops.so"
    lib.write_bytes(b"not an ELF file\0" + marks + b"\0")
    return lib


def test_an_older_torch_is_refused_naming_both_versions(tmp_path: Path) -> None:
    from ksbind.targets.torch import runtime as torch_runtime

    lib = _fake_library(tmp_path, b"ksbind-torch-min=2.13;ksbind-torch-built=2.13.0;")
    assert torch_runtime.torch_needed(str(lib)) == "2.13"
    with pytest.raises(ImportError, match=r"fake_torchops\.so needs torch 2\.13 or newer .*; this process has "
                                          r"torch 2\.12\.1\+cpu"):
        torch_runtime.load_library(str(lib), "ksbind_never_loaded", running="2.12.1+cpu")
    with pytest.raises(ImportError, match=r"this process has torch 2\.9\.1"):  # 9 < 13 as numbers, not as text
        torch_runtime.load_library(str(lib), "ksbind_never_loaded", running="2.9.1")


def test_a_library_that_does_not_load_names_the_torch_it_needs(tmp_path: Path) -> None:
    """Past the version check (the running torch is new enough), the loader's refusal is an
    ImportError naming the running torch and the one the library needs, with the loader's reason."""
    import torch

    from ksbind.targets.torch import runtime as torch_runtime

    lib = _fake_library(tmp_path, b"ksbind-torch-min=2.10;ksbind-torch-built=2.99.0;")
    with pytest.raises(ImportError) as raised:
        torch_runtime.load_library(str(lib), "ksbind_never_loaded")
    text = str(raised.value)
    assert text.startswith(f"fake_torchops.so: the op library did not load under torch {torch.__version__} "
                           f"(it needs torch 2.10 or newer): "), text
    assert raised.value.__cause__ is not None and str(raised.value.__cause__) in text
    with pytest.raises(ImportError):  # nothing was registered for the namespace: still refused, not "loaded"
        torch_runtime.load_library(str(lib), "ksbind_never_loaded")
