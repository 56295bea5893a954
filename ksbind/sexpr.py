"""A small s-expression reader for ks text that keeps line:column for every node.

ks uses ``( ... )`` for lists and ``[ ... ]`` for structured names; both become
``SList`` with their bracket recorded. Comments are ``;`` to end of line and
nestable ``#| ... |#`` blocks. Strings are double-quoted with backslash escapes.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Union

from .errors import KsSyntaxError, Location


@dataclass(frozen=True, slots=True)
class Atom:
    text: str
    loc: Location
    is_string: bool = False

    def __str__(self) -> str:
        return _quote(self.text) if self.is_string else self.text


@dataclass(frozen=True, slots=True)
class SList:
    items: tuple["Node", ...]
    bracket: str  # "(" or "["
    loc: Location

    def __str__(self) -> str:
        close = ")" if self.bracket == "(" else "]"
        return self.bracket + " ".join(str(i) for i in self.items) + close


Node = Union[Atom, SList]

_CLOSERS = {"(": ")", "[": "]"}
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>;[^\n]*)
  | (?P<block_open>\#\|)
  | (?P<open>[(\[])
  | (?P<close>[)\]])
  | (?P<string>")
  | (?P<atom>[^\s()\[\]";]+)
    """,
    re.VERBOSE,
)
_BLOCK_PART = re.compile(r"\#\||\|\#")
_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\.)*"')
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
#: Deepest bracket nesting accepted. Real ks nests a few levels; the limit keeps
#: every recursive walk (types, printing) far from Python's recursion limit.
MAX_DEPTH = 128


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Positions:
    """Turns a character offset into (line, column), both 1-based."""

    def __init__(self, text: str, filename: str) -> None:
        self.filename = filename
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> Location:
        line = bisect.bisect_right(self.line_starts, offset)
        return Location(self.filename, line, offset - self.line_starts[line - 1] + 1)


def parse_sexprs(text: str, filename: str = "<string>") -> list[Node]:
    """Parse every top-level s-expression in text."""
    pos = _Positions(text, filename)
    top: list[Node] = []
    # Stack of (bracket, start offset, items) for lists still open.
    stack: list[tuple[str, int, list[Node]]] = []
    offset = 0
    end = len(text)
    while offset < end:
        m = _TOKEN.match(text, offset)
        if m is None:  # only a lone '"'-free oddity could get here; be explicit
            raise KsSyntaxError(f"unexpected character {text[offset]!r}", pos.at(offset))
        kind = m.lastgroup
        start = offset
        offset = m.end()
        if kind in ("ws", "line_comment"):
            continue
        if kind == "block_open":
            offset = _skip_block_comment(text, offset, start, pos)
            continue
        node: Node
        if kind == "open":
            if len(stack) >= MAX_DEPTH:
                raise KsSyntaxError(f"brackets nested more than {MAX_DEPTH} deep", pos.at(start))
            stack.append((m.group(), start, []))
            continue
        if kind == "close":
            closer = m.group()
            if not stack:
                raise KsSyntaxError(f"unexpected {closer!r} with no open bracket", pos.at(start))
            bracket, open_at, items = stack.pop()
            if _CLOSERS[bracket] != closer:
                where = pos.at(open_at)
                raise KsSyntaxError(
                    f"{closer!r} closes the {bracket!r} opened at line {where.line}, "
                    f"column {where.column}; expected {_CLOSERS[bracket]!r}",
                    pos.at(start),
                )
            node = SList(tuple(items), bracket, pos.at(open_at))
        elif kind == "string":
            sm = _STRING_BODY.match(text, offset)
            if sm is None:
                raise KsSyntaxError("unterminated string literal: expected a closing '\"'", pos.at(start))
            offset = sm.end()
            node = Atom(_unescape(sm.group()[:-1]), pos.at(start), is_string=True)
        else:
            node = Atom(m.group(), pos.at(start))
        (stack[-1][2] if stack else top).append(node)
    if stack:
        bracket, open_at, _ = stack[-1]
        raise KsSyntaxError(
            f"unbalanced {bracket!r}: expected {_CLOSERS[bracket]!r} before the end of the file",
            pos.at(open_at),
        )
    return top


def _skip_block_comment(text: str, offset: int, start: int, pos: _Positions) -> int:
    depth = 1
    while depth:
        m = _BLOCK_PART.search(text, offset)
        if m is None:
            raise KsSyntaxError("unterminated '#|' comment: expected '|#'", pos.at(start))
        depth += 1 if m.group() == "#|" else -1
        offset = m.end()
    return offset


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)
