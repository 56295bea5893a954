"""Renders a module's files from templates: one cached Jinja2 Environment per
template search path, user override directories searched before the built-ins,
and the built-ins also reachable as ``builtin/NAME`` so overrides can extend them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import traceback
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

import jinja2
import jinja2.bccache
import jinja2.runtime

from ksbind._version import TEMPLATE_API, __version__
from ksbind.binding import select_bindings
from ksbind.cache.layout import TEMPLATES_DIR, cache_root
from ksbind.codegen.context import build_context
from ksbind.errors import ConfigError, KsbindError, Location, TemplateError, closest, user_stacklevel
from ksbind.inputs import note_tree
from ksbind.lang.identifiers import cpp_string as cpp_string  # re-exported: the filter's function
from ksbind.lang.model import FunctionDecl, NotAStructuredNameError, StructuredName
from ksbind.lang.types import KsType, parse_type
from ksbind.settings import check_keywords, keyword_signature, pick, with_generated_lines
from ksbind.spec import (
    TENSOR_ELEMENTS,
    Binding,
    BindingSpec,
    Layout,
    ModuleOptions,
    TargetName,
    TensorElement,
)
from ksbind.targets.registry import TARGETS, get_target

if sys.version_info >= (3, 11):
    from typing import Unpack
elif TYPE_CHECKING:  # 3.10: for type checkers only (typing.get_type_hints of the function then fails)
    from typing_extensions import Unpack

#: The templates every target shares (the entry points, the stub); each of ksbind's own targets
#: keeps its own in its package (ksbind/targets/NAME/templates/), built-ins as these are.
BUILTIN_TEMPLATES = Path(__file__).parent / "templates"
#: Every built-in template's folder: the shared ones, then each of ksbind's own targets'. A
#: template's name is unique across them (tests/test_target_records.py), so one search finds it.
BUILTIN_FOLDERS: tuple[Path, ...] = (BUILTIN_TEMPLATES, *(t.templates for _, t in sorted(TARGETS.items())
                                                         if t.templates is not None))


def py_string(value: Any) -> str:
    """A Python string literal."""
    return repr(str(value))


def py_docstring(value: Any) -> str:
    """A triple-quoted Python docstring literal (for stubs)."""
    text = str(value).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):  # would merge with the closing quotes
        text = text[:-1] + '\\"'
    return f'"""{text}"""'


# Per process: functions of their argument alone (parsed once).
@lru_cache(maxsize=4096)
def _structured_name(text: str) -> StructuredName:
    try:
        return StructuredName.parse(text, "<filter cpp_symbol>")
    except NotAStructuredNameError:
        raise ValueError(f"expected a structured name such as [f Float], found {text!r}") from None


# Per process, as _structured_name.
@lru_cache(maxsize=4096)
def _as_type(t: KsType | str) -> KsType:
    return t if isinstance(t, KsType) else parse_type(str(t))


#: Filters every template can use (documented in docs/templates.md). A config's
#: ``filters:`` module adds to these (and may replace them) for its modules.
FILTERS: dict[str, Callable[..., Any]] = {
    "cpp_string": cpp_string,                           # "text" as a C++ string literal
    "py_string": py_string,                             # 'text' as a Python string literal
    "py_docstring": py_docstring,                       # """text""" as a Python docstring
    "cpp_type": lambda t: _as_type(t).cpp,              # (Vec Float) -> ks::tensor<1, ks::Float>
    "mangle": lambda t: _as_type(t).mangled,            # (Vec Float) -> T1f
    "ks_type": lambda t: str(_as_type(t)),              # (Vec Float) -> (Tensor 1 Float)
    "tangent": lambda t: str(_as_type(t).tangent),      # Integer -> (Tuple)
    "cpp_symbol": lambda name: _structured_name(str(name)).cpp_symbol,  # [f (Tuple Float Float)] -> f$aff
}


class TemplateAPIWarning(UserWarning):
    """An override template stamped for another template-API version than this ksbind's."""


_API_STAMP = "ksbind-template-api:"


def template_api_of(source: str) -> str | None:
    """The version in a template's ``{# ksbind-template-api: N #}`` first comment, or None.

    Read with Jinja2's own lexer, so any comment style the lexer accepts works.
    """
    try:
        tokens = _LEXER_ENV.lex(source)
        for _, kind, value in tokens:
            if kind == "comment_begin" or kind == "whitespace":
                continue
            if kind == "comment" and value.strip().startswith(_API_STAMP):
                return value.strip()[len(_API_STAMP):].strip()
            return None
    except jinja2.TemplateSyntaxError:
        return None  # reported properly when the template is parsed
    return None


_LEXER_ENV = jinja2.Environment()


