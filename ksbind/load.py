"""``load_ks``: ks source text to an imported module in one call (for notebooks).

The text is saved, by content, under the build cache, ksc compiles it (with
the runtime's prelude) and the module is built like any config's, so a second
call with the same text and options reuses everything: ksc does not run and
nothing is compiled.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

from ksbind.cache.layout import LOAD_KS_DIR, cache_fault, cache_root, check_root
from ksbind.config import BINDING_KEYS
from ksbind.errors import ConfigError, Location, closest, show_file_as
from ksbind.fileio import write_atomic
from ksbind.lang.identifiers import identifier_problem
from ksbind.settings import Setting, keyword_signature, pick, settings_of, with_generated_lines, with_options
from ksbind.spec import DEFAULT_ARENA_BYTES, BindingSpec, KscSpec, ModuleSpec, RuntimeSpec, TargetName
from ksbind.targets.registry import get_target

if sys.version_info >= (3, 11):
    from typing import Unpack
elif TYPE_CHECKING:  # 3.10: for type checkers only (typing.get_type_hints of the function then fails)
    from typing_extensions import Unpack

#: What messages call the text given to load_ks.
LOAD_KS_TEXT = "<load_ks text>"

#: A binding as load_ks takes it: a function name (bound under itself), a mapping with
#: a config binding's keys (name, function, vjp, mode, vjp_from, ...), or a BindingSpec.
BindingArg = str | Mapping[str, str | bool | Sequence[str]] | BindingSpec


@dataclass(frozen=True)
class LoadOptions:
    """load_ks's options; each is also a keyword argument of load_ks (see its docstring)."""

    target: TargetName = "python"
    name: str | None = None
    ksc: str | os.PathLike[str] | KscSpec | None = None
    ksc_runtime: str | os.PathLike[str] | None = None
    cpp: Sequence[str | os.PathLike[str]] = ()
    arena_bytes: int = DEFAULT_ARENA_BYTES
    torch_library: str | None = None
    fast_math: bool = False
    cache_dir: str | os.PathLike[str] | None = None
    stubs: str | os.PathLike[str] | None = None
    quiet: bool = False
    debug: bool = False


class LoadKeywords(TypedDict, total=False):
    """LoadOptions' fields as load_ks's keyword arguments, for type checkers (``Unpack``): the lines
    between the markers are written from LoadOptions by scripts/generate_settings.py, and a test
    fails while they differ."""

    # BEGIN generated from LoadOptions
    target: TargetName
    name: str | None
    ksc: str | os.PathLike[str] | KscSpec | None
    ksc_runtime: str | os.PathLike[str] | None
    cpp: Sequence[str | os.PathLike[str]]
    arena_bytes: int
    torch_library: str | None
    fast_math: bool
    cache_dir: str | os.PathLike[str] | None
    stubs: str | os.PathLike[str] | None
    quiet: bool
    debug: bool
    # END generated from LoadOptions


def with_load_keywords(text: str) -> str:
    """``text`` (this module's source) with LoadKeywords' fields written from LoadOptions."""
    return with_generated_lines(text, "LoadOptions", ((f.name, str(f.type)) for f in dataclasses.fields(LoadOptions)))


def load_ks(ks_text: str, bindings: Sequence[BindingArg] | None = None, *, options: LoadOptions | None = None,
            **keywords: Unpack[LoadKeywords]) -> ModuleType:
    """Compile ks source with ksc, bind it and import the module (cached like ``build``).

    ``bindings`` None binds every function the text declares (its vjp as NAME_vjp
    where the text gdefs sufrev or rev). ``target``: ``python`` (the default:
    floats, ints and nested lists), ``torch`` (torch.Tensor, autograd from the
    vjps) or ``ks``. ``ksc``: the ksc binary (default $KSC, then ``ksc`` on
    PATH); ``ksc_runtime``: its runtime folder (default $KSC_RUNTIME, then
    ``runtime/`` beside ksc's ``bin/``). ``fast_math``, ``debug`` (bounds checks
    on, ``-O0 -g``) and ``stubs`` (a folder to write NAME.pyi into, for type
    checkers: give ``name`` too): as the config keys (docs/config.md). Errors
    about the text are located in it (``<load_ks text>:LINE:COL``). Progress is
    logged as ``build``'s is; ``quiet=True`` drops this call's. The keyword
    arguments may come as one ``options`` record (LoadOptions), which they override.
    """
    o = with_options(LoadOptions, options, keywords, "load_ks")
    return _load(ks_text, bindings, o)


