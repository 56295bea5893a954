"""The JSON Schema of ksbind configs and docs/config.md's key tables, both made
from the settings model (ksbind/spec.py's ``Annotated`` fields; ksbind/settings.py),
and docs/targets.md's table of the support functions (ksbind/support.py).

The schema is shipped as ``ksbind/config.schema.json`` (``ksbind schema`` prints
it); scripts/generate_settings.py writes it and the tables, and
tests/test_settings.py fails when either differs from what this module makes.
It says what a schema can: the keys, their types and choices, the rules between
keys (``torch_library`` needs a target that registers ops...). What needs the
disk or the declarations (a file that exists, a function that is declared) only
ksbind itself checks.
"""
from __future__ import annotations

import json
import keyword
import re
from pathlib import Path
from typing import Any

from ksbind.config import MODULE_NAME_PATTERN
from ksbind.lang.identifiers import CPP_KEYWORDS
from ksbind.lang.types import MAX_RANK
from ksbind.settings import Setting, keys_of, settings_of
from ksbind.spec import (
    RESERVED_NAMES,
    TENSOR_ELEMENTS,
    BindingSpec,
    KscSpec,
    ModuleSpec,
    PythonFunctionSpec,
    RuntimeSpec,
)
from ksbind.support import SUPPORT_FUNCTIONS
from ksbind.targets.registry import ALIASES, TARGETS, get_target

#: The schema as the package ships it.
SCHEMA_FILE = Path(__file__).with_name("config.schema.json")
#: The tables of docs/config.md, by marker name, and the record each describes.
TABLES: dict[str, type] = {"module": ModuleSpec, "binding": BindingSpec, "ksc": KscSpec, "runtime": RuntimeSpec,
                           "python": PythonFunctionSpec}
_DEFINITIONS = {BindingSpec: "binding", KscSpec: "ksc", RuntimeSpec: "runtime", PythonFunctionSpec: "python_function"}
#: A python: entry's function: a .py file's (a path) or an importable module's, then :NAME.
PYTHON_FUNCTION_PATTERN = r"^(.+\.py|.*/.*|" + MODULE_NAME_PATTERN + r"):[A-Za-z_][A-Za-z0-9_]*$"


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 7, which editors' YAML servers read) of a config file."""
    module = _record(ModuleSpec)
    rules: list[dict[str, Any]] = [
        # Some declarations: a non-empty ks:, declarations: or a non-empty python:.
        {"anyOf": [{"required": ["ks"], "properties": {"ks": _nonempty_paths()}}, {"required": ["declarations"]},
                   {"required": ["python"], "properties": {"python": {"minItems": 1}}}]},
        # python: needs ksc: (its functions are compiled by ksc).
        {"if": {"required": ["python"]}, "then": {"required": ["ksc"]}},
        _needs_target_with("torch_library", "torch_library"),
        _needs_target_with("tensor_types", "tensor_classes"),
    ]
    module["allOf"] = rules
    binding = _record(BindingSpec)
    binding["allOf"] = [{"if": {"required": ["vjp_from"], "properties": {"vjp_from": {"not": {"const": "auto"}}}},
                         "then": {"required": ["vjp"]}}]
    python = _record(PythonFunctionSpec)
    python["if"] = {"required": ["mode"], "properties": {"mode": {"const": "elementwise"}}}
    python["then"] = {"properties": {"args": {"minItems": 1, "maxItems": 2, "items": {"const": "Float"}}}}
    python["else"] = {"required": ["args"]}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "ksbind config",
        "description": "One module, or a list of them under 'modules:' (docs/config.md).",
        "anyOf": [
            {"$ref": "#/definitions/module"},
            {"type": "object", "additionalProperties": False, "required": ["modules"],
             "properties": {"modules": {"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/module"},
                                        "description": "Several modules in one file."}}},
        ],
        "definitions": {"module": module, "binding": binding, "ksc": _record(KscSpec),
                        "runtime": _record(RuntimeSpec), "python_function": python},
    }


def schema_text() -> str:
    """The schema file's text."""
    return json.dumps(config_schema(), indent=1, ensure_ascii=False) + "\n"


