"""For template authors: describe the built-in templates and copy them out.

``ksbind templates list`` prints every built-in template with its blocks (read
from Jinja2's own parse tree, with the ``{# ... #}`` comment just above each
block as its description); ``ksbind templates eject DIR [NAME...]`` copies
built-ins into DIR, ready to use as an override directory.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
from jinja2 import nodes

from ksbind.codegen.render import BUILTIN_FOLDERS, BUILTIN_TEMPLATES, template_api_of
from ksbind.errors import Location, OutputError, TemplateError, closest
from ksbind.fileio import write_atomic
from ksbind.targets.registry import TARGETS


@dataclass(frozen=True)
class BlockInfo:
    name: str
    line: int
    doc: str
    scoped: bool
    depth: int            # 0 for a top-level block, 1 inside another block...
    in_loop: bool         # inside a {% for %}: rendered once per item


@dataclass(frozen=True)
class TemplateInfo:
    name: str
    doc: str
    api: str | None                       # the template-API stamp
    blocks: tuple[BlockInfo, ...]
    macros: tuple[str, ...]
    used_for: tuple[str, ...]             # "target: output file" pairs


def builtin_files() -> dict[str, Path]:
    """Every built-in template by name: the shared ones and those of ksbind's own targets
    (each in its package's ``templates/``)."""
    return {p.name: p for d in BUILTIN_FOLDERS for p in sorted(d.iterdir()) if p.is_file() and p.name.endswith(".j2")}


def builtin_names() -> list[str]:
    return sorted(builtin_files())


_ENV = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def template_info(name: str, source: str | None = None) -> TemplateInfo:
    """A template's description, blocks and macros, from Jinja2's parse tree and lexer."""
    path = builtin_files().get(name, BUILTIN_TEMPLATES / name)
    if source is None:
        source = path.read_text(encoding="utf-8")
    try:
        tree = _ENV.parse(source, name, str(path))
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"template syntax error: {e.message}", Location(e.filename or name, e.lineno)) from None
    comments = _comments(source)
    blocks = tuple(_blocks(tree, comments, 0, False))
    macros = tuple(m.name for m in tree.find_all(nodes.Macro))
    # The file's own description: the first comment that is not the API stamp, before any block.
    first_block = blocks[0].line if blocks else 10**9
    doc = next((text for end, (start, text) in sorted(comments.items())
                if start < first_block and template_api_of("{#" + text + "#}") is None), "")
    used = tuple(f"{t} ({layout}): {out.replace('{module}', '<module>')}" for t, target in sorted(TARGETS.items())
                 for layout, plan in (("split", target.files), ("single", target.single_file))
                 for out, tmpl in sorted(plan.items()) if tmpl == name)
    return TemplateInfo(name, doc, template_api_of(source), blocks, macros, used)


def _comments(source: str) -> dict[int, tuple[int, str]]:
    """Each ``{# #}`` comment by the line it ends on: (first line, text), whitespace squeezed."""
    out: dict[int, tuple[int, str]] = {}
    start, text = 0, ""
    for line, kind, value in _ENV.lex(source):
        if kind == "comment_begin":
            start, text = line, ""
        elif kind == "comment":
            text = value
        elif kind == "comment_end":
            out[line] = (start, " ".join(text.split()))
    return out


def _blocks(node: nodes.Node, comments: dict[int, tuple[int, str]], depth: int, in_loop: bool
            ) -> Iterator[BlockInfo]:
    for child in node.iter_child_nodes():
        if isinstance(child, nodes.Block):
            doc = comments.get(child.lineno - 1, comments.get(child.lineno, (0, "")))[1]
            yield BlockInfo(child.name, child.lineno, doc, child.scoped, depth, in_loop)
            yield from _blocks(child, comments, depth + 1, in_loop)
        else:
            yield from _blocks(child, comments, depth, in_loop or isinstance(child, nodes.For))


def describe_templates() -> str:
    """The text ``ksbind templates list`` prints."""
    lines = [f"Built-in templates in {BUILTIN_TEMPLATES} and each target's package (ksbind/targets/NAME/templates)",
             "(override one by putting a file of the same name in a 'templates:' directory, or",
             " {% extends \"builtin/NAME\" %} and replace single blocks; see docs/templates.md)", ""]
    for name in builtin_names():
        info = template_info(name)
        api = f"template API {info.api}" if info.api else "no template-API stamp"
        lines.append(f"{name}  ({api})")
        if info.doc:
            lines.append(f"    {info.doc}")
        if info.used_for:
            lines.append(f"    renders: {'; '.join(info.used_for)}")
        for b in info.blocks:
            flags = ", ".join(x for x in ("scoped" if b.scoped else "", "per item" if b.in_loop else "") if x)
            head = f"{'  ' * b.depth}{b.name}" + (f" ({flags})" if flags else "")
            lines.append(f"    block {head:<34} line {b.line:<4} {b.doc}".rstrip())
        if info.macros:
            lines.append(f"    macros: {', '.join(info.macros)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def eject(directory: str | os.PathLike[str], names: Sequence[str] = (), force: bool = False) -> list[Path]:
    """Copy built-in templates (all when ``names`` is empty) into directory.

    A file already there with the same content is left alone; one with other
    content is an error (nothing is written) unless ``force``. Returns the
    paths now holding the built-ins.
    """
    available = builtin_names()
    wanted = list(dict.fromkeys(names)) or available
    for n in wanted:
        if n not in available:
            raise TemplateError(f"no built-in template {n!r}{closest(n, available)}; "
                                f"'ksbind templates list' shows them all", Location(n))
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise OutputError("cannot eject templates into a file: expected a directory", Location(str(out)))
    files = builtin_files()
    plan = [(out / n, files[n].read_text(encoding="utf-8")) for n in wanted]
    clashes = [p for p, text in plan if p.exists() and (not p.is_file() or p.read_text(encoding="utf-8") != text)]
    if clashes and not force:
        raise OutputError(f"would overwrite {len(clashes)} edited file(s): "
                          f"{', '.join(str(p) for p in clashes)}; move them away or pass --force",
                          Location(str(clashes[0])))
    for path, text in plan:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        try:
            write_atomic(path, text)
        except OSError as e:
            raise OutputError(f"cannot write ejected template: {e.strerror}", Location(str(path))) from None
    return [p for p, _ in plan]
