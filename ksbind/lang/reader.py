"""Reads def/edef/gdef forms of .ks and .kso text into FunctionDecls.

``rule`` forms and comments are skipped. A gdef of fwd/rev/sufrev/CL is
derived from the signature of the function it names; gdefs whose signature
depends on the body (suffwdpass, sufrevpass, shape) need the .kso.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ksbind.errors import (
    DeclarationError,
    InputFileError,
    KsbindError,
    Location,
    closest,
)
from ksbind.inputs import read_bytes
from ksbind.lang.model import DERIVATIONS, FunctionDecl, StructuredName, structured_name_from_node
from ksbind.lang.sexpr import Atom, Node, SList, excerpt, gc_paused, parse_sexprs
from ksbind.lang.types import KsType, TupleType, type_from_node, type_from_nodes

TOP_LEVEL_FORMS = ("def", "edef", "gdef", "rule")


def parse_ks(text: str, filename: str = "<string>") -> list[FunctionDecl]:
    """Every function declared in ks text, in file order (gdefs where they stand)."""
    with gc_paused():
        return _parse_ks(text, filename)


@dataclass(frozen=True)
class GdefRequest:
    """A ``(gdef KIND [f T])`` form as written: what it asks ksc to derive, and where."""

    kind: str
    target: StructuredName
    location: Location

    @property
    def name(self) -> StructuredName:
        return StructuredName.derived(self.kind, self.target)


#: A call in a def's body as written: the callee (a plain name, or a structured name
#: written in full, as in ``([f Float] x)``) and how many arguments it is given.
CallSite = tuple[str | StructuredName, int]


@dataclass(frozen=True)
class KsSource:
    """A ks source file as ksc will see it: its defs/edefs and its gdef requests,
    not resolved (ksc resolves gdefs across files, and derives what ksbind cannot)."""

    decls: tuple[FunctionDecl, ...]
    gdefs: tuple[GdefRequest, ...]
    #: Each def's call sites, in body order (for the ksc step's call graph).
    calls: Mapping[StructuredName, tuple[CallSite, ...]] = field(default_factory=dict, compare=False)


def scan_ks(text: str, filename: str = "<string>") -> KsSource:
    """The defs, edefs and gdefs of ks source, unresolved (for the ksc step)."""
    calls: dict[StructuredName, tuple[CallSite, ...]] = {}
    with gc_paused():
        entries, _ = _read_forms(text, filename, calls)
    decls = tuple(e for e in entries if isinstance(e, FunctionDecl))
    gdefs = tuple(GdefRequest(*e) for e in entries if not isinstance(e, FunctionDecl))
    return KsSource(decls, gdefs, calls)


# Per process: a function of the text alone (a batch's modules share their ksc output's text).
@lru_cache(maxsize=16)
def scan_ks_text(text: str, filename: str) -> KsSource:
    """scan_ks, remembered by text and file name: ksc's prelude is scanned by the ksc step and
    by the resolver in one build (a few hundred defs: tens of milliseconds each time). Callers
    read the file every time, so a changed file is scanned again; they must not change the
    KsSource (it is shared)."""
    return scan_ks(text, filename)


def call_sites(body: Node) -> tuple[CallSite, ...]:
    """Every ``(HEAD ARG...)`` in a body whose head names a function. Binders such as
    ``(x : Float)`` or a let's ``(x expr)`` come out too: a caller matches heads
    against the functions it knows, so a variable's name is only a name."""
    out: list[CallSite] = []
    stack: list[Node] = [body]
    while stack:
        node = stack.pop()
        if not isinstance(node, SList) or not node.items:
            continue
        head = node.items[0]
        if node.bracket == "(":
            if isinstance(head, Atom) and not head.is_string:
                out.append((head.text, len(node.items) - 1))
            elif isinstance(head, SList) and head.bracket == "[":
                try:
                    out.append((structured_name_from_node(head), len(node.items) - 1))
                except KsbindError:
                    pass  # not a name ksbind can read: ksc will say what it makes of it
        stack.extend(reversed(node.items))
    return tuple(out)


