"""YAML configs -> ModuleSpecs, validated; every error names file:line:column.

The YAML is composed (not constructed) so each value keeps its position, and
only plain YAML types are accepted: no object tags, no duplicate keys, no
unknown keys. Paths are relative to the config file.
"""
from __future__ import annotations

import keyword
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import yaml

from ksbind.errors import ConfigError, KsbindError, Location, closest
from ksbind.lang.identifiers import identifier_problem
from ksbind.lang.reader import read_text
from ksbind.lang.types import MAX_RANK, KsType, ScalarType, TensorType, parse_type
from ksbind.settings import Setting, keys_of, settings_of
from ksbind.spec import (
    TENSOR_ELEMENTS,
    BindingSpec,
    InlineDeclarations,
    KscSpec,
    ModuleSpec,
    PythonFunctionSpec,
    PythonRef,
    RuntimeSpec,
    TensorElement,
)
from ksbind.targets.registry import TARGETS, Target, get_target

#: Each record's config keys, from the settings model (ksbind/spec.py's Annotated fields).
MODULE_KEYS = keys_of(ModuleSpec)
BINDING_KEYS = keys_of(BindingSpec)
RUNTIME_KEYS = keys_of(RuntimeSpec)
KSC_KEYS = keys_of(KscSpec)
PYTHON_KEYS = keys_of(PythonFunctionSpec)
#: What ``filters:`` must match: a dotted Python module name (schema.py says the same).
MODULE_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
#: YAML's standard tags, and the plain ones a config may hold.
_TAG = "tag:yaml.org,2002:"
_PLAIN_TAGS = {_TAG + t for t in ("str", "int", "bool", "null", "float", "seq", "map")}

_T = TypeVar("_T")
_C = TypeVar("_C", bound=str)


def select_module(path: str | os.PathLike[str], name: str | None, how_to_choose: str,
                  error: type[KsbindError] = ConfigError) -> ModuleSpec:
    """The module ``name`` of a config, or its only module when ``name`` is None.
    ``how_to_choose`` ends the error of a config holding several (the caller's
    way of naming one); ``error`` is the exception class raised."""
    specs = load_config(path)
    where = Location(os.fspath(path))
    if name is not None:
        for s in specs:
            if s.name == name:
                return s
        raise error(f"no module named {name!r} in this config (it has: {', '.join(s.name for s in specs)})", where)
    if len(specs) != 1:
        raise error(f"this config holds {len(specs)} modules ({', '.join(s.name for s in specs)}): {how_to_choose}",
                    where)
    return specs[0]


def load_config(path: str | os.PathLike[str]) -> list[ModuleSpec]:
    """Every module a config file describes (one, or a list under ``modules:``)."""
    config_path = Path(path)
    return load_config_text(read_text(config_path, "config file"), config_path)


def load_config_text(text: str, config_path: Path) -> list[ModuleSpec]:
    """``load_config`` of YAML text standing for ``config_path`` (its paths are
    relative to that file's folder; errors name it)."""
    return _load_root(_compose(text, str(config_path)), config_path)


def load_toml_modules(tables: list[dict[str, Any]], toml_text: str, path: Path) -> list[ModuleSpec]:
    """pyproject.toml's ``[[tool.ksbind.modules]]`` tables (as tomllib read them from
    ``toml_text``), read as a YAML config's ``modules:`` list by the same reader, so each
    error names the line and column of the TOML key it is about (a value inside an array
    or an inline table: its key's). Paths are relative to pyproject.toml's folder."""
    marks = _toml_module_marks(toml_text)
    filename = str(path)

    def mark(at: tuple[str, ...], where: dict[tuple[str, ...], tuple[int, int]]) -> yaml.Mark:
        while at not in where and at:
            at = at[:-1]
        line, column = where.get(at, (1, 1))
        return yaml.Mark(filename, 0, line - 1, column - 1, None, 0)  # no buffer: no snippet in messages

    def node(value: Any, at: tuple[str, ...], where: dict[tuple[str, ...], tuple[int, int]]) -> yaml.Node:
        m = mark(at, where)
        if isinstance(value, dict):
            pairs = [(yaml.ScalarNode(_TAG + "str", str(k), mark(at + (str(k),), where), m),
                      node(v, at + (str(k),), where)) for k, v in value.items()]
            return yaml.MappingNode(_TAG + "map", pairs, m, m)
        if isinstance(value, list):
            return yaml.SequenceNode(_TAG + "seq", [node(v, at, where) for v in value], m, m)
        if isinstance(value, bool):
            return yaml.ScalarNode(_TAG + "bool", "true" if value else "false", m, m)
        if isinstance(value, (int, float, str)):
            kind = "str" if isinstance(value, str) else "int" if isinstance(value, int) else "float"
            return yaml.ScalarNode(_TAG + kind, value if isinstance(value, str) else repr(value), m, m)
        return yaml.ScalarNode(_TAG + "timestamp", str(value), m, m)  # a TOML date: refused as YAML's would be

    first = marks[0] if marks else {}
    modules = [node(t, (), marks[i] if i < len(marks) else first) for i, t in enumerate(tables)]
    root_mark = mark((), first)
    root = yaml.MappingNode(_TAG + "map", [(yaml.ScalarNode(_TAG + "str", "modules", root_mark, root_mark),
                                            yaml.SequenceNode(_TAG + "seq", modules, root_mark, root_mark))],
                            root_mark, root_mark)
    _check_tags(root, filename)
    return _load_root(root, path)