class _OverrideLoader(jinja2.FileSystemLoader):
    """A user's override directory: warns when a template was written for another template API."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        version = template_api_of(source)
        if version is not None and version != str(TEMPLATE_API):
            warnings.warn(
                f"{filename}: template written for ksbind template API {version}, but ksbind {__version__} "
                f"provides template API {TEMPLATE_API}; compare it with 'ksbind templates eject' output and "
                f"the changes listed in docs/templates.md, then update its first line", TemplateAPIWarning,
                stacklevel=user_stacklevel())
        return source, filename, uptodate


#: The Environment's settings: its compiled templates depend on them (so does the folder they are kept in).
_SETTINGS: dict[str, Any] = {"undefined": jinja2.StrictUndefined, "trim_blocks": True, "lstrip_blocks": True,
                             "keep_trailing_newline": True, "autoescape": False}


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Templates compiled once across processes, in the build cache (``templates/VERSIONS/``): a
    rendering process loads their code instead of compiling them from source. Jinja2 checks each
    one against its source's checksum; a cache that cannot be written only costs the compile."""

    def __init__(self) -> None:
        super().__init__(directory=".")
        self._folder = hashlib.sha256(
            f"{__version__}\0{jinja2.__version__}\0{sys.version}\0{sorted(_SETTINGS.items())!r}".encode()
        ).hexdigest()[:16]

    @property
    def directory(self) -> str:  # the root of now (KSBIND_CACHE_DIR may change in a process)
        return str(cache_root() / TEMPLATES_DIR / self._folder)

    @directory.setter
    def directory(self, value: str) -> None:
        pass

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


_COMPILED = _CompiledTemplates()


# Per process: an Environment per search path (its templates compile once).
@lru_cache(maxsize=32)
def environment(overrides: tuple[str, ...] = (), extra_filters: tuple[tuple[str, Callable[..., Any]], ...] = (),
                target_templates: str | None = None) -> jinja2.Environment:
    """The Environment for a template search path (cached: templates compile once).

    Override directories come first, then an out-of-tree target's own templates
    (Target.templates), then the built-ins (BUILTIN_FOLDERS: the shared ones and ksbind's own
    targets'); ``builtin/NAME`` always names the built-in, so an override can extend the
    template it replaces.
    """
    builtins = [str(d) for d in BUILTIN_FOLDERS]
    loader = jinja2.ChoiceLoader([
        jinja2.PrefixLoader({"builtin": jinja2.FileSystemLoader(builtins)}),
        *(_OverrideLoader(d) for d in overrides),
        *([jinja2.FileSystemLoader(target_templates)] if target_templates is not None else []),
        jinja2.FileSystemLoader(builtins),
    ])
    env = jinja2.Environment(loader=loader, **_SETTINGS, bytecode_cache=_COMPILED,
                             # Users edit overrides while iterating; built-ins never change.
                             auto_reload=bool(overrides))
    env.context_class = _BlockSharingContext
    env.filters.update(FILTERS)
    env.filters.update(dict(extra_filters))
    return env


class _BlockSharingContext(jinja2.runtime.Context):
    """Jinja2's Context, but a derived context shares the block stacks instead of copying them.

    Every scoped block rendered in a loop (one ``wrapper``, ``prologue``,
    ``logging``, ``call`` per entry point) derives a context; copying each
    block's stack there was a third of the rendering time. The stacks are only
    filled while the root template sets up inheritance, before any block runs,
    and only read afterwards, so sharing them is safe.
    """

    def derived(self, locals: dict[str, Any] | None = None) -> jinja2.runtime.Context:
        context = jinja2.runtime.new_context(self.environment, self.name, {}, self.get_all(), True, None, locals)
        context.eval_ctx = self.eval_ctx
        context.blocks.update(self.blocks)
        return context


@dataclass
class RenderedModule:
    name: str
    target: TargetName
    files: dict[str, str]       # output file name -> text, in a fixed order
    context: dict[str, Any] = field(repr=False)
    templates: dict[str, str] = field(default_factory=dict)  # output file name -> template name


#: How render_module takes the settings whose field is a tuple made from a config mapping or list:
#: the type its keyword accepts (text, as RenderKeywords spells it) and the conversion to the
#: field's value. Every other ModuleOptions field is its own keyword's type.
_KEYWORD_FORMS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "tensor_types": ("Sequence[Sequence[Any]]", lambda given: tuple((int(r), _element(e)) for r, e in given)),
    "target_options": ("Mapping[str, str | bool | int]", lambda given: tuple(dict(given).items())),
    "templates": ("Sequence[str | os.PathLike[str]]", lambda given: tuple(os.fspath(t) for t in given)),
}


def render_keyword_fields() -> tuple[dataclasses.Field[Any], ...]:
    """render_module's keyword settings: every ModuleOptions field (ModuleSettings' and render's
    own) but ``name`` and ``target``, which are its ``module_name`` and ``target`` arguments."""
    return tuple(f for f in dataclasses.fields(ModuleOptions) if f.name not in ("name", "target"))


