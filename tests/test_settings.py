"""The settings model (ksbind/spec.py's Annotated fields) and what is made from it:
the reader's keys, docs/config.md's key tables, and the JSON Schema ksbind ships,
checked with a real validator (jsonschema) against every config the repository
holds and against the catalogue of bad inputs (tests/bad_inputs/)."""
from __future__ import annotations

import json
import re
import textwrap
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ksbind import config, settings, spec
from ksbind.cli import main
from ksbind.errors import ConfigError
from ksbind.schema import SCHEMA_FILE, TABLES, config_schema, schema_text, with_tables
from ksbind.targets.registry import ALIASES, TARGETS

REPO = Path(__file__).resolve().parent.parent
BAD_INPUTS = Path(__file__).parent / "bad_inputs"
RECORDS = (spec.ModuleSpec, spec.BindingSpec, spec.KscSpec, spec.RuntimeSpec, spec.PythonFunctionSpec)

#: Bad-input cases a schema cannot refuse, and why: they need the disk, the declarations,
#: the templates or the whole file at once. Every other .yaml case must be refused by it.
SCHEMA_CANNOT = {
    "yaml_target_unknown.yaml": "which targets installed distributions register (any name may be one)",
    "binding_ambiguous.yaml": "which functions the declarations declare",
    "binding_duplicate.yaml": "names unique across bindings (JSON Schema has no unique-by-property)",
    "binding_duplicate_via_vjp.yaml": "names unique across bindings and their vjps",
    "binding_function_injection.yaml": "which functions the declarations declare",
    "binding_function_unknown.yaml": "which functions the declarations declare",
    "binding_keyword_symbol.yaml": "the C++ symbol of a declared function",
    "binding_lam.yaml": "the declared function's types",
    "binding_lm.yaml": "the declared function's types",
    "binding_structured_injection.yaml": "the ks grammar of a structured name",
    "binding_structured_unknown.yaml": "which functions the declarations declare",
    "binding_symbol_cpp_syntax.yaml": "the C++ symbol of a declared function",
    "binding_vjp_underivable.yaml": "the declared function's types",
    "decls_conflict_across_files.yaml": "the declarations' contents",
    "file_ks_is_directory.yaml": "the disk",
    "file_ks_not_utf8.yaml": "the disk",
    "file_ks_with_error.yaml": "the declarations' contents",
    "file_missing_cpp.yaml": "the disk",
    "file_missing_ks.yaml": "the disk",
    "inline_declarations_syntax.yaml": "the ks grammar of inline declarations",
    "inline_declarations_type.yaml": "the ks types of inline declarations",
    "output_is_a_file.yaml": "the disk",
    "templates_filter_fails.yaml": "the templates",
    "templates_include_missing.yaml": "the templates",
    "templates_missing_dir.yaml": "the disk",
    "templates_syntax_error.yaml": "the templates",
    "templates_undefined_value.yaml": "the templates",
    "yaml_duplicate_key.yaml": "YAML's own rules: a loaded document keeps the last of two keys",
    "yaml_duplicate_key_in_binding.yaml": "YAML's own rules: a loaded document keeps the last of two keys",
    "yaml_duplicate_module.yaml": "names unique across modules",
    "yaml_filters_missing.yaml": "whether a Python module can be imported",
    "yaml_merge_key.yaml": "YAML's own rules: a merge key is resolved before any schema sees the mapping",
    "yaml_same_output.yaml": "output folders distinct across modules",
}


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_target_names_are_the_target_records() -> None:
    """spec.BuiltinTargetName names ksbind's own targets: the records' names (what each target is)
    and the other names a config may give one of them."""
    names = typing.get_args(spec.BuiltinTargetName)
    assert tuple(n for n in names if n not in ALIASES) == tuple(TARGETS)
    assert set(names) - set(TARGETS) == set(ALIASES) and set(ALIASES.values()) <= set(TARGETS)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_every_key_is_declared_once_with_a_form_and_a_doc(record: type) -> None:
    keys = settings.settings_of(record)
    assert keys and len({s.key for s in keys}) == len(keys)
    for s in keys:
        assert s.spec.doc and "\n" not in s.spec.doc and s.spec.doc.endswith((".", ")")), s.key
        if s.spec.form == "choice":
            assert s.choices and (not s.has_default or s.default in s.choices), s.key
        if s.spec.form in ("record", "records", "runtime"):
            assert s.spec.record in RECORDS, s.key
        if s.spec.form == "count":
            assert s.spec.maximum > 0, s.key
    # The reader's key lists are the model's.
    lists = {spec.ModuleSpec: config.MODULE_KEYS, spec.BindingSpec: config.BINDING_KEYS,
             spec.KscSpec: config.KSC_KEYS, spec.RuntimeSpec: config.RUNTIME_KEYS,
             spec.PythonFunctionSpec: config.PYTHON_KEYS}
    assert lists[record] == tuple(s.key for s in keys)


