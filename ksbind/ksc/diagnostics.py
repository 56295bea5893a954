"""Reading ksc's output: what it says is missing, and its failures as one-line KsbindErrors.

ksc reports errors as free text (and a Haskell call stack). ``missing_names`` reads
the structured names it says are not in scope (the gdefs the planner adds);
``translate_error`` turns a failure into one KscError located in the ``.ks``
sources (``file:line:col`` for a parse error, the definition for a type error);
``ksc_words`` is the gist of a failure for the messages that quote ksc.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ksbind.errors import KsbindError, KscError, Location
from ksbind.lang.model import StructuredName
from ksbind.lang.reader import KsSource, read_text
from ksbind.lang.sexpr import Atom, Node, SList, parse_sexprs


@dataclass
class KscFailure:
    """What a failed ksc run wrote."""

    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout + "\n" + self.stderr


#: ksc's words when its SUF-AD gives up on a function.
_SUF_TROUBLE = re.compile(r"mkSufFuns|sufFwdRevPass|SUF/BOG|SUF fwd|SUF rev")


def suf_ad_gave_up(failure: KscFailure) -> bool:
    """Whether ksc says its SUF-AD gave up (``mkSufFuns``, ``sufFwdRevPass: unimplemented``...)."""
    return _SUF_TROUBLE.search(failure.text) is not None


def ksc_words(failure: KscFailure) -> str:
    """The gist of ksc's failure, for messages that quote it: its first three lines that say something."""
    lines = [ln.strip() for ln in strip_callstack(failure.stdout + "\n" + failure.stderr).splitlines()]
    lines = [ln for ln in lines if ln and ln != "ksc: Exiting" and not _PROGRESS.match(ln)]
    return one_line("\n".join(lines[:3])).removeprefix("ksc: ") or "no message"


#: ksc's progress lines on stdout ("ksc: read decls", "ksc: Linted ..."), not part of an error.
_PROGRESS = re.compile(r"ksc: (read decls|Linted|Writing|-+$)|-+$")


_NOT_IN_SCOPE = re.compile(r"Not in scope:?(?: userCall:)?\s*(?=\[)")


def missing_names(output: str) -> list[StructuredName]:
    """The structured names ksc says are not in scope, in order."""
    out: list[StructuredName] = []
    for m in _NOT_IN_SCOPE.finditer(output):
        text = _bracketed(output, m.end())
        if text is None:
            continue
        try:
            out.append(StructuredName.parse(text, "<ksc>"))
        except Exception:  # a name ksbind cannot read is left to ksc's own message
            continue
    return out