def _parse_ks(text: str, filename: str) -> list[FunctionDecl]:
    entries, declared = _read_forms(text, filename)
    return _resolve_gdefs(entries, declared)


def _read_forms(text: str, filename: str, calls: dict[StructuredName, tuple[CallSite, ...]] | None = None
                ) -> tuple[list[FunctionDecl | tuple[str, StructuredName, Location]],
                           dict[StructuredName, FunctionDecl]]:
    """The file's forms in order; ``calls``, when given, gets each def's call sites."""
    forms = parse_sexprs(text, filename)
    entries: list[FunctionDecl | tuple[str, StructuredName, Location]] = []
    declared: dict[StructuredName, FunctionDecl] = {}
    for form in forms:
        head = _form_head(form)
        if head == "rule":
            continue
        assert isinstance(form, SList)
        if head == "gdef":
            entries.append(_read_gdef(form))
            continue
        decl = _read_def(form) if head == "def" else _read_edef(form)
        if calls is not None and head == "def":
            calls[decl.name] = calls.get(decl.name, ()) + call_sites(form.items[4])
        previous = declared.get(decl.name)
        if previous is not None:
            if not same_signature(previous, decl):
                raise DeclarationError(
                    f"{decl.name} is declared again with a different signature: "
                    f"{decl.signature} here, {previous.signature} at {previous.location}",
                    decl.location,
                )
            # The same function restated (an edef before its def): keep the def's parameter names.
            if decl.param_names and not previous.param_names:
                entries[entries.index(previous)] = declared[decl.name] = decl
            continue
        declared[decl.name] = decl
        entries.append(decl)
    return entries, declared


def same_signature(a: FunctionDecl, b: FunctionDecl) -> bool:
    """Whether two declarations state the same function (parameter names aside)."""
    return (a.name, a.arg_type, a.return_type) == (b.name, b.arg_type, b.return_type)


def read_ks(path: str | os.PathLike[str]) -> list[FunctionDecl]:
    """Read a .ks or .kso file."""
    return parse_ks(read_text(path), os.fspath(path))


def read_text(path: str | os.PathLike[str], what: str = "declaration file") -> str:
    """A user file's text, with clear errors for missing, unreadable or non-UTF-8 files."""
    name = os.fspath(path)
    try:
        # Refuse FIFOs, sockets and devices before opening: reading a FIFO would block forever.
        mode = os.stat(name).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):
            raise InputFileError(f"{what} is not a regular file (a FIFO, socket or device?)", Location(name))
        data = read_bytes(name)  # noted as read: an input of the build being recorded (ksbind/inputs.py)
    except FileNotFoundError:
        raise InputFileError(f"{what} not found", Location(name)) from None
    except IsADirectoryError:
        raise InputFileError(f"{what} is a directory, expected a file", Location(name)) from None
    except OSError as e:
        raise InputFileError(f"cannot read {what}: {e.strerror}", Location(name)) from None
    except ValueError:  # e.g. a NUL byte in the path
        raise InputFileError(f"{what} path {name!r} is not a valid file name", Location(repr(name))) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputFileError(
            f"{what} is not valid UTF-8 (byte 0x{data[e.start]:02x}); save it as UTF-8",
            Location(name, line, column),
        ) from None


# ------------------------------------------------------------------ forms

def _form_head(form: Node) -> str:
    if isinstance(form, SList) and form.bracket == "(" and form.items:
        head = form.items[0]
        if isinstance(head, Atom) and not head.is_string and head.text in TOP_LEVEL_FORMS:
            return head.text
        if isinstance(head, Atom) and not head.is_string:
            raise DeclarationError(
                f"unknown top-level form {head.text!r}{closest(head.text, TOP_LEVEL_FORMS)}; "
                "expected def, edef, gdef or rule",
                head.loc,
            )
    raise DeclarationError(
        f"expected a top-level form (def ...), (edef ...), (gdef ...) or (rule ...), found {excerpt(form)}",
        form.loc,
    )