def _bare_annotation(text: str) -> str:
    """A field's annotation text without its ``Annotated[...]`` config key (``Annotated[X, Key(...)]``: X)."""
    if not text.startswith("Annotated["):
        return text
    depth = 0
    for i, ch in enumerate(text[len("Annotated["):], len("Annotated[")):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            return text[len("Annotated["):i]
    raise ValueError(f"not an Annotated type: {text}")


def _keyword_options(module_name: str, target: TargetName, settings: Mapping[str, Any]) -> ModuleOptions:
    """The ModuleOptions render_module's keyword arguments make (a keyword that is no setting is a
    TypeError, as Python's own)."""
    check_keywords(settings, [f.name for f in render_keyword_fields()], "render_module")
    values = {key: _KEYWORD_FORMS[key][1](given) if key in _KEYWORD_FORMS else given for key, given in settings.items()}
    return ModuleOptions(name=module_name, target=target, **values)


class RenderKeywords(TypedDict, total=False):
    """render_module's keyword arguments, for type checkers (``Unpack``): the lines between the
    markers are written from ModuleOptions' fields (render_keyword_fields, each typed as declared or
    as _KEYWORD_FORMS accepts it) by scripts/generate_settings.py, and a test fails while they differ."""

    # BEGIN generated from ModuleOptions
    target_options: Mapping[str, str | bool | int]
    tensor_types: Sequence[Sequence[Any]]
    logging: bool
    torch_library: str | None
    arena_bytes: int
    layout: Layout
    versioned_from: str | None
    config: str | None
    templates: Sequence[str | os.PathLike[str]]
    standalone: bool
    package: str | None
    # END generated from ModuleOptions


def render_keyword_annotation(f: dataclasses.Field[Any]) -> str:
    """The type render_module's keyword ``f`` accepts, as text."""
    return _KEYWORD_FORMS[f.name][0] if f.name in _KEYWORD_FORMS else _bare_annotation(str(f.type))


def with_render_keywords(text: str) -> str:
    """``text`` (this module's source) with RenderKeywords' fields written from ModuleOptions."""
    return with_generated_lines(text, "ModuleOptions",
                                ((f.name, render_keyword_annotation(f)) for f in render_keyword_fields()))


def render_module(decls: Sequence[FunctionDecl] | Sequence[Binding], module_name: str = "m", target: TargetName = "ks",
                  *, bindings: Sequence[BindingSpec] | None = None, options: ModuleOptions | None = None,
                  filters: dict[str, Callable[..., Any]] | None = None,
                  **settings: Unpack[RenderKeywords]) -> RenderedModule:
    """Render the C++ and stub files of one module.

    ``decls`` are FunctionDecls (bound by ``bindings`` specs, or every base
    function when None) or already-resolved Bindings. The module is ``options``,
    or made from ``module_name``, ``target`` and the keyword settings
    (ModuleOptions' fields but ``name`` and ``target``: ``tensor_types``, ``logging``,
    ``arena_bytes``, ``layout``... as the config keys of their names, docs/config.md); ``templates``
    are override directories, searched before the target's own templates and the built-ins.
    """
    if options is None:
        options = _keyword_options(module_name, target, settings)
    elif settings:
        raise TypeError(f"render_module() takes options= or the module's settings, not both "
                        f"(got {', '.join(sorted(settings))} too)")
    for d in options.templates:
        if not os.path.isdir(d):
            raise TemplateError("template override directory not found", Location(d))
        note_tree(d)  # before rendering: an override added or edited later rebuilds (ksbind/inputs.py)
    resolved: list[Binding]
    if decls and isinstance(decls[0], Binding):
        resolved = cast("list[Binding]", list(decls))
    else:
        resolved = select_bindings(cast("list[FunctionDecl]", list(decls)), bindings)
    ctx = build_context(resolved, options)
    record = get_target(options.target)
    # An out-of-tree target's own templates (ksbind's own targets' are among the built-ins)
    own = record.templates
    outside = os.fspath(own) if own is not None and own not in BUILTIN_FOLDERS else None
    if outside is not None:
        note_tree(outside)  # an out-of-tree target's templates: inputs as an override's are
    env = environment(options.templates, tuple(sorted((filters or {}).items())), outside)
    plan = record.file_plan(options.layout)
    searched = (*options.templates, *([outside] if outside is not None else []))  # before the built-ins
    files: dict[str, str] = {}
    used: dict[str, str] = {}
    for template_out, name in sorted(plan.items(), key=lambda item: item[0].replace("{module}", options.name)):
        out = template_out.replace("{module}", options.name)
        origin = template_origin(name, searched)
        file_ctx = dict(ctx, stamp_cpp=stamp(options, "//", name, origin),
                        stamp_py=stamp(options, "#", name, origin))
        files[out] = render_template(env, name, file_ctx, searched)
        used[out] = name
    return RenderedModule(options.name, options.target, files, ctx, used)


