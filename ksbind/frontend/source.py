"""A Python function's source as the translation reads it: its tree, where each node is, the names it sees.

Positions are the user's: ``file:line:col`` of the function's own file, so an
error points at the construct in their editor, not at a line of an extract.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksbind.errors import KsbindError, Location

#: Where every message about an unsupported construct sends the reader.
SEE_DOCS = "see docs/frontend.md for what ksbind.compile reads"


class FrontendError(KsbindError):
    """Python that ksbind.compile cannot translate into ks (located in the user's file)."""

    kind = "translation error"


@dataclass(frozen=True)
class PythonSource:
    """One Python function, parsed: its ``def`` node and the names its body may read."""

    function: Callable[..., Any]
    tree: ast.FunctionDef
    file: str
    first_line: int  # the line of the def (or its first decorator) in ``file``
    column_offset: int  # the indentation textwrap.dedent removed
    globals: Mapping[str, Any] = field(repr=False)
    closure: Mapping[str, Any] = field(repr=False)

    @property
    def name(self) -> str:
        return self.tree.name

    def location(self, node: ast.AST | None = None) -> Location:
        """``node``'s place in the user's file (the def's when None)."""
        target = node if node is not None and hasattr(node, "lineno") else self.tree
        line = self.first_line + getattr(target, "lineno", 1) - 1
        column = getattr(target, "col_offset", 0) + self.column_offset + 1
        return Location(self.file, line, column)

    def error(self, message: str, node: ast.AST | None = None) -> FrontendError:
        return FrontendError(f"{message} ({SEE_DOCS})", self.location(node))

    def lookup(self, name: str) -> tuple[bool, Any]:
        """What a free name of the body means in Python: (found, value), closure, globals, builtins."""
        for scope in (self.closure, self.globals):
            if name in scope:
                return True, scope[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None


def read_function(fn: Callable[..., Any]) -> PythonSource:
    """``fn``'s source through ``inspect.getsource`` and ``ast``; a function whose source
    cannot be read (a builtin, one typed at the interpreter's prompt, a lambda) is a FrontendError."""
    target = inspect.unwrap(fn)
    where = _where(target)
    if not isinstance(target, types.FunctionType):
        raise FrontendError(f"{_describe(fn)} is not a Python function ksbind.compile can read "
                            f"(a def whose source is in a file; {SEE_DOCS})", where)
    if target.__name__ == "<lambda>":
        raise FrontendError(f"{_describe(fn)}: ksbind.compile reads functions written with def, "
                            f"not lambdas ({SEE_DOCS})", where)
    try:
        file_lines, start = inspect.findsource(target)
    except (OSError, TypeError) as e:
        raise FrontendError(f"the source of {_describe(fn)} cannot be read ({e}): ksbind.compile "
                            f"translates Python from its source file ({SEE_DOCS})", where) from None
    first_line = start + 1
    try:
        text, dedented, module = _parsed(_block_by_indentation(file_lines, start))
    except SyntaxError:  # the indentation rule cut it wrong: Python's tokenizer finds the block
        try:
            text, dedented, module = _parsed(inspect.getblock(file_lines[start:]))
        except SyntaxError as e:  # a def inside something getsource cut short
            raise FrontendError(f"the source of {_describe(fn)} does not parse on its own: {e.msg}",
                                where) from None
    indent = _indent_removed(text, dedented)
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        raise FrontendError(f"no def found in the source of {_describe(fn)} ({SEE_DOCS})", where)
    closure: dict[str, Any] = {}
    if target.__closure__:
        for name, cell in zip(target.__code__.co_freevars, target.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: a name assigned after the def
                pass
    return PythonSource(target, defs[0], where.file, max(first_line, 1), indent, target.__globals__, closure)


def _block_by_indentation(lines: Sequence[str], start: int) -> list[str]:
    """The def starting at ``lines[start]`` (its decorators first): the lines after its header
    that are blank or indented deeper than it. What ``inspect.getsourcelines`` finds by tokenizing
    from there to the end of the file (4 ms of a 200-line function's translation); a line of the
    def at its own indentation or less (a continuation, a string's line) cuts it short, and the
    cut text then does not parse, so read_function asks the tokenizer."""
    def indent(line: str) -> int:
        return len(line) - len(line.lstrip())

    base = indent(lines[start])
    end = start
    while end < len(lines) and lines[end].lstrip().startswith("@"):
        end += 1  # decorators
    end += 1  # the def's line
    while end < len(lines) and (not lines[end].strip() or indent(lines[end]) > base):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # blank lines after it
    return list(lines[start:end])


def _parsed(lines: Sequence[str]) -> tuple[str, str, ast.Module]:
    """The block's text, dedented, and its module (SyntaxError when it does not parse)."""
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    return text, dedented, ast.parse(dedented)


def _where(fn: Any) -> Location:
    code = getattr(fn, "__code__", None)
    if code is None:
        return Location("<unknown>")
    return Location(code.co_filename, code.co_firstlineno)


def _describe(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _indent_removed(text: str, dedented: str) -> int:
    first = next((line for line in text.splitlines() if line.strip()), "")
    first_dedented = next((line for line in dedented.splitlines() if line.strip()), "")
    return len(first) - len(first_dedented)