def _bracketed(text: str, start: int) -> str | None:
    depth = 0
    for i in range(start, min(len(text), start + 2000)):
        c = text[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


_PARSE_ERROR = re.compile(r"Failed parse: \(line (\d+), column (\d+)\):?(.*)", re.DOTALL)
_DEFINITION = re.compile(r"In the definition of (.+)")


def translate_error(failure: KscFailure, sources: Sequence[Path], scanned: Sequence[KsSource],
                    vjp_locations: dict[StructuredName, Location | None],
                    fails_to_parse: Callable[[Path], bool]) -> KscError:
    """ksc's failure as one line, located in the .ks source where ksc's words allow."""
    parse = _PARSE_ERROR.search(failure.stderr)
    if parse:
        words = one_line(strip_callstack(parse.group(3)))
        return KscError(f"ksc: Failed parse: {words}", _parse_error_file(sources, parse, fails_to_parse))
    if "Type errors in" in failure.stdout:
        block = failure.stdout.split("Type errors in", 1)[1].split("End of type errors", 1)[0]
        lines = [ln.strip() for ln in block.splitlines()[1:] if ln.strip()]
        first = lines[0] if lines else "type error"
        defs = _DEFINITION.findall(block)
        where_name = defs[-1].strip() if defs else None
        loc = _definition_location(where_name, scanned, vjp_locations) if where_name else None
        if loc is None and sources:
            loc = Location(str(sources[0]))
        suffix = f" (in the definition of {where_name})" if where_name else ""
        if loc is not None:
            loc = _offending_node(block, loc) or loc
        return KscError(f"ksc: {first}{suffix}{_explained(block, first)}", loc)
    lines = [ln.strip() for ln in strip_callstack(failure.stderr).splitlines() if ln.strip()]
    lines = [ln for ln in lines if ln not in ("ksc: Exiting",)]
    text = one_line("\n".join(lines[:3])) or "ksc failed without saying why"
    return KscError(text if text.startswith("ksc") else f"ksc: {text}",
                    Location(str(sources[0])) if sources else None)


def strip_callstack(text: str) -> str:
    """ksc's words without the Haskell call stack after them."""
    return text.split("CallStack (from HasCallStack)", 1)[0]


def one_line(text: str) -> str:
    """Text's non-blank lines joined with "; "."""
    return "; ".join(ln.strip() for ln in text.strip().splitlines() if ln.strip())


def _parse_error_file(sources: Sequence[Path], m: re.Match[str], fails_to_parse: Callable[[Path], bool]
                      ) -> Location:
    """ksc names no file in a parse error: the first source it fails to parse alone is the one."""
    line, column = int(m.group(1)), int(m.group(2))
    for src in sources:
        if fails_to_parse(src):
            return Location(str(src), line, column)
    return Location(str(sources[0]) if sources else "<ksc>", line, column)


def _definition_location(name: str, scanned: Sequence[KsSource],
                         vjp_locations: dict[StructuredName, Location | None]) -> Location | None:
    for s in scanned:
        for d in s.decls:
            if name in (d.name.name, str(d.name)) and d.location is not None:
                return d.location
        for g in s.gdefs:
            if name == str(g.name):
                return g.location
    for primal, loc in vjp_locations.items():
        if primal.name in name or str(primal) in name:
            return loc
    return None


# ------------------------------------------------------------------ type errors, explained and located

#: What ksc's type errors say about the expression at fault (its "Type errors in" block).
_USER_CALL = re.compile(r"Not in scope: userCall: (\[.*\])")
_CALL_OF = re.compile(r"In the call of: (\S+)")
_ARGS = re.compile(r"^\s*Args: (.*)$", re.MULTILINE)
_LOCAL = re.compile(r"Not in scope: local var/tld: (\S+)")
_INTEGER = re.compile(r"-?\d+")
_VERBS = {"add": "added", "sub": "subtracted", "mul": "multiplied", "div": "divided", "max": "compared",
          "min": "compared", "eq": "compared", "lt": "compared", "gt": "compared", "lte": "compared",
          "gte": "compared"}


def _explained(block: str, first: str) -> str:
    """What ksc's words mean, where ksbind can tell the cause: ``: ...`` or ""."""
    call = _USER_CALL.search(first)
    if call:
        try:
            name = StructuredName.parse(call.group(1), "<ksc>")
        except KsbindError:
            return ""
        types = [str(t) for t in getattr(name.arg_type, "elements", [name.arg_type])]
        shown = ", ".join(types)
        if "Float" in types and "Integer" in types:
            verb = _VERBS.get(name.name, f"passed together to {name.name}")
            args = _ARGS.search(block)
            literal = next((a for a in _words(args.group(1)) if _INTEGER.fullmatch(a)), None) if args else None
            fix = f"write {literal}.0 for {literal}" if literal else "write Float literals with a point (1.0)"
            return (f": no {name.name} takes ({shown}): a Float and an Integer {verb}, and ks never converts "
                    f"one to the other; {fix}, or convert an Integer n with (to_float n)")
        return (f": no function {name.name} takes ({shown}) (a name not defined, or defined at other "
                f"argument types: docs/errors.md)")
    local = _LOCAL.search(first)
    if local:
        return f": {local.group(1)} is not a parameter, a let-bound variable or a function defined before it"
    return ""


def _words(text: str) -> list[str]:
    return re.findall(r"[^\s()]+", text)


def _offending_node(block: str, definition: Location) -> Location | None:
    """The call (or variable) ksc's block is about, inside the definition at ``definition``, where
    ksbind's reader can tell which it is; None otherwise (the definition stays the location)."""
    try:
        forms = parse_sexprs(read_text(definition.file), definition.file)
    except (KsbindError, OSError):
        return None
    form = next((f for f in forms if f.loc.line == definition.line and f.loc.column == definition.column), None)
    if not isinstance(form, SList) or len(form.items) < 5:
        return None
    body = form.items[4]
    local = _LOCAL.search(block)
    if local:
        atoms = [n for n in _nodes(body) if isinstance(n, Atom) and not n.is_string and n.text == local.group(1)]
        return atoms[0].loc if atoms else None
    callee = _CALL_OF.search(block)
    if callee is None:
        return None
    calls = [n for n in _nodes(body) if isinstance(n, SList) and n.bracket == "(" and n.items
             and isinstance(n.items[0], Atom) and n.items[0].text == callee.group(1)]
    args = _ARGS.search(block)
    if args and len(calls) > 1:
        wanted = _words(args.group(1))
        matching = [c for c in calls if _words(_args_text(c)) == wanted]
        calls = matching if matching else calls
    return calls[0].loc if len(calls) == 1 else None


def _args_text(call: SList) -> str:
    """A call's arguments as ksc prints them: the one argument, or (tuple a b ...)."""
    args = call.items[1:]
    return str(args[0]) if len(args) == 1 else "(tuple " + " ".join(str(a) for a in args) + ")"


def _nodes(root: Node) -> list[Node]:
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, SList):
            stack.extend(reversed(node.items))
    return out