def test_every_form_is_used() -> None:
    """Each form has a reader (config._read) and a schema (schema._value): every one is in use,
    so the key tables and the schema above exercise both."""
    used = {s.spec.form for r in RECORDS for s in settings.settings_of(r)}
    assert used == set(typing.get_args(settings.Form))


def test_docs_tables_are_the_models() -> None:
    doc = REPO / "docs" / "config.md"
    text = doc.read_text(encoding="utf-8")
    assert with_tables(text) == text, "docs/config.md's key tables differ from ksbind/spec.py: run " \
                                      "python scripts/generate_settings.py"
    for name, record in TABLES.items():
        table = text.split(f"<!-- BEGIN settings:{name} -->", 1)[1].split(f"<!-- END settings:{name} -->", 1)[0]
        assert [f"`{k}`" for k in settings.keys_of(record)] == re.findall(r"^\| (`[a-z_]+`) \|", table, re.M)


def test_shipped_schema_is_the_models() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), \
        "ksbind/config.schema.json differs from ksbind/spec.py: run python scripts/generate_settings.py"


def test_schema_names_every_key_and_choice() -> None:
    defs = config_schema()["definitions"]
    assert list(defs["module"]["properties"]) == list(config.MODULE_KEYS)
    assert list(defs["binding"]["properties"]) == list(config.BINDING_KEYS)
    # any string (another distribution may register a target), ksbind's own as the examples
    assert sorted(defs["module"]["properties"]["target"]["examples"]) == sorted(typing.get_args(spec.BuiltinTargetName))
    assert defs["binding"]["properties"]["mode"]["enum"] == list(spec.MODES)
    assert defs["module"]["properties"]["layout"]["default"] == "split"


def test_ksbind_schema_prints_the_shipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == SCHEMA_FILE.read_text(encoding="utf-8")


def _repository_configs() -> list[Path]:
    return sorted([*(REPO / "configs").glob("*.yaml"), *(REPO / "examples").rglob("*.yaml")])


def _docs_yaml_blocks() -> list[tuple[str, str]]:
    blocks = []
    for md in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")]):
        for i, m in enumerate(re.finditer(r"^ *```yaml\n(.*?)^ *```", md.read_text(encoding="utf-8"), re.M | re.S)):
            blocks.append((f"{md.relative_to(REPO)}#{i + 1}", textwrap.dedent(m.group(1))))
    return blocks


def _as_config(data: Any) -> Any:
    """A docs block that shows some keys of a module (no name:, no modules:) as a whole config."""
    if isinstance(data, dict) and "name" not in data and "modules" not in data:
        return {"name": "m", "declarations": "", **data}
    return data


@pytest.mark.parametrize("path", _repository_configs(), ids=lambda p: str(p.relative_to(REPO)))
def test_repository_configs_are_valid(path: Path, validator: jsonschema.Draft7Validator) -> None:
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))]
    assert not errors, errors
    assert config.load_config(path)  # ...and the reader agrees


def test_docs_yaml_blocks_are_valid(validator: jsonschema.Draft7Validator) -> None:
    blocks = _docs_yaml_blocks()
    assert len(blocks) >= 8
    for where, text in blocks:
        errors = [e.message for e in validator.iter_errors(_as_config(yaml.safe_load(text)))]
        assert not errors, (where, errors)


