"""A small s-expression reader for ks text that keeps line:column for every node.

ks uses ``( ... )`` for lists and ``[ ... ]`` for structured names; both become
``SList`` with their bracket recorded. Comments are ``;`` to end of line and
nestable ``#| ... |#`` blocks. Strings are double-quoted with backslash escapes.
"""
from __future__ import annotations

import bisect
import gc
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ksbind.errors import KsSyntaxError, Location


@dataclass(frozen=True, slots=True)
class Atom:
    text: str
    loc: Location
    is_string: bool = False

    def __str__(self) -> str:
        return _quote(self.text) if self.is_string else self.text


@dataclass(frozen=True, slots=True)
class SList:
    items: tuple[Node, ...]
    bracket: str  # "(" or "["
    loc: Location

    def __str__(self) -> str:
        close = ")" if self.bracket == "(" else "]"
        return self.bracket + " ".join(str(i) for i in self.items) + close


Node = Atom | SList

_CLOSERS = {"(": ")", "[": "]"}
# Leading whitespace is part of every token match: one regex call per token.
_TOKEN = re.compile(
    r"""
    (?P<ws>\s*)
    (?:
      (?P<line_comment>;[^\n]*)
    | (?P<block_open>\#\|)
    | (?P<open>[(\[])
    | (?P<close>[)\]])
    | (?P<string>")
    | (?P<atom>[^\s()\[\]";]+)
    )?
    """,
    re.VERBOSE,
)
_BLOCK_PART = re.compile(r"\#\||\|\#")
_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\.)*"')
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
#: Deepest bracket nesting accepted. Real ks nests a few levels; the limit keeps
#: every recursive walk (types, printing) far from Python's recursion limit.
MAX_DEPTH = 128


def excerpt(node: Node, limit: int = 60) -> str:
    """A node as text for an error message, cut to ``limit`` characters."""
    text = str(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small acyclic objects,
    when this is the process's only Python thread.

    Reading creates hundreds of thousands of nodes and none of them form cycles;
    the collector's passes over them cost about 30% of reading and rendering
    10,000 functions (docs/performance.md). The collector is the process's, not
    the thread's: with another thread alive (a user's, or a batch build's
    renders) it is left running, so no other thread's garbage waits on ours. A
    single thread cannot start another while it is in here, except by ksbind's
    own code.
    """
    if threading.active_count() > 1:
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_sexprs(text: str, filename: str = "<string>") -> list[Node]:
    """Parse every top-level s-expression in text."""
    with gc_paused():
        return _parse(text, filename)


def _parse(text: str, filename: str) -> list[Node]:
    pos = _Positions(text, filename)
    top: list[Node] = []
    # Stack of (bracket, location, items) for lists still open.
    stack: list[tuple[str, Location, list[Node]]] = []
    offset = 0
    end = len(text)
    # The current line and where it starts, advanced as newlines are passed (cheaper than a
    # search per token; only whitespace and block comments can hold newlines).
    line, line_start = 1, 0
    match = _TOKEN.match
    while offset < end:
        m = match(text, offset)
        assert m is not None  # every group is optional, so the pattern always matches
        start = m.end("ws")
        if "\n" in text[offset:start]:
            line += text.count("\n", offset, start)
            line_start = text.rindex("\n", offset, start) + 1
        kind = m.lastgroup
        offset = m.end()
        if kind == "ws":  # nothing but whitespace matched: the end of the text
            if start < end:  # unreachable: every other character starts some token
                raise KsSyntaxError(f"unexpected character {text[start]!r}", pos.at(start))
            break
        if kind == "line_comment":
            continue
        if kind == "block_open":
            offset = _skip_block_comment(text, offset, start, pos)
            where = pos.at(offset)
            line, line_start = where.line or 1, offset - (where.column or 1) + 1
            continue
        loc = Location(filename, line, start - line_start + 1)
        node: Node
        if kind == "open":
            if len(stack) >= MAX_DEPTH:
                raise KsSyntaxError(f"brackets nested more than {MAX_DEPTH} deep", loc)
            stack.append((m.group("open"), loc, []))
            continue
        if kind == "close":
            closer = m.group("close")
            if not stack:
                raise KsSyntaxError(f"unexpected {closer!r} with no open bracket", loc)
            bracket, open_loc, items = stack.pop()
            if _CLOSERS[bracket] != closer:
                raise KsSyntaxError(
                    f"{closer!r} closes the {bracket!r} opened at line {open_loc.line}, "
                    f"column {open_loc.column}; expected {_CLOSERS[bracket]!r}",
                    loc,
                )
            node = SList(tuple(items), bracket, open_loc)
        elif kind == "string":
            sm = _STRING_BODY.match(text, offset)
            if sm is None:
                raise KsSyntaxError("unterminated string literal: expected a closing '\"'", loc)
            offset = sm.end()
            node = Atom(_unescape(sm.group()[:-1]), loc, is_string=True)
        else:
            node = Atom(m.group("atom"), loc)
        (stack[-1][2] if stack else top).append(node)
    if stack:
        bracket, open_loc, _ = stack[-1]
        raise KsSyntaxError(
            f"unbalanced {bracket!r}: expected {_CLOSERS[bracket]!r} before the end of the file",
            open_loc,
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