def _load(ks_text: str, bindings: Sequence[BindingArg] | None, o: LoadOptions) -> ModuleType:
    from ksbind.pipeline import build_spec

    get_target(o.target)  # an unknown target is a ConfigError naming the known ones
    root = Path(o.cache_dir) if o.cache_dir is not None else cache_root()
    digest = hashlib.sha256(ks_text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    module_name = o.name or f"ks_{digest}"
    problem = identifier_problem(module_name)
    if problem:
        raise ConfigError(f"module name {problem}")
    source = root / LOAD_KS_DIR / digest / f"{module_name}.ks"
    check_root(root)
    try:
        if not source.is_file() or source.read_text(encoding="utf-8", errors="surrogateescape") != ks_text:
            write_atomic(source, ks_text)
    except OSError as e:  # a full, read-only or misplaced cache: one line, as build's
        fault = cache_fault(e, root)
        if fault is None:
            raise
        raise fault from None
    # The file holds exactly this text (it is named by its content): messages call it what the user wrote.
    show_file_as(str(source), LOAD_KS_TEXT)
    spec = ModuleSpec(
        name=module_name, config_path=source, target=o.target, ks_files=(source,),
        cpp=tuple(Path(c).resolve() for c in o.cpp), runtime=RuntimeSpec(bundled=False, from_ksc=True),
        bindings=None if bindings is None else tuple(_binding(b) for b in bindings),
        torch_library=o.torch_library, arena_bytes=o.arena_bytes, output=source.parent / "generated",
        fast_math=o.fast_math, debug=o.debug, ksc=_ksc_spec(o.ksc, o.ksc_runtime), location=Location(str(source)),
        stubs=Path(o.stubs).resolve() if o.stubs is not None else None)
    return build_spec(spec, cache_dir=root, quiet=o.quiet)


# help() and inspect show every keyword argument (LoadOptions' fields), not **keywords.
load_ks.__signature__ = keyword_signature(  # type: ignore[attr-defined]
    load_ks, dataclasses.fields(LoadOptions), typing.get_type_hints(LoadOptions))


def _ksc_spec(ksc: str | os.PathLike[str] | KscSpec | None, runtime: str | os.PathLike[str] | None) -> KscSpec:
    if isinstance(ksc, KscSpec):
        return ksc
    # set_by: a missing ksc is then "pass ksc= to load_ks", not "set ksc: in the config" (there is none)
    return KscSpec(Path(ksc) if ksc is not None else None, Path(runtime) if runtime is not None else None,
                   set_by="load_ks")


def _binding(b: BindingArg) -> BindingSpec:
    if isinstance(b, BindingSpec):
        return b
    if isinstance(b, str):
        return BindingSpec(b)
    unknown = [k for k in b if k not in BINDING_KEYS]
    if unknown:
        key = str(unknown[0])
        raise ConfigError(f"unknown key {key!r} in binding {dict(b)!r}{closest(key, BINDING_KEYS)}; a binding's "
                          f"keys are {', '.join(BINDING_KEYS)}")
    if "name" not in b:
        raise ConfigError(f"a binding is a name or a mapping with 'name' and optionally "
                          f"{', '.join(k for k in BINDING_KEYS if k != 'name')}; found {dict(b)!r}")
    # Each key as the settings model types it (ksbind/spec.py): a choice one of its values, a flag a bool.
    values: dict[str, Any] = {}
    bad = []
    for s in settings_of(BindingSpec):
        if s.key not in b:
            continue
        value: object = b[s.key]
        if s.spec.form == "choice":
            value = pick(value, s.choices)
        if s.spec.form == "names":  # a name, or a list of names (as a config's)
            value = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else value
            ok = isinstance(value, tuple) and all(isinstance(x, str) and identifier_problem(x) is None for x in value)
            if not ok:
                bad.append(f"{s.key} must be {_expected(s)}")
            values[s.field] = value
            continue
        ok = isinstance(value, bool) if s.spec.form == "flag" else isinstance(value, str) or (
            value is None and s.spec.form == "text" and s.default is None)  # None: the default
        if not ok:
            bad.append(f"{s.key} must be {_expected(s)}")
        values[s.field] = value
    if bad:
        raise ConfigError(f"a binding's {', '.join(bad)}; found {dict(b)!r}")
    return BindingSpec(**values)


def _expected(s: Setting) -> str:
    if s.spec.form == "choice":
        return "one of " + ", ".join(s.choices)
    if s.spec.form == "names":
        return "an identifier or a list of identifiers"
    return "true or false" if s.spec.form == "flag" else "a string"


__all__ = ["load_ks", "LoadOptions", "LoadKeywords"]