def _read_edef(form: SList) -> FunctionDecl:
    _expect_len(form, 4, "(edef NAME RETURN-TYPE ARGUMENT-TYPES)")
    _, name_node, ret_node, args_node = form.items
    arg_type = type_from_node(args_node)
    return _make_decl(name_node, arg_type, type_from_node(ret_node), (), form.loc, "edef")


def _read_def(form: SList) -> FunctionDecl:
    _expect_len(form, 5, "(def NAME RETURN-TYPE PARAMETERS BODY)")
    _, name_node, ret_node, params_node, _body = form.items
    names, types = _read_params(params_node)
    arg_type = types[0] if len(types) == 1 else TupleType(tuple(types))
    return _make_decl(name_node, arg_type, type_from_node(ret_node), tuple(names), form.loc, "def")


def _read_gdef(form: SList) -> tuple[str, StructuredName, Location]:
    _expect_len(form, 3, "(gdef DERIVATION [f ARGUMENT-TYPE])")
    _, kind_node, target_node = form.items
    if not isinstance(kind_node, Atom) or kind_node.text not in DERIVATIONS:
        raise DeclarationError(
            f"unknown derivation {excerpt(kind_node)}"
            f"{closest(kind_node.text, DERIVATIONS) if isinstance(kind_node, Atom) else ''}; "
            f"expected one of {', '.join(DERIVATIONS)}",
            kind_node.loc,
        )
    if not (isinstance(target_node, SList) and target_node.bracket == "["):
        raise DeclarationError(
            f"gdef needs a structured name such as [f (Vec Float)], found {excerpt(target_node)}",
            target_node.loc,
        )
    return kind_node.text, structured_name_from_node(target_node), form.loc


def _resolve_gdefs(
    entries: Sequence[FunctionDecl | tuple[str, StructuredName, Location]],
    declared: dict[StructuredName, FunctionDecl],
) -> list[FunctionDecl]:
    out: list[FunctionDecl] = []
    for entry in entries:
        if isinstance(entry, FunctionDecl):
            out.append(entry)
            continue
        kind, target, loc = entry
        primal = declared.get(target)
        if primal is None:
            raise DeclarationError(
                f"gdef {kind} of {target}: there is no def or edef of {target} in this file", loc
            )
        derived_name = StructuredName.derived(kind, target)
        if derived_name in declared:
            continue  # already stated in full (as in a .kso)
        try:
            derived = primal.derive(kind)
        except DeclarationError as e:  # report it at the gdef, not at the primal
            raise DeclarationError(f"gdef {kind} of {target}: {e.message}", loc) from None
        derived = FunctionDecl(derived.name, derived.arg_type, derived.return_type,
                               location=loc, origin="gdef")
        declared[derived.name] = derived
        out.append(derived)
    return out


# ------------------------------------------------------------- pieces

def _make_decl(name_node: Node, arg_type: KsType, return_type: KsType,
               param_names: tuple[str, ...], loc: Location, origin: str) -> FunctionDecl:
    if isinstance(name_node, Atom) and not name_node.is_string:
        if name_node.text in DERIVATIONS:
            raise DeclarationError(
                f"{name_node.text!r} is a derivation, not a function name; "
                f"write a structured name such as [{name_node.text} [f Float]]",
                name_node.loc,
            )
        name = StructuredName.base(name_node.text, arg_type)
    elif _is_plain_derivation(name_node):
        assert isinstance(name_node, SList)
        name = _plain_derivation_name(name_node, arg_type)
    elif isinstance(name_node, SList) and name_node.bracket == "[":
        name = structured_name_from_node(name_node)
        if not name.is_derived and name.arg_type != arg_type:
            raise DeclarationError(
                f"{name} is declared with argument type {arg_type}; the name says {name.arg_type}",
                name_node.loc,
            )
    else:
        raise DeclarationError(
            f"expected a function name or a structured name [f TYPE], found {excerpt(name_node)}",
            name_node.loc,
        )
    return FunctionDecl(name, arg_type, return_type, param_names, loc, origin)


