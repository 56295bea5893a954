"""ksbind/codegen/record_source.py: a wrapper's table written as calls of its runtime's records,
checked against them as it is written; and codegen reads the records without the framework."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from ksbind.codegen.record_source import WIDTH, record_source
from ksbind.targets.jax.runtime import contract as jax_contract
from ksbind.targets.torch.runtime import contract as torch_contract

REPO = Path(__file__).resolve().parent.parent

LEAF: dict[str, Any] = {"name": "x", "where": "x", "kind": "tensor", "float": True, "batched": False, "rank": 1}
PACKED: dict[str, Any] = {"params": [["v", ["tuple", ["f", ["t", 1, "float32"]]]]], "result": "f",
                          "vjp_params": [], "vjp_result": None}
BINDING: dict[str, Any] = {
    "name": "f", "mode": "plain", "params": ["x"], "spec": ["leaf"], "leaves": [LEAF],
    "result": {"kind": "tuple", "parts": [{"kind": "leaf", "dtype": "float32", "rank": 1}, {"kind": "empty"}]},
    "vjp": None, "vjp_leaves": [], "vjp_result": None, "vjp_spec": [], "doc": "a doc 'quoted'\nline",
    "packed": PACKED, "ragged": None, "partials": "_partials_f"}


def _evaluated(source: str) -> Any:
    return eval(source, {"_runtime": torch_contract})  # noqa: S307


def test_a_table_is_written_as_record_calls_that_build_the_same_values() -> None:
    source = record_source([BINDING, BINDING], list[torch_contract.BindingRecord], "_runtime.")
    assert _evaluated(source) == [BINDING, BINDING]
    assert source.startswith("[\n    _runtime.BindingRecord(\n        name='f',")
    for call in ("_runtime.LeafRecord(name='x'", "_runtime.ResultRecord(kind='leaf', dtype='float32', rank=1)", "_runtime.ResultRecord(kind='empty')",
                 "packed=_runtime.PackRecord(", "params=[['v', ['tuple', ['f', ['t', 1, 'float32']]]]]", "vjp_result=None"):
        assert call in source, call
    assert max(len(line) for line in source.splitlines()) <= WIDTH


def test_what_is_not_the_declared_record_is_refused_as_it_is_written() -> None:
    records = list[torch_contract.BindingRecord]
    with pytest.raises(TypeError, match=r"BindingRecord: keys not declared \['vjp_specs'\]"):
        record_source([{**BINDING, "vjp_specs": []}], records, "_runtime.")
    without_doc = {k: v for k, v in BINDING.items() if k != "doc"}
    with pytest.raises(TypeError, match=r"keys missing \['doc'\]"):
        record_source([without_doc], records, "_runtime.")
    with pytest.raises(TypeError, match="a dict where"):
        record_source([{**BINDING, "params": [{"name": "x"}]}], records, "_runtime.")
    with pytest.raises(TypeError, match="LeafRecord: expected its fields"):
        record_source([{**BINDING, "leaves": ["x"]}], records, "_runtime.")
    # Optional keys (total=False) may be left out; a declared dict field is a dict.
    tree = record_source({"kind": "empty"}, jax_contract.Tree, "_runtime.")
    assert tree == "_runtime.Tree(kind='empty')"
    assert record_source({"a": "b"}, dict[str, str], "_runtime.") == "{'a': 'b'}"


@pytest.mark.parametrize("config, framework, record", [("relu3_torch.yaml", "torch", "BindingRecord"),
                                                      ("relu3_jax.yaml", "jax", "JaxBindingRecord")])
def test_codegen_reads_the_runtimes_records_without_importing_the_framework(config: str, framework: str, record: str,
                                                                         tmp_path: Path) -> None:
    """The runtime packages import their contract (typing alone) eagerly and the rest on first use."""
    code = ("import sys; from ksbind.cli import main; "
            f"assert main(['-q', 'generate', {str(REPO / 'configs' / config)!r}, '--out-dir', {str(tmp_path)!r}]) == 0; "
            f"assert {framework!r} not in sys.modules, 'imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    name = config.removesuffix(".yaml")
    assert f"\n    _runtime.{record}(\n" in (tmp_path / name / f"{name}.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("config, key, contract", [("torch_ops.yaml", "stable_bindings", torch_contract),
                                                   ("relu3_jax.yaml", "jax_bindings", jax_contract)])
def test_codegen_builds_the_runtimes_records_themselves(config: str, key: str, contract: Any) -> None:
    """No second schema in codegen: the context's bindings are the runtime's records (plain dicts
    with only the keys the TypedDicts declare), and the wrapper's table is exactly them."""
    import typing

    from ksbind.errors import KsbindWarning
    from ksbind.pipeline import prepare
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KsbindWarning)  # torch_ops's packed bindings say they are packed
        modules = prepare(REPO / "configs" / config)
    for module in modules:
        records = module.rendered.context[key]
        assert records and all(type(r) is dict for r in records), module.spec.name
        record_type = contract.BindingRecord if key == "stable_bindings" else contract.JaxBindingRecord
        declared = set(typing.get_type_hints(record_type))
        assert all(set(r) <= declared for r in records)
        literal = module.rendered.context[key + "_literal"]
        assert eval(literal, {"_runtime": contract}) == records  # noqa: S307