def _needs_target_with(key: str, flag: str) -> dict[str, Any]:
    """``key`` is allowed only when the module's target record sets ``flag``."""
    targets = [name for name, t in TARGETS.items() if getattr(t, flag)]
    targets += [alias for alias, name in ALIASES.items() if name in targets]  # another name of one of them
    default = next(s.default for s in settings_of(ModuleSpec) if s.key == "target")
    then: dict[str, Any] = {"properties": {"target": {"enum": targets}}}
    if not getattr(get_target(default), flag):
        then["required"] = ["target"]
    return {"if": {"required": [key]}, "then": then}


def _record(record: type) -> dict[str, Any]:
    settings = settings_of(record)
    out: dict[str, Any] = {"type": "object", "additionalProperties": False,
                           "properties": {s.key: _property(s) for s in settings}}
    required = [s.key for s in settings if s.spec.required is not None]
    if required:
        out["required"] = required
    return out


def _property(s: Setting) -> dict[str, Any]:
    out = _value(s)
    doc = s.spec.doc
    out["description"] = _plain(doc)
    out["markdownDescription"] = doc
    if s.spec.default_doc is None and s.has_default and s.default is not None:
        default = list(s.default) if isinstance(s.default, tuple) else s.default
        if isinstance(default, (bool, int, float, str, list)):
            out["default"] = int(default) if isinstance(default, float) and default.is_integer() else default
    return out