def test_configs_name_the_schema_for_editors() -> None:
    """configs/ point YAML language servers at the shipped schema (a modeline on any line;
    relu3.yaml's is its last, which keeps the line numbers tests/test_config.py asserts)."""
    for path in sorted((REPO / "configs").glob("*.yaml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert "# yaml-language-server: $schema=../ksbind/config.schema.json" in lines, path


def _bad_yaml_cases() -> list[str]:
    return sorted(p.name for p in BAD_INPUTS.glob("*.yaml"))


@pytest.mark.parametrize("case", _bad_yaml_cases())
def test_schema_refuses_what_the_reader_refuses(case: str, validator: jsonschema.Draft7Validator) -> None:
    """Each bad config the reader refuses, the schema refuses too, except where a schema
    cannot say it (SCHEMA_CANNOT); YAML that does not load as plain data (tags, syntax,
    NUL, an empty file) never reaches a schema, and an editor's YAML server flags it itself."""
    try:
        data = yaml.safe_load((BAD_INPUTS / case).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        assert case not in SCHEMA_CANNOT
        return
    refused = not validator.is_valid(data)
    if case in SCHEMA_CANNOT:
        assert not refused, f"{case}: the schema refuses it now: take it off SCHEMA_CANNOT"
    else:
        assert refused, f"{case}: the reader refuses it, the schema accepts it"


def test_schema_refuses_rules_between_keys(validator: jsonschema.Draft7Validator) -> None:
    ok = {"name": "m", "ks": "a.ks"}
    assert validator.is_valid(ok)
    bad: dict[str, Any]
    for bad in ({"name": "m"}, {"name": "m", "ks": []}, {**ok, "torch_library": "ops"},
                {**ok, "target": "python", "tensor_types": [[1, "Float"]]},
                {**ok, "bindings": [{"name": "f", "vjp_from": "rev"}]},
                {**ok, "runtime": {"include_dirs": []}}, {**ok, "ksc": {"timeout": 0}},
                {**ok, "bindings": [{"name": "Tensor_1_Float"}]}, {"modules": []}, {"modules": [ok], "name": "m"}):
        assert not validator.is_valid(bad), bad
    for good in ({**ok, "target": "torch", "torch_library": "ops"}, {**ok, "tensor_types": [[2, "Integer"]]},
                 {**ok, "bindings": [{"name": "f", "vjp": "f_vjp", "vjp_from": "rev"}]},
                 {**ok, "runtime": "bundled"}, {**ok, "ksc": {}}, {"modules": [ok]}):
        assert validator.is_valid(good), good


def test_load_ks_bindings_are_read_by_the_model() -> None:
    from ksbind.load import _binding
    b = _binding({"name": "f", "vjp": "f_vjp", "vjp_from": "rev", "long": True, "mode": "vmap"})
    assert b == spec.BindingSpec("f", vjp="f_vjp", vjp_from="rev", long_call=True, mode="vmap")
    with pytest.raises(ConfigError, match="a binding's mode must be one of plain, elementwise, vmap"):
        _binding({"name": "f", "mode": "vmapp"})
    with pytest.raises(ConfigError, match=r"unknown key 'lon' .*\(did you mean 'long'\?\)"):
        _binding({"name": "f", "lon": True})


def test_render_module_checks_tensor_elements() -> None:
    from ksbind import parse_ks, render_module
    decls = parse_ks("(edef f Float (Float))")
    with pytest.raises(ConfigError, match=r"unknown tensor element 'Flaot' \(did you mean 'Float'\?\)"):
        render_module(decls, tensor_types=[(1, "Flaot")])


def test_module_settings_are_declared_once() -> None:
    """A module's settings are ModuleSettings' fields: the config (ModuleSpec) and render
    (ModuleOptions) inherit them and declare none again, and render_module takes each as a
    keyword argument with the field's default."""
    import dataclasses
    import inspect

    from ksbind.codegen.render import render_keyword_fields, render_module
    shared = [f.name for f in dataclasses.fields(spec.ModuleSettings)]
    assert shared[:2] == ["name", "target"] and "logging" in shared and "arena_bytes" in shared
    for record in (spec.ModuleSpec, spec.ModuleOptions):
        assert issubclass(record, spec.ModuleSettings)
        assert not set(shared) & set(vars(record).get("__annotations__", {})), record  # none declared again
    model = {s.field: s for s in settings.settings_of(spec.ModuleSpec)}
    assert [n for n in shared if n in model] == [n for n in model if n in shared] == shared[:-1]  # all keys but
    assert shared[-1] == "versioned_from"                                                        # versioned_from
    params = inspect.signature(render_module).parameters
    keywords = [f.name for f in render_keyword_fields()]
    assert set(shared) - {"name", "target"} <= set(keywords)
    for f in dataclasses.fields(spec.ModuleOptions):
        if f.name in ("name", "target"):  # render_module's module_name and target arguments
            continue
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY and params[f.name].default == f.default, f.name


def test_module_options_take_every_setting_from_the_spec() -> None:
    """pipeline.module_options names no setting: each ModuleSettings field reaches render as the
    config gave it (a setting added there needs no line here)."""
    import dataclasses

    from ksbind.pipeline import module_options
    given = spec.ModuleSpec(name="m", config_path=Path("/abs/c.yaml"), target="python", tensor_types=((2, "Float"),),
                            logging=True, arena_bytes=4096, layout="single", torch_library="ns",
                            versioned_from="m_old", target_options=(("k", "v"),), templates=(Path("t"),))
    options = module_options(given, ["cli"], standalone=True, package="pkg")
    for f in dataclasses.fields(spec.ModuleSettings):
        assert getattr(options, f.name) == getattr(given, f.name), f.name
    assert options.templates == ("cli", "t") and (options.standalone, options.package) == (True, "pkg")
