"""Python source for the records a generated wrapper hands its runtime: each value written as a
call of the runtime's own record type (``_runtime.LeafRecord(kind='tensor', ...)``), never as a
bare dict literal.

The record types are the TypedDicts a target's runtime declares (its ``contract`` module, which
imports only typing); the writer follows their annotations, so it checks what codegen hands it
against them as it writes (a missing or stray key, a dict where no record is declared is a bug in
codegen, raised here, not a wrapper that fails later), and a type checker checks the written
calls against the same declarations. A TypedDict's call builds a plain dict, so the runtime reads
what it always read.
"""
from __future__ import annotations

import functools
import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

#: The widest line the writer fills before it breaks a call or list over lines.
WIDTH = 110
_STEP = "    "


@functools.cache
def _fields(record: type) -> dict[str, Any]:
    return get_type_hints(record)


@dataclass(frozen=True)
class _Written:
    """A value's source: on one line (``inline``), and its parts for writing it over lines
    (``head``, each part's label and source, ``tail``; none for a plain value's repr)."""

    inline: str
    head: str = ""
    parts: tuple[tuple[str, _Written], ...] = ()
    tail: str = ""


def record_source(value: object, hint: object, prefix: str) -> str:
    """``value`` as Python source for the type ``hint`` (a record type, a list or dict of them,
    an optional one, or a plain value), each record written ``PREFIX + its class name + (...)``."""
    return _lines(_written(value, hint, prefix), column=0, indent="")


def _written(value: object, hint: object, prefix: str) -> _Written:
    """``value``'s source, each part checked against its declared type and written once."""
    hint = _arm(value, hint)
    origin, args = get_origin(hint), get_args(hint)
    if is_typeddict(hint):
        assert isinstance(hint, type)
        head, tail = f"{prefix}{hint.__name__}(", ")"
        parts = tuple((f"{k}=", _written(v, h, prefix)) for k, v, h in _record_items(value, hint))
    elif isinstance(value, list) and origin is list:
        head, tail = "[", "]"
        parts = tuple(("", _written(v, args[0], prefix)) for v in value)
    elif isinstance(value, dict) and origin is dict:
        head, tail = "{", "}"
        parts = tuple((f"{k!r}: ", _written(v, args[1], prefix)) for k, v in value.items())
    elif isinstance(value, dict):
        raise TypeError(f"a dict where {hint!r} is declared, not a record: {value!r}")
    elif isinstance(value, list) and hint is not Any:
        raise TypeError(f"a list where {hint!r} is declared: {value!r}")
    else:  # a plain value; under ``Any``, a nested spec of strings, numbers and lists
        return _Written(repr(value))
    inline = head + ", ".join(label + part.inline for label, part in parts) + tail
    return _Written(inline, head, parts, tail)


def _lines(w: _Written, column: int, indent: str) -> str:
    """``w`` on one line when it fits from ``column``, else one part per line."""
    if column + len(w.inline) <= WIDTH or not w.parts:
        return w.inline
    inner = indent + _STEP
    lines = [f"{inner}{label}{_lines(part, len(inner) + len(label), inner)}," for label, part in w.parts]
    return w.head + "\n" + "\n".join(lines) + f"\n{indent}{w.tail}"


def _record_items(value: object, record: type) -> list[tuple[str, Any, object]]:
    if not isinstance(value, dict):
        raise TypeError(f"{record.__name__}: expected its fields, got {value!r}")
    fields = _fields(record)
    stray = [k for k in value if k not in fields]
    missing = [k for k in getattr(record, "__required_keys__", ()) if k not in value]
    if stray or missing:
        raise TypeError(f"{record.__name__}: keys not declared {stray}, keys missing {missing}: {value!r}")
    return [(k, v, fields[k]) for k, v in value.items()]


def _arm(value: object, hint: object) -> object:
    """The one arm of an optional or union type that ``value`` is written as."""
    if get_origin(hint) not in (Union, types.UnionType):
        return hint
    arms = [a for a in get_args(hint) if a is not type(None)]
    if value is None:
        return type(None)
    if len(arms) == 1:
        return arms[0]
    if isinstance(value, dict):
        records = [a for a in arms if is_typeddict(a) and set(value) <= set(_fields(a))]
        if records:
            return records[0]
    return next((a for a in arms if get_origin(a) is not Literal and not is_typeddict(a)), Any)


__all__ = ["WIDTH", "record_source"]