#: A TOML table header, and a key at the start of a line (bare, quoted or dotted).
_TOML_PART = r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'"""
_TOML_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(rf"^\s*((?:{_TOML_PART})(?:\s*\.\s*(?:{_TOML_PART}))*)\s*=")


def _toml_module_marks(text: str) -> list[dict[tuple[str, ...], tuple[int, int]]]:
    """Per ``[[tool.ksbind.modules]]`` table, in order: each key path's (line, column), the table's
    own at ``()``, its subtables' (``[tool.ksbind.modules.ksc]``) and their keys too. tomllib gives
    no positions; this reads them off the text (a value on a later line of a multi-line array
    is its key's)."""
    def parts(dotted: str) -> tuple[str, ...]:
        return tuple(p.strip("\"'") for p in re.findall(_TOML_PART, dotted))

    out: list[dict[tuple[str, ...], tuple[int, int]]] = []
    current: dict[tuple[str, ...], tuple[int, int]] | None = None
    prefix: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        header = _TOML_HEADER.match(line)
        if header:
            name = parts(header.group(2))
            column = line.index("[") + 1
            if header.group(1) == "[[" and name == ("tool", "ksbind", "modules"):
                current, prefix = {(): (number, column)}, ()
                out.append(current)
            elif header.group(1) == "[" and name[:3] == ("tool", "ksbind", "modules") and current is not None:
                prefix = name[3:]
                current[prefix] = (number, column)
            else:
                current = None
            continue
        key = _TOML_KEY.match(line) if current is not None else None
        if key and current is not None:
            current.setdefault(prefix + parts(key.group(1)), (number, key.start(1) + 1))
    return out


def _load_root(root: yaml.Node | None, config_path: Path) -> list[ModuleSpec]:
    """The modules a config's document (YAML's, or pyproject.toml's tables as nodes) describes."""
    if root is None:
        raise ConfigError("config is empty: expected a mapping with at least 'name:' and 'ks:' or "
                          "'declarations:'", Location(str(config_path), 1, 1))
    reader = _NodeReader(str(config_path))
    top = reader.mapping(root, "the config")
    if "modules" in top:
        key_node, value = top["modules"]
        others = [k for k in top if k != "modules"]
        if others:
            raise ConfigError(f"a config with 'modules:' has no other top-level keys; found {others[0]!r}",
                              reader.loc(top[others[0]][0]))
        items = reader.sequence(value, "'modules'")
        if not items:
            raise ConfigError("'modules' is empty: expected a list of modules", reader.loc(value))
        specs = [_module(reader, item, config_path) for item in items]
    else:
        specs = [_module(reader, root, config_path)]
    seen: dict[str, ModuleSpec] = {}
    for s in specs:
        if s.name in seen:
            raise ConfigError(f"duplicate module name {s.name!r}", s.location)
        seen[s.name] = s
    return specs