def _identifier(extra_names: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A C++ and Python identifier (lang/identifiers.py's rules), not one of ``extra_names``."""
    names = sorted(CPP_KEYWORDS | set(keyword.kwlist) | set(keyword.softkwlist) | extra_names)
    return {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
            "not": {"anyOf": [{"enum": names}, {"pattern": "__"}]
                    + ([{"pattern": "^Tensor_"}] if extra_names else [])}}


def _paths() -> dict[str, Any]:
    return {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


def _nonempty_paths() -> dict[str, Any]:
    return {"anyOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": {"type": "string"}}]}


def _value(s: Setting) -> dict[str, Any]:
    """The schema of one key's value, by its form."""
    k = s.spec
    form = k.form
    if k.binding_name:
        return _identifier(RESERVED_NAMES)
    if form in ("text", "path", "ks_text"):
        return {"type": "string"}
    if form == "identifier":
        return _identifier()
    if form == "module_name":
        return {"type": "string", "pattern": f"^{MODULE_NAME_PATTERN}$"}
    if form == "choice":
        return {"enum": list(s.choices)}
    if form == "target":  # a registered target's name too: ksbind's own are the examples
        return {"type": "string", "examples": [*TARGETS, *ALIASES]}
    if form == "target_options":
        return {"type": "object", "additionalProperties": {"type": ["string", "boolean", "integer"]}}
    if form == "flag":
        return {"type": "boolean"}
    if form == "count":
        return {"type": "integer", "minimum": 1, "maximum": k.maximum}
    if form == "paths":
        return _nonempty_paths() if k.required is not None else _paths()
    if form == "tensor_types":
        pair = {"type": "array", "minItems": 2, "maxItems": 2,
                "items": [{"type": "integer", "minimum": 1, "maximum": MAX_RANK}, {"enum": list(TENSOR_ELEMENTS)}]}
        return {"type": "array", "items": pair}
    if form == "runtime":
        assert k.record is not None
        return {"anyOf": [{"const": "bundled"}, {"$ref": f"#/definitions/{_DEFINITIONS[k.record]}"}]}
    if form == "record":
        assert k.record is not None
        return {"$ref": f"#/definitions/{_DEFINITIONS[k.record]}"}
    if form == "records":
        assert k.record is not None
        record = {"$ref": f"#/definitions/{_DEFINITIONS[k.record]}"}
        if k.record is BindingSpec:  # a binding may be a bare name, as load_ks takes one
            return {"type": "array", "items": {"anyOf": [_identifier(RESERVED_NAMES), record]}}
        return {"type": "array", "items": record}
    if form == "python_function":
        return {"type": "string", "pattern": PYTHON_FUNCTION_PATTERN}
    if form == "ks_types":
        return {"type": "array", "items": {"type": "string"}}
    if form == "optional_name":
        return {"anyOf": [_identifier(RESERVED_NAMES), {"const": False}]}
    if form == "names":
        return {"anyOf": [_identifier(), {"type": "array", "items": _identifier()}]}
    raise AssertionError(f"no schema for form {form!r}")  # a Form added to settings.py without one here


def _plain(markdown: str) -> str:
    """Markdown as plain text: links as their text, no backticks or bold."""
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", markdown)
    return text.replace("**", "").replace("`", "")


# ------------------------------------------------------------------ the docs' tables

def key_table(record: type) -> str:
    """docs/config.md's table of a record's keys: key, type, default, meaning."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for s in settings_of(record):
        cells = [f"`{s.key}`", _type_doc(s), _default_doc(s), s.spec.doc]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def _type_doc(s: Setting) -> str:
    k = s.spec
    if k.type_doc is not None:
        text = k.type_doc
    elif k.form == "choice":
        text = " | ".join(f"`{c}`" for c in s.choices)
    elif k.form == "record" and k.record is not None:
        text = f"mapping `{{{', '.join(keys_of(k.record))}}}`"
    else:
        text = {
            "text": "string", "identifier": "identifier", "module_name": "Python module name", "flag": "boolean",
            "count": f"whole number, 1..{k.maximum}", "path": "path", "paths": "path or list of paths",
            "ks_text": "string", "tensor_types": "list of `[RANK, ELEMENT]`", "runtime": "`bundled` or mapping",
            "record": "mapping", "records": "list of mappings",
            "python_function": "`file.py:NAME` or `package.module:NAME`", "ks_types": "list of ks types",
            "optional_name": "identifier or `false`", "names": "identifier or list of identifiers",
        }[k.form]
    return text + (" (required)" if k.required is not None else "")


def _default_doc(s: Setting) -> str:
    if s.spec.default_doc is not None:
        return s.spec.default_doc
    if s.spec.required is not None:
        return ""
    d = s.default
    if not s.has_default:
        return ""
    if d is None:
        return "none"
    if isinstance(d, bool):
        return f"`{str(d).lower()}`"
    if isinstance(d, tuple):
        return "`[]`" if not d else f"`{list(d)}`"
    return f"`{d}`"


def with_tables(text: str) -> str:
    """``text`` (docs/config.md) with each generated table between its markers made anew."""
    for name, record in TABLES.items():
        begin, end = f"<!-- BEGIN settings:{name} -->", f"<!-- END settings:{name} -->"
        if begin not in text or end not in text:
            raise ValueError(f"docs/config.md lacks the markers {begin} ... {end}")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = (f"{head}{begin}\n<!-- generated from ksbind/spec.py by scripts/generate_settings.py: "
                f"edit the model there -->\n{key_table(record)}{end}{tail}")
    return text


#: The marker names of docs/targets.md's table of the support functions (ksbind/support.py).
SUPPORT_MARKERS = ("<!-- BEGIN support-functions -->", "<!-- END support-functions -->")


def support_table() -> str:
    """docs/targets.md's table of the support functions: each one's signature and what it does on
    modules with an arena per thread and with one per module (the targets of each, from their records)."""
    def on(per_call: bool) -> str:
        return ", ".join(t.name for t in TARGETS.values() if t.arena_per_call == per_call)
    lines = [f"| function | {on(True)} targets: an arena per thread | {on(False)} target: one arena per module |",
             "|---|---|---|"]
    for f in SUPPORT_FUNCTIONS:
        note = "Only where the module has loops compiled per CPU capability: " if f.kernels_only else ""
        lines.append(f"| `{f.signature}` | {note}{f.doc('thread')} | {'—' if f.kernels_only else f.doc('module')} |")
    return "\n".join(lines) + "\n"


def with_support_table(text: str) -> str:
    """``text`` (docs/targets.md) with the support functions' table between its markers made anew."""
    begin, end = SUPPORT_MARKERS
    if begin not in text or end not in text:
        raise ValueError(f"docs/targets.md lacks the markers {begin} ... {end}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return (f"{head}{begin}\n<!-- generated from ksbind/support.py by scripts/generate_settings.py: "
            f"edit the table there -->\n{support_table()}{end}{tail}")


__all__ = ["SCHEMA_FILE", "TABLES", "config_schema", "schema_text", "key_table", "with_tables", "SUPPORT_MARKERS",
           "support_table", "with_support_table"]
