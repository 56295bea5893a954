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
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

#: The widest line the writer fills before it breaks a call or list over lines.
WIDTH = 110
_STEP = "    "


@functools.cache
def _fields(record: type) -> dict[str, Any]:
    return get_type_hints(record)


def record_source(value: object, hint: object, prefix: str) -> str:
    """``value`` as Python source for the type ``hint`` (a record type, a list or dict of them,
    an optional one, or a plain value), each record written ``PREFIX + its class name + (...)``."""
    return _write(value, hint, prefix, column=0, indent="")


def _write(value: object, hint: object, prefix: str, column: int, indent: str) -> str:
    inline = _inline(value, hint, prefix)
    if column + len(inline) <= WIDTH:
        return inline
    shape, record, items = _parts(value, hint)
    inner = indent + _STEP
    if shape == "record" and record is not None:
        lines = [f"{inner}{k}={_write(v, h, prefix, len(inner) + len(k) + 1, inner)}," for k, v, h in items]
        return f"{prefix}{record.__name__}(\n" + "\n".join(lines) + f"\n{indent})"
    if shape == "list" and items:
        lines = [f"{inner}{_write(v, h, prefix, len(inner), inner)}," for _, v, h in items]
        return "[\n" + "\n".join(lines) + f"\n{indent}]"
    if shape == "dict" and items:
        lines = [f"{inner}{k}: {_write(v, h, prefix, len(inner) + len(k) + 2, inner)}," for k, v, h in items]
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"
    return inline


def _inline(value: object, hint: object, prefix: str) -> str:
    shape, record, items = _parts(value, hint)
    if shape == "record" and record is not None:
        return f"{prefix}{record.__name__}(" + ", ".join(f"{k}={_inline(v, h, prefix)}" for k, v, h in items) + ")"
    if shape == "list":
        return "[" + ", ".join(_inline(v, h, prefix) for _, v, h in items) + "]"
    if shape == "dict":
        return "{" + ", ".join(f"{k}: {_inline(v, h, prefix)}" for k, v, h in items) + "}"
    return repr(value)


Shape = Literal["record", "list", "dict", "plain"]


def _parts(value: object, hint: object) -> tuple[Shape, type | None, list[tuple[str, Any, object]]]:
    """How ``value`` is written (a record's call, a typed list or dict, or a plain value's repr),
    the record type, and the parts: (a record's key, a dict's key source, or ""; the part; its
    type). A value under ``Any`` (a nested spec of strings, numbers and lists) is plain."""
    hint = _arm(value, hint)
    if is_typeddict(hint):
        assert isinstance(hint, type)
        return "record", hint, _record_items(value, hint)
    origin, args = get_origin(hint), get_args(hint)
    if isinstance(value, list) and origin is list:
        return "list", None, [("", v, args[0]) for v in value]
    if isinstance(value, dict) and origin is dict:
        return "dict", None, [(repr(k), v, args[1]) for k, v in value.items()]
    if isinstance(value, dict):
        raise TypeError(f"a dict where {hint!r} is declared, not a record: {value!r}")
    if isinstance(value, list) and hint is not Any:
        raise TypeError(f"a list where {hint!r} is declared: {value!r}")
    return "plain", None, []


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