def _compose(text: str, filename: str) -> yaml.Node | None:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        loc = Location(filename, mark.line + 1, mark.column + 1) if mark else Location(filename)
        raise ConfigError(f"invalid YAML: {e.problem or e.context}", loc) from None
    except yaml.reader.ReaderError as e:  # a character YAML forbids (NUL, control characters)
        before = text[: e.position]
        loc = Location(filename, before.count("\n") + 1, e.position - (before.rfind("\n") + 1) + 1)
        ch = chr(e.character) if isinstance(e.character, int) else e.character
        raise ConfigError(f"invalid YAML: character {ch!r} is not allowed in YAML text", loc) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}".replace("\n", " "), Location(filename)) from None
    except RecursionError:
        raise ConfigError("invalid YAML: lists or mappings nested too deeply", Location(filename)) from None
    if root is not None:
        _check_tags(root, filename)
    return root


def _check_tags(root: yaml.Node, filename: str) -> None:
    """Reject every non-plain tag anywhere in the document, used or not (safe_load level or stricter)."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:  # anchors can make the node graph cyclic
            continue
        seen.add(id(node))
        if node.tag not in _PLAIN_TAGS:
            what = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise ConfigError(f"YAML tag {what!r} is not allowed: only plain values, lists and mappings "
                              "(quote the value if it is meant as text)",
                              Location(filename, node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                todo.extend((k, v))


class _NodeReader:
    """Typed access to composed YAML nodes, with errors at the node's position."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self._scalar_loader = yaml.SafeLoader("")

    def loc(self, node: yaml.Node) -> Location:
        return Location(self.filename, node.start_mark.line + 1, node.start_mark.column + 1)

    def _check_tag(self, node: yaml.Node) -> None:
        if node.tag not in _PLAIN_TAGS:
            raise ConfigError(f"YAML tag {node.tag!r} is not allowed: only plain values, lists and mappings",
                              self.loc(node))

    def mapping(self, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        self._check_tag(node)
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{what} must be a mapping (key: value), found {self.describe(node)}", self.loc(node))
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in node.value:
            key = self.scalar(k)
            if not isinstance(key, str):
                raise ConfigError(f"keys in {what} must be strings, found {key!r}", self.loc(k))
            if key in out:
                first = self.loc(out[key][0])
                raise ConfigError(f"duplicate key {key!r} in {what} (first at line {first.line})", self.loc(k))
            out[key] = (k, v)
        return out

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        self._check_tag(node)
        if not isinstance(node, yaml.SequenceNode):
            raise ConfigError(f"{what} must be a list, found {self.describe(node)}", self.loc(node))
        return list(node.value)

    def scalar(self, node: yaml.Node) -> Any:
        self._check_tag(node)
        if not isinstance(node, yaml.ScalarNode):
            raise ConfigError(f"expected a single value, found {self.describe(node)}", self.loc(node))
        return self._scalar_loader.construct_object(node)

    @overload
    def typed(self, node: yaml.Node, kind: type[_T], what: str, expected: str) -> _T: ...

    @overload
    def typed(self, node: yaml.Node, kind: tuple[type, ...], what: str, expected: str) -> Any: ...

    def typed(self, node: yaml.Node, kind: type | tuple[type, ...], what: str, expected: str) -> Any:
        value = self.scalar(node) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(node, yaml.ScalarNode) or not isinstance(value, kind) or (
                kind is int and isinstance(value, bool)):
            raise ConfigError(f"{what} must be {expected}, found {self.describe(node)}", self.loc(node))
        return value

    def string_list(self, node: yaml.Node, what: str) -> list[tuple[str, yaml.Node]]:
        """A list of strings; a single string is accepted as a list of one."""
        items = [node] if isinstance(node, yaml.ScalarNode) else self.sequence(node, what)
        return [(self.typed(i, str, f"each entry of {what}", "a string"), i) for i in items]

    def describe(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        value = self._scalar_loader.construct_object(node) if node.tag in _PLAIN_TAGS else node.value
        kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
                type(None): "nothing (null)"}.get(type(value), "a value")
        return f"{kind} {value!r}" if value is not None else kind


def _targets_with(flag: str) -> str:
    """The targets whose record sets ``flag`` (for messages): "torch", "ks"."""
    return " or ".join(name for name, t in TARGETS.items() if getattr(t, flag))


def _read_settings(r: _NodeReader, fields: dict[str, tuple[yaml.Node, yaml.Node]], settings: Sequence[Setting],
                   owner: str, where: Location, base: Path) -> dict[str, Any]:
    """Field name -> value of each key ``fields`` gives, read by its Setting, after the
    required keys' check (``owner`` names the mapping: "a module needs 'name:'")."""
    for s in settings:
        if s.spec.required is not None and s.key not in fields:
            raise ConfigError(f"{owner} needs '{s.key}:' ({s.spec.required})", where)
    return {s.field: _read(r, s, fields[s.key][1], base) for s in settings if s.key in fields}


def _read(r: _NodeReader, s: Setting, node: yaml.Node, base: Path) -> Any:
    """One key's value, by its form (ksbind/settings.py)."""
    k = s.spec
    expected = k.expected
    form = k.form
    if form == "text":
        return r.typed(node, str, s.what, expected or "a string")
    if form == "identifier":
        return _identifier(r, node, s.what, expected or "an identifier", k.label)
    if form == "module_name":
        return _module_name(r, node, s.what)
    if form == "choice":
        return _choice(r, node, s.what, s.choices)
    if form == "target":
        name = r.typed(node, str, s.what, "a target's name")
        get_target(name, r.loc(node))  # ksbind's or a registered one (loaded now): else an error here
        return name
    if form == "target_options":
        return tuple((key, r.typed(v, (str, bool, int), f"target option {key!r}", "a string, true/false or a number"))
                     for key, (_, v) in r.mapping(node, s.what).items())
    if form == "flag":
        return r.typed(node, bool, s.what, "true or false")
    if form == "count":
        value = _positive_int(r, node, s.what, k.maximum)
        return float(value) if s.type is float else value
    if form == "path":
        return _path(r, node, s.what, base, k.must_exist, expected or "a path")
    if form == "paths":
        return _paths(r, node, s.what, base, k.must_exist)
    if form == "ks_text":
        return _inline(r, node, s.what, expected or "ks text")
    if form == "tensor_types":
        return _tensor_types(r, node, s.what)
    if form == "runtime":
        return _runtime(r, node, base)
    if form == "record":
        assert k.record is not None
        return _record(r, node, s.key, k.record, base)
    if form == "records":
        if k.record is PythonFunctionSpec:
            return _python_functions(r, node, s.what, base)
        return _bindings(r, node, s.what)
    if form == "python_function":
        return _python_function(r, node, s.what, base)
    if form == "ks_types":
        return _ks_types(r, node, s.what)
    if form == "optional_name":
        return _optional_name(r, node, s.what, expected or "a name, or false")
    if form == "names":
        items = [node] if isinstance(node, yaml.ScalarNode) else r.sequence(node, s.what)
        return tuple(_identifier(r, item, f"each entry of {s.what}", expected or "an identifier") for item in items)
    raise AssertionError(f"no reader for form {form!r}")  # a Form added to settings.py without one here


def _module(r: _NodeReader, node: yaml.Node, config_path: Path) -> ModuleSpec:
    where = r.loc(node)
    fields = r.mapping(node, "a module")
    for key, (k, _) in fields.items():
        if key not in MODULE_KEYS:
            raise ConfigError(f"unknown key {key!r}{closest(key, MODULE_KEYS)}; expected one of "
                              f"{', '.join(MODULE_KEYS)}", r.loc(k))
    base = config_path.parent
    values = _read_settings(r, fields, settings_of(ModuleSpec), "a module", where, base)
    # The defaults that depend on other keys (docs/config.md's table says each).
    if "runtime" not in values and values.get("ksc") is not None:
        values["runtime"] = RuntimeSpec(bundled=False, from_ksc=True)
    values.setdefault("output", _normal(base / "build" / values["name"]))
    spec = ModuleSpec(config_path=config_path, location=where, **values)
    # The rules between keys (schema.py states them too).
    if not spec.ks_files and spec.declarations is None and not spec.python:
        raise ConfigError(f"module {spec.name!r} declares no functions: add 'ks:' (.ks/.kso files), "
                          "'declarations:' (inline ks text) or 'python:' (Python functions)", where)
    if spec.python and spec.ksc is None:
        raise ConfigError("'python' needs 'ksc:': ksc compiles the translated functions (`ksc: {}` takes $KSC, "
                          "then ksc on PATH)", r.loc(fields["python"][0]))
    if spec.python and spec.bindings is None and (spec.ks_files or spec.declarations is not None):
        raise ConfigError("a module with 'python:' binds its Python functions; list the ks functions of 'ks:' or "
                          "'declarations:' to bind under 'bindings:' ('bindings: []' for none)",
                          r.loc(fields["python"][0]))
    record = get_target(spec.target)
    if "torch_library" in fields and not record.torch_library:
        raise ConfigError(f"'torch_library' needs target: {_targets_with('torch_library')} (this module's target "
                          f"is {spec.target!r})", r.loc(fields["torch_library"][0]))
    if "tensor_types" in fields and not record.tensor_classes:
        raise ConfigError(f"'tensor_types' declares the {_targets_with('tensor_classes')} target's tensor classes; "
                          f"this module's target is {spec.target!r}, whose tensors are {record.tensors} "
                          "(remove 'tensor_types')", r.loc(fields["tensor_types"][0]))
    if "target_options" in fields:
        _check_target_options(r, fields["target_options"][1], spec.target, record)
    return spec


def _check_target_options(r: _NodeReader, node: yaml.Node, name: str, record: Target) -> None:
    """Each of ``target_options:``'s keys is one the module's target declares, with a value of its kind."""
    for key, (k, v) in r.mapping(node, "'target_options'").items():
        declared = record.options.get(key)
        if declared is None:
            known = ", ".join(record.options) or "none: remove 'target_options'"
            raise ConfigError(f"target {name!r} has no option {key!r}{closest(key, record.options)}; its options: "
                              f"{known}", r.loc(k))
        if not declared.holds(r.scalar(v)):
            raise ConfigError(f"target option {key!r} must be {_OPTION_WORDS[declared.kind]} ({declared.doc}), "
                              f"found {r.describe(v)}", r.loc(v))


_OPTION_WORDS = {"text": "a string", "flag": "true or false", "count": "a whole number"}


def _normal(p: Path) -> Path:
    return Path(os.path.normpath(p))


def _choice(r: _NodeReader, node: yaml.Node, what: str, choices: Sequence[_C]) -> _C:
    value = r.typed(node, str, what, "one of " + ", ".join(choices))
    for choice in choices:
        if value == choice:
            return choice
    raise ConfigError(f"unknown {what.strip(chr(39))} {value!r}{closest(value, choices)}; expected one of "
                      f"{', '.join(choices)}", r.loc(node))


def _module_name(r: _NodeReader, node: yaml.Node, what: str) -> str:
    """A dotted Python module name (it is imported from the config's folder, never a path)."""
    value = r.typed(node, str, what, "a Python module name")
    if not re.fullmatch(MODULE_NAME_PATTERN, value):
        raise ConfigError(f"{what} must be a Python module name such as my_filters, found {value!r}",
                          r.loc(node))
    return value


def _identifier(r: _NodeReader, node: yaml.Node, what: str, expected: str, label: str | None = None) -> str:
    value = r.typed(node, str, what, expected)
    problem = identifier_problem(value)
    if problem:
        raise ConfigError(f"{label or what} {problem}", r.loc(node))
    return value


def _positive_int(r: _NodeReader, node: yaml.Node, what: str, maximum: int = 2**40) -> int:
    value = r.typed(node, int, what, "a whole number")
    if value <= 0:
        raise ConfigError(f"{what} must be positive, found {value}", r.loc(node))
    if value > maximum:  # the value becomes a C++ literal; keep it one the compiler accepts
        raise ConfigError(f"{what} must be at most {maximum}, found {value}", r.loc(node))
    return value


def _paths(r: _NodeReader, node: yaml.Node, what: str, base: Path, must_exist: str | None = None
           ) -> tuple[Path, ...]:
    out = []
    for text, n in r.string_list(node, what):
        p = _normal(base / text)
        if must_exist == "file" and not p.is_file():
            problem = ("is a directory, not a file" if p.is_dir() else
                       "is not a regular file (a FIFO, socket or device?)" if p.exists() else "no such file")
            raise ConfigError(f"{what} entry {text!r}: {problem} (looked for {p})", r.loc(n))
        if must_exist == "dir" and not p.is_dir():
            raise ConfigError(f"{what} entry {text!r}: no such directory (looked for {p})", r.loc(n))
        out.append(p)
    return tuple(out)


def _inline(r: _NodeReader, node: yaml.Node, what: str, expected: str) -> InlineDeclarations:
    text = r.typed(node, str, what, expected)
    assert isinstance(node, yaml.ScalarNode)  # typed() accepted it
    # Pad so the ks reader's line numbers are the config file's.
    mark = node.start_mark
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        # YAML strips the block's indentation; put it back so columns match too.
        indent = _block_indent(mark.buffer or "", mark.line + 1) if mark.buffer else 0
        padded = "\n" * (mark.line + 1) + "\n".join(" " * indent + line for line in text.split("\n"))
    else:
        padded = "\n" * mark.line + " " * (mark.column + (1 if node.style in ("'", '"') else 0)) + text
    return InlineDeclarations(padded, r.loc(node))


def _block_indent(source: str, first_line: int) -> int:
    """The indentation of a block scalar's first non-blank line (0-based line numbers)."""
    for line in source.split("\n")[first_line:]:
        if line.strip():
            return len(line) - len(line.lstrip(" "))
    return 0


def _known_keys(r: _NodeReader, node: yaml.Node, what: str, allowed: Sequence[str]
                ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    """A mapping whose keys are all among ``allowed`` (else an error at the first other key)."""
    fields = r.mapping(node, what)
    for key, (k, _) in fields.items():
        if key not in allowed:
            raise ConfigError(f"unknown key {key!r} in {what}{closest(key, allowed)}; expected one of "
                              f"{', '.join(allowed)}", r.loc(k))
    return fields


def _path(r: _NodeReader, node: yaml.Node, what: str, base: Path, must_exist: str, expected: str = "a path"
          ) -> Path:
    """One path (a string, not a list)."""
    r.typed(node, str, what, expected)
    return _paths(r, node, what, base, must_exist)[0]


def _runtime(r: _NodeReader, node: yaml.Node, base: Path) -> RuntimeSpec:
    if isinstance(node, yaml.ScalarNode):
        value = r.scalar(node)
        if value == "bundled":
            return RuntimeSpec()
        raise ConfigError(f"'runtime' must be 'bundled' or a mapping with include_dirs/sources, found {value!r}",
                          r.loc(node))
    fields = _known_keys(r, node, "'runtime'", RUNTIME_KEYS)
    if "include_dirs" not in fields:  # before the model's own check, for this message
        raise ConfigError("'runtime' needs include_dirs: the folder holding knossos.h", r.loc(node))
    values = _read_settings(r, fields, settings_of(RuntimeSpec), "'runtime'", r.loc(node), base)
    if not values["include_dirs"]:
        raise ConfigError("'runtime' needs include_dirs: the folder holding knossos.h", r.loc(node))
    return RuntimeSpec(bundled=False, **values)


def _record(r: _NodeReader, node: yaml.Node, key: str, record: type, base: Path) -> Any:
    """A mapping of a record's own keys, such as ``ksc: {path, runtime, timeout}`` (``ksc: {}``
    takes the defaults). ksc's ``path`` is not checked here: a cached module loads where
    this ksc is absent; find_ksc says so when ksc must run."""
    what = f"'{key}'"
    fields = _known_keys(r, node, what, keys_of(record))
    values = _read_settings(r, fields, settings_of(record, f"{key}: "), what, r.loc(node), base)
    return record(location=r.loc(node), **values)


def _bindings(r: _NodeReader, node: yaml.Node, what: str) -> tuple[BindingSpec, ...]:
    out = []
    for item in r.sequence(node, what):
        if isinstance(item, yaml.ScalarNode) and item.tag == "tag:yaml.org,2002:str":
            # a bare name, as load_ks takes one: {name: NAME}, read and located as that mapping
            key = yaml.ScalarNode("tag:yaml.org,2002:str", "name", item.start_mark, item.end_mark)
            item = yaml.MappingNode("tag:yaml.org,2002:map", [(key, item)], item.start_mark, item.end_mark)
        fields = _known_keys(r, item, "a binding", BINDING_KEYS)
        values = _read_settings(r, fields, settings_of(BindingSpec), "a binding", r.loc(item), Path())
        if values.get("vjp_from", "auto") != "auto" and "vjp" not in values:
            raise ConfigError("'vjp_from' needs 'vjp:' (the name to bind the vjp under)", r.loc(fields["vjp_from"][0]))
        out.append(BindingSpec(location=r.loc(fields["name"][1]), **values))
    return tuple(out)


def _python_functions(r: _NodeReader, node: yaml.Node, what: str, base: Path) -> tuple[PythonFunctionSpec, ...]:
    out = []
    for item in r.sequence(node, what):
        fields = _known_keys(r, item, "a 'python' entry", PYTHON_KEYS)
        values = _read_settings(r, fields, settings_of(PythonFunctionSpec), "a 'python' entry", r.loc(item), base)
        mode = values.get("mode", "plain")
        args: tuple[KsType, ...] | None = values.get("args")
        if mode != "elementwise" and args is None:
            raise ConfigError(f"a 'python' entry of mode {mode} needs 'args:' (the ks type of each parameter, e.g. "
                              "[(Tensor 2 Float), Float])", r.loc(item))
        if mode == "elementwise" and args is not None and (
                not 1 <= len(args) <= 2 or any(str(t) != "Float" for t in args)):
            raise ConfigError("mode elementwise compiles a function of one or two floats: its 'args' are "
                              f"[Float] or [Float, Float]; found [{', '.join(str(t) for t in args)}]",
                              r.loc(fields["args"][1]))
        out.append(PythonFunctionSpec(location=r.loc(fields["function"][1]), **values))
    return tuple(out)


def _python_function(r: _NodeReader, node: yaml.Node, what: str, base: Path) -> PythonRef:
    """``path/to/file.py:NAME`` (the file must exist) or ``package.module:NAME``."""
    text = r.typed(node, str, what, "file.py:NAME or package.module:NAME")
    where, colon, attribute = text.rpartition(":")
    if not colon or not where or not attribute.isidentifier() or keyword.iskeyword(attribute):
        raise ConfigError(f"{what} must be path/to/file.py:NAME or package.module:NAME (NAME a Python name), "
                          f"found {text!r}", r.loc(node))
    if where.endswith(".py") or "/" in where or os.sep in where:
        path = _normal(base / where)
        if not path.is_file():
            problem = "is a directory, not a file" if path.is_dir() else "no such file"
            raise ConfigError(f"{what} {text!r}: {where}: {problem} (looked for {path})", r.loc(node))
        return PythonRef(text, attribute, file=path)
    if not re.fullmatch(MODULE_NAME_PATTERN, where):
        raise ConfigError(f"{what} must be path/to/file.py:NAME or package.module:NAME; {where!r} is neither a "
                          ".py file nor a Python module name", r.loc(node))
    return PythonRef(text, attribute, module=where)


#: The ks types a call's arguments have (ksbind/frontend/signature.py): what a python: entry's args may be.
_ARG_TYPES = "Float, Integer, Bool, or (Tensor N T) of one of them"


def _ks_types(r: _NodeReader, node: yaml.Node, what: str) -> tuple[KsType, ...]:
    out = []
    for item in r.sequence(node, what):
        text = r.typed(item, str, f"each entry of {what}", "a ks type such as Float or (Tensor 2 Float)")
        try:
            t = parse_type(text, r.filename)
        except KsbindError as e:
            raise ConfigError(f"{what}: {text!r} is not a ks type: {e.message}", r.loc(item)) from None
        element = t.element if isinstance(t, TensorType) else t
        if not isinstance(element, ScalarType) or str(element) not in ("Float", "Integer", "Bool"):
            raise ConfigError(f"{what}: {t} is not a type a call passes ({_ARG_TYPES})", r.loc(item))
        out.append(t)
    return tuple(out)


def _optional_name(r: _NodeReader, node: yaml.Node, what: str, expected: str) -> str | bool:
    """A name (checked where the binding is made), or ``false`` for none."""
    value = r.scalar(node) if isinstance(node, yaml.ScalarNode) else None
    if value is False or isinstance(value, str) and value:
        return value
    raise ConfigError(f"{what} must be {expected}, found {r.describe(node)}", r.loc(node))


def _tensor_types(r: _NodeReader, node: yaml.Node, what: str) -> tuple[tuple[int, TensorElement], ...]:
    out = []
    for item in r.sequence(node, what):
        pair = r.sequence(item, "each tensor type") if isinstance(item, yaml.SequenceNode) else None
        if pair is None or len(pair) != 2:
            raise ConfigError("each tensor type is [RANK, ELEMENT], e.g. [1, Float]", r.loc(item))
        rank = _positive_int(r, pair[0], "a tensor rank", MAX_RANK)
        element = _choice(r, pair[1], "tensor element", TENSOR_ELEMENTS)
        out.append((rank, element))
    return tuple(out)


__all__ = ["load_config_text", "ModuleSpec", "RuntimeSpec", "InlineDeclarations", "load_config", "MODULE_KEYS",
           "BINDING_KEYS", "RUNTIME_KEYS", "KSC_KEYS", "PYTHON_KEYS"]