# help() and inspect show every keyword argument (with the type it accepts), not **settings.
render_module.__signature__ = keyword_signature(  # type: ignore[attr-defined]
    render_module, render_keyword_fields(), typing.get_type_hints(RenderKeywords))


def _element(e: object) -> TensorElement:
    """A ``tensor_types`` element given to render_module, checked as the config's are."""
    element = pick(str(e), TENSOR_ELEMENTS)
    if element is None:
        raise ConfigError(f"unknown tensor element {str(e)!r}{closest(str(e), TENSOR_ELEMENTS)}; expected one of "
                          f"{', '.join(TENSOR_ELEMENTS)}")
    return element


def template_origin(name: str, overrides: Sequence[str]) -> str | None:
    """The override directory a template name resolves to, or None for the built-in."""
    for d in overrides:
        if os.path.isfile(os.path.join(d, *name.split("/"))):
            return d
    return None


def stamp(options: ModuleOptions, comment: str, template: str = "", origin: str | None = None) -> str:
    """The first line of every generated file: what made it and from what.

    Paths appear as given (the pipeline gives them relative to the directory
    ksbind runs in), so run ksbind from one place, e.g. the repository root,
    for byte-identical output.
    """
    source = f"{options.config} (module {options.name})" if options.config else \
        f"the Python API (module {options.name})"
    if template:
        templates = f"template {template} " + (f"from {_shown(origin)}" if origin else "(built-in)")
    else:
        templates = "templates from " + ", ".join(map(_shown, options.templates)) \
            if options.templates else "built-in templates"
    line = (f"{comment} Generated by ksbind {__version__} from {source} with {templates}. "
            f"Do not edit: regenerate instead.")
    # Paths come from the user's file system: escape control characters (a newline in a
    # config's file name would otherwise end the comment and inject code).
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in line) + "\n"


def _shown(path: str) -> str:
    return path.replace(os.sep, "/").rstrip("/") + "/"


def render_template(env: jinja2.Environment, name: str, ctx: dict[str, Any],
                    overrides: Sequence[str] = ()) -> str:
    """Render one template; every failure becomes a TemplateError at the template's file and line."""
    try:
        return env.get_template(name).render(ctx)
    except jinja2.TemplateNotFound as e:
        where = _template_frame(e, name, overrides)
        raise TemplateError(f"template {e.name!r} not found in {_search_path(overrides)}"
                            f"{_origin(where.file, overrides)}", where) from None
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"template syntax error: {e.message}{_origin(e.filename, overrides)}",
                            Location(e.filename or e.name or name, e.lineno)) from None
    except jinja2.UndefinedError as e:
        where = _template_frame(e, name, overrides)
        raise TemplateError(f"undefined value in template: {e.message}{_origin(where.file, overrides)}",
                            where) from None
    except TemplateError:
        raise
    except KsbindError as e:  # raised by a filter the template called: report it at the template's line
        where = _template_frame(e, name, overrides)
        raise TemplateError(f"template failed: {e}{_origin(where.file, overrides)}", where) from None
    except Exception as e:  # a template's own error (e.g. a filter given a bad value)
        where = _template_frame(e, name, overrides)
        raise TemplateError(f"template failed: {type(e).__name__}: {e}{_origin(where.file, overrides)}",
                            where) from None


def _search_path(overrides: Sequence[str]) -> str:
    return ", ".join([*overrides, "the built-in templates"])


def _origin(filename: str | None, overrides: Sequence[str]) -> str:
    if not filename:
        return ""
    for d in overrides:
        if _inside(filename, d):
            return f" (from override directory {d})"
    return " (built-in template)" if any(_inside(filename, str(d)) for d in BUILTIN_FOLDERS) else ""


def _inside(filename: str, folder: str) -> bool:
    return os.path.abspath(filename).startswith(os.path.abspath(folder) + os.sep)


def _template_frame(exc: BaseException, fallback: str, overrides: Sequence[str] = ()) -> Location:
    """The innermost template file and line in an exception's traceback.

    Jinja2 rewrites tracebacks so template code shows as the template's file
    and line; any frame in an override directory or the built-ins is one.
    """
    found = Location(fallback)
    folders = [*overrides, *(str(d) for d in BUILTIN_FOLDERS)]
    for frame in traceback.extract_tb(exc.__traceback__ or sys.exc_info()[2]):
        if any(_inside(frame.filename, d) for d in folders):
            found = Location(frame.filename, frame.lineno)
    return found