#: Derivations whose argument is the primal's argument S, and those whose argument is (Tuple S dX).
_ARG_IS_PRIMAL = ("D", "suffwdpass", "CL", "shape")
_ARG_STARTS_WITH_PRIMAL = ("fwd", "rev", "sufrev")


def _is_plain_derivation(node: Node) -> bool:
    """``[rev f]``, or ``[shape [rev f]]``: derivations of a plain name, as ksc allows in a def or edef."""
    if not (isinstance(node, SList) and node.bracket == "[" and len(node.items) == 2):
        return False
    kind, inner = node.items
    if not (isinstance(kind, Atom) and not kind.is_string and kind.text in DERIVATIONS):
        return False
    return (isinstance(inner, Atom) and not inner.is_string) or _is_plain_derivation(inner)


def _plain_derivation_name(node: SList, arg_type: KsType) -> StructuredName:
    """ksc reads ``(def [rev f] ...)`` as ``[rev [f S]]``, S found from the parameters:
    the argument itself for D/suffwdpass/CL/shape, the first of (S, dX) for fwd/rev/sufrev.
    A chain is read from the outside in: ``(edef [shape [rev f]] R (Tuple S dX))`` is
    ``[shape [rev [f S]]]`` (shape's argument is [rev f]'s, whose first element is f's)."""
    kind_node, inner = node.items
    assert isinstance(kind_node, Atom)
    kind = kind_node.text
    primal: KsType | None = None
    if kind in _ARG_IS_PRIMAL:
        primal = arg_type
    elif kind in _ARG_STARTS_WITH_PRIMAL and isinstance(arg_type, TupleType) and len(arg_type.elements) == 2:
        primal = arg_type.elements[0]
    if primal is None:
        base = _plain_base(node)
        raise DeclarationError(
            f"{kind!r} is a derivation: it takes a structured name, as in [{kind} [{base} Float]]; "
            f"found {excerpt(node)}, whose argument type cannot be told from {arg_type}", node.loc)
    if isinstance(inner, SList):
        return StructuredName.derived(kind, _plain_derivation_name(inner, primal))
    assert isinstance(inner, Atom)
    return StructuredName.derived(kind, StructuredName.base(inner.text, primal))


def _plain_base(node: Node) -> str:
    """The plain name at the bottom of ``[d1 [d2 f]]``."""
    while isinstance(node, SList):
        node = node.items[1]
    assert isinstance(node, Atom)
    return node.text


def _read_params(node: Node) -> tuple[list[str], list[KsType]]:
    """``(x : T)``, ``((a : T) (b : U))`` or ``()``."""
    if not isinstance(node, SList) or node.bracket != "(":
        raise DeclarationError(f"expected parameters such as (x : Float), found {excerpt(node)}", node.loc)
    if _is_param(node):
        name, t = _read_param(node)
        return [name], [t]
    names: list[str] = []
    types: list[KsType] = []
    for p in node.items:
        if not (isinstance(p, SList) and _is_param(p)):
            raise DeclarationError(f"expected a parameter (NAME : TYPE), found {excerpt(p)}", p.loc)
        name, t = _read_param(p)
        if name in names:
            raise DeclarationError(f"parameter {name!r} appears twice", p.loc)
        names.append(name)
        types.append(t)
    return names, types


def _is_param(node: SList) -> bool:
    return (len(node.items) >= 2 and isinstance(node.items[1], Atom) and node.items[1].text == ":"
            and not node.items[1].is_string)


def _read_param(node: SList) -> tuple[str, KsType]:
    name = node.items[0]
    if not isinstance(name, Atom) or name.is_string:
        raise DeclarationError(f"expected a parameter name, found {excerpt(name)}", name.loc)
    if len(node.items) < 3:
        raise DeclarationError(f"parameter {name.text!r} has no type after ':'", node.loc)
    return name.text, type_from_nodes(node.items[2:], node.items[2].loc)


def _expect_len(form: SList, n: int, shape: str) -> None:
    if len(form.items) != n:
        raise DeclarationError(
            f"{form.items[0]} takes {n - 1} parts, found {len(form.items) - 1}: expected {shape}", form.loc
        )
