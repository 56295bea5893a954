"""The settings model: every config key is declared once, on the record it fills.

A key is a field of ``ModuleSpec``, ``BindingSpec``, ``KscSpec`` or ``RuntimeSpec``
(ksbind/spec.py) annotated ``Annotated[TYPE, Key(FORM, DOC)]``: its type is the
field's (a ``Literal`` where it is a choice), its default the field's, its doc and
how a config spells it (``Form``) the ``Key``'s. ``settings_of`` reads them back;
config.py reads configs by them, and schema.py makes the JSON Schema and the key
tables of docs/config.md from them. Plain records only: no YAML, no I/O.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ksbind.errors import closest

#: How a config spells a value. text: a string; identifier: a string that must be a C++
#: and Python identifier; module_name: a dotted Python module name; choice: one of the
#: field's ``Literal``; flag: true or false; count: a whole number from 1 to ``maximum``;
#: path: one path; paths: a path or a list of paths; ks_text: inline ks declarations;
#: tensor_types: a list of [RANK, ELEMENT]; runtime: ``bundled`` or the ``record``'s
#: mapping; record: a mapping of the ``record``'s keys; records: a list of them;
#: python_function: ``file.py:NAME`` or ``package.module:NAME``; ks_types: a list of ks
#: types; optional_name: a name, or false for none; names: an identifier or a list of them;
#: target: a target's name (ksbind's or a registered one); target_options: a mapping of the
#: module's target's own keys.
Form = Literal["text", "identifier", "module_name", "choice", "flag", "count", "path", "paths", "ks_text",
               "tensor_types", "runtime", "record", "records", "python_function", "ks_types", "optional_name",
               "names", "target", "target_options"]

#: What a path must name when the config is read ("": anything, not checked).
MustExist = Literal["file", "dir", ""]


@dataclass(frozen=True)
class Key:
    """One config key's facts beyond its field's type and default.

    form: how the config spells it. doc: one Markdown line (docs/config.md's table, the
    schema's description). type_doc: the table's type column where the form's own
    wording is not enough. default_doc: the table's default where the field's default is
    not what a config gets (it is computed). required: why the key is needed (the key is
    then required). key: the YAML name when it is not the field's. what: how messages
    name the value (default ``'KEY'``); label: how an identifier's problem names it
    (default: as ``what``). expected: what messages say it must be.
    must_exist, maximum: the path and count forms' limits. record: the record a
    record, records or runtime form reads. A required paths key needs at least one path.
    """

    form: Form
    doc: str
    type_doc: str | None = None
    default_doc: str | None = None
    required: str | None = None
    key: str | None = None
    what: str | None = None
    label: str | None = None
    expected: str | None = None
    must_exist: MustExist = ""
    maximum: int = 0
    record: type | None = None
    #: The value becomes a binding's name, checked when bindings are selected (ksbind/binding.py,
    #: a BindingError); the schema states the same rules.
    binding_name: bool = False


@dataclass(frozen=True)
class Setting:
    """A key as ``settings_of`` gives it: the Key, with its field, type and default."""

    key: str
    field: str
    type: Any
    default: Any  # dataclasses.MISSING when the field has none
    spec: Key
    what: str

    @property
    def choices(self) -> tuple[str, ...]:
        """A choice's values, in the Literal's order."""
        return literal_values(self.type)

    @property
    def has_default(self) -> bool:
        return self.default is not dataclasses.MISSING


_C = typing.TypeVar("_C", bound=str)


def pick(value: object, choices: Sequence[_C]) -> _C | None:
    """``value`` as one of ``choices`` (typed as the choice), or None when it is none of them."""
    for choice in choices:
        if value == choice:
            return choice
    return None


def literal_values(tp: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` (or of ``Literal[...] | None``)."""
    if typing.get_origin(tp) is Literal:
        return tuple(typing.get_args(tp))
    for arg in typing.get_args(tp):
        if typing.get_origin(arg) is Literal:
            return tuple(typing.get_args(arg))
    raise TypeError(f"{tp!r} is not a Literal")


@functools.cache
def settings_of(record: type, prefix: str = "") -> tuple[Setting, ...]:
    """The config keys of a spec record, in field order. ``prefix`` goes before each
    key in messages (``'ksc: path'``)."""
    hints = typing.get_type_hints(record, include_extras=True)
    out = []
    for f in dataclasses.fields(record):
        hint = hints[f.name]
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        tp, *extras = typing.get_args(hint)
        keys = [e for e in extras if isinstance(e, Key)]
        if not keys:
            continue
        k = keys[0]
        name = k.key or f.name
        out.append(Setting(name, f.name, tp, f.default, k, k.what or f"'{prefix}{name}'"))
    return tuple(out)


def keys_of(record: type) -> tuple[str, ...]:
    """The YAML keys of a spec record, in field order."""
    return tuple(s.key for s in settings_of(record))


# ------------------------------------------------------------ options records of functions

_R = typing.TypeVar("_R")


def check_keywords(given: typing.Iterable[str], names: Sequence[str], caller: str) -> None:
    """A keyword argument that is none of ``names`` is a TypeError, as Python's own (with the
    closest name)."""
    for key in given:
        if key not in names:
            raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}{closest(key, names)}")


def with_options(record: type[_R], base: _R | None, overrides: typing.Mapping[str, Any], caller: str) -> _R:
    """An options record (a frozen dataclass) from a function's keyword arguments: ``base`` (or the
    record's defaults) with ``overrides``; a keyword that is no field is a TypeError, as Python's own."""
    check_keywords(overrides, [f.name for f in dataclasses.fields(record)], caller)  # type: ignore[arg-type]
    if base is None:
        return record(**overrides)
    return dataclasses.replace(base, **overrides)  # type: ignore[type-var]


def keyword_signature(fn: typing.Callable[..., Any], fields: typing.Iterable[dataclasses.Field[Any]],
                      hints: typing.Mapping[str, Any]) -> inspect.Signature:
    """``fn``'s signature with its ``**kwargs`` spelt out as an options record's ``fields`` (each a
    keyword-only parameter with the field's default and its type in ``hints``), for help() and inspect."""
    sig = inspect.signature(fn)
    spelt = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
             for f in fields]
    params = [p for p in sig.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
    return sig.replace(parameters=[*params, *spelt])


def with_generated_lines(text: str, source: str, annotations: typing.Iterable[tuple[str, str]]) -> str:
    """``text`` (a module's source) with the lines between its markers ``    # BEGIN generated from
    SOURCE`` and ``    # END generated from SOURCE`` written as ``    NAME: TYPE`` per annotation
    (scripts/generate_settings.py writes a keyword TypedDict from its record so; a test fails while
    they differ)."""
    begin, end = f"    # BEGIN generated from {source}\n", f"    # END generated from {source}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "".join(f"    {name}: {annotation}\n" for name, annotation in annotations) + end + tail


__all__ = ["Form", "MustExist", "Key", "Setting", "settings_of", "keys_of", "literal_values", "pick", "check_keywords",
           "with_options", "keyword_signature", "with_generated_lines"]
