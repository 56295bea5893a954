"""A config's ``python:`` entries: Python functions compiled through ksc like a module's ``.ks``.

Each entry's function is loaded (a ``.py`` file run as a script's module would
be, or an importable module), translated at its signature by the front end
(``ksbind.frontend``, as ``ksbind.compile`` does at run time), and bound under
one binding (and its vjp). All the entries' ks becomes one source, written by
content under the build cache (or a wheel's work folder) beside load_ks's
texts; resolve.py hands it to the ksc step with the module's own ``.ks``
sources. Every file a translation read is noted (ksbind/inputs.py), so a
no-op build notices an edit (docs/frontend.md#in-a-config).
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ksbind.cache.layout import LOAD_KS_DIR
from ksbind.errors import ConfigError, Location, closest
from ksbind.fileio import write_atomic
from ksbind.frontend.program import Translation, translate_program
from ksbind.frontend.signature import Signature
from ksbind.inputs import note_file, read_bytes
from ksbind.lang.sexpr import SList, parse_sexprs
from ksbind.lang.types import FLOAT, TensorType
from ksbind.spec import BindingSpec, Mode, ModuleSpec, PythonFunctionSpec

#: sys.path and sys.modules change while a file's module runs: one at a time (batch builds resolve in threads).
_IMPORT_LOCK = threading.Lock()
#: The front end's zip helpers (ksbind/frontend/program.py), numbered per translation, and here per entry too.
_HELPER = re.compile(r"\bksb_(ew|zip|sumzip)(\d+)\b")
_ANY_HELPER = re.compile(r"\bksb_(?:ew|zip|sumzip)\d+(?:_\d+)?\b")


def with_python(spec: ModuleSpec, root: Path) -> ModuleSpec:
    """``spec`` with its ``python:`` entries as one more ks source (written under ``root``) and their bindings
    ahead of ``bindings:``'s."""
    if not spec.python:
        return spec
    if spec.ksc is None:
        raise ConfigError("'python' needs 'ksc:': ksc compiles the translated functions", spec.location)
    modules: dict[str, ModuleType] = {}
    translated: list[tuple[PythonFunctionSpec, Translation]] = []
    for entry in spec.python:
        fn = load_function(entry, spec.config_path.parent, modules)
        translation = translate_program(fn, Signature(_params(entry, fn), entry.mode))  # a FrontendError: in the .py
        for f in translation.files:
            note_file(f)  # a callee's file: an edit there changes the text
        translated.append((entry, translation))
    text = merged_text(spec.name, translated)
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    source = root / LOAD_KS_DIR / digest / f"{spec.name}_python.ks"
    if not source.is_file() or source.read_text(encoding="utf-8", errors="surrogateescape") != text:
        write_atomic(source, text)
    bindings = tuple(binding_of(e, t) for e, t in translated)
    return dataclasses.replace(spec, ks_files=(*spec.ks_files, source), bindings=(*bindings, *(spec.bindings or ())),
                               python=())


def load_function(entry: PythonFunctionSpec, base: Path, modules: dict[str, ModuleType]) -> Callable[..., Any]:
    """The entry's function: its file's module run afresh (once per resolution), or its module imported."""
    ref = entry.function
    key = str(ref.file) if ref.file is not None else f"module:{ref.module}"
    module = modules.get(key)
    if module is None:
        module = modules[key] = _run_file(ref.file, entry) if ref.file is not None else _import(str(ref.module), base,
                                                                                                 entry)
    fn = getattr(module, ref.attribute, None)
    where = str(ref.file) if ref.file is not None else f"module {ref.module}"
    if fn is None:
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise ConfigError(f"{where} defines no {ref.attribute!r}{closest(ref.attribute, names)}", entry.location)
    if not callable(fn):
        raise ConfigError(f"{where}: {ref.attribute!r} is a {type(fn).__name__}, not a function", entry.location)
    return fn  # type: ignore[no-any-return]


def _run_file(path: Path, entry: PythonFunctionSpec) -> ModuleType:
    """A ``.py`` file's module, run now under a name of its own (never a stale copy from sys.modules)."""
    try:
        read_bytes(path)  # noted as read (the run reads it again): an edit after this is a change next time
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}", entry.location) from None
    name = f"_ksbind_python_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}_" \
           f"{hashlib.sha256(str(path).encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    folder = str(path.parent)
    with _IMPORT_LOCK:
        sys.path.insert(0, folder)  # as `python file.py` would: its neighbours import
        sys.modules[name] = module  # what dataclasses, typing and inspect look a module up by
        try:
            module_spec.loader.exec_module(module)
        except SyntaxError as e:
            sys.modules.pop(name, None)
            raise ConfigError(f"{entry.function.text}: the file does not parse: {e.msg}",
                              Location(e.filename or str(path), e.lineno or 0, e.offset or 0)) from None
        except Exception as e:
            sys.modules.pop(name, None)
            raise ConfigError(f"{entry.function.text}: running {path.name} failed: {type(e).__name__}: {e}",
                              entry.location) from None
        finally:
            _remove_first(sys.path, folder)
    return module


def _import(name: str, base: Path, entry: PythonFunctionSpec) -> ModuleType:
    folder = str(base)
    with _IMPORT_LOCK:
        sys.path.insert(0, folder)  # a module next to the config imports too
        try:
            module = importlib.import_module(name)
        except Exception as e:
            raise ConfigError(f"{entry.function.text}: cannot import {name}: {type(e).__name__}: {e}",
                              entry.location) from None
        finally:
            _remove_first(sys.path, folder)
    file = getattr(module, "__file__", None)
    if file:
        note_file(file)
    return module


def _remove_first(items: list[str], value: str) -> None:
    if value in items:
        items.remove(value)


def _params(entry: PythonFunctionSpec, fn: Callable[..., Any]) -> tuple[Any, ...]:
    """The signature's parameter types: ``args``, or for elementwise a Float per parameter; checked against
    the function's parameter count."""
    try:
        count: int | None = len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        count = None
    what = entry.function.text
    if entry.args is None:  # elementwise (config.py requires args otherwise)
        if count is None or not 1 <= count <= 2:
            raise ConfigError(f"{what}: mode elementwise compiles a function of one or two floats; this one takes "
                              f"{count if count is not None else 'an unknown number of'} parameters", entry.location)
        return (FLOAT,) * count
    if count is not None and count != len(entry.args):
        raise ConfigError(f"{what} takes {count} parameter{'s' * (count != 1)}; 'args' gives "
                          f"{len(entry.args)} type{'s' * (len(entry.args) != 1)}", entry.location)
    return entry.args


def binding_of(entry: PythonFunctionSpec, t: Translation) -> BindingSpec:
    """The entry's binding: named as the config says (default: the function's name), its vjp NAME_vjp when
    the function has one (``vjp: false``: none), ksc's rev for a function with a loop; its jvp when named."""
    name = entry.name or entry.function.attribute
    if entry.vjp is False:
        vjp = None
    elif entry.vjp is None:
        vjp = f"{name}_vjp" if t.differentiable else None
    else:
        if not t.differentiable:
            raise ConfigError(f"{entry.function.text} has no vjp to bind as {entry.vjp!r}: it takes or returns no "
                              f"Float ({t.entry} returns {t.result_type})", entry.location)
        vjp = entry.vjp
    if entry.jvp is not None and not t.differentiable:
        raise ConfigError(f"{entry.function.text} has no jvp to bind as {entry.jvp!r}: it takes or returns no "
                          f"Float ({t.entry} returns {t.result_type})", entry.location)
    return BindingSpec(name, function=str(t.entry), vjp=vjp, mode=binding_mode(t.signature),
                       vjp_from="rev" if t.folds and vjp else "auto", location=entry.location, jvp=entry.jvp)


def binding_mode(signature: Signature) -> Mode:
    """As ksbind.compile binds it: a scalar function mapped over a 1-d axis is applied to every element."""
    if signature.mode == "vmap" and not any(isinstance(p, TensorType) for p in signature.params):
        return "elementwise"
    return signature.mode


def merged_text(module: str, translated: Sequence[tuple[PythonFunctionSpec, Translation]]) -> str:
    """The entries' ks as one text: each function's defs once (two entries calling one function share its
    def, and each gdef of it), the zip helpers of each entry its own (renamed ``ksb_ew1_2``...). Two
    different defs of one name at the same types (two Python functions of one name) are a ConfigError."""
    forms: list[str] = []
    seen: dict[tuple[str, str], tuple[str, PythonFunctionSpec]] = {}
    for i, (entry, t) in enumerate(translated):
        text = t.ks_text if i == 0 else _HELPER.sub(rf"ksb_\1\2_{i}", t.ks_text)
        for form in re.split(r"\n\n(?=\()", text.strip()):
            key = _def_key(form)
            if key is None and not _ANY_HELPER.search(form):
                if form not in forms:  # a gdef of a def both entries share (a select kernel's): once
                    forms.append(form)
                continue
            if key is None or _ANY_HELPER.search(key[0]):
                forms.append(form)  # a helper (or its gdef): this entry's own
                continue
            normal = _ANY_HELPER.sub("ksb_helper", form)
            if key in seen:
                if seen[key][0] != normal:
                    raise ConfigError(f"{entry.function.text} and {seen[key][1].function.text} both translate to "
                                      f"a ks def {key[0]} at the same types, with different bodies "
                                      "(two Python functions of one name): rename one", entry.location)
                continue
            seen[key] = (normal, entry)
            forms.append(form)
    header = f"; ks of module {module}'s python: entries, translated by ksbind (edit the Python, not this)"
    return header + "\n\n" + "\n\n".join(forms) + "\n"


def _def_key(form: str) -> tuple[str, str] | None:
    """A def's name and parameters (what ks names a def by), or None for another form."""
    nodes = parse_sexprs(form)
    if len(nodes) != 1 or not isinstance(nodes[0], SList) or len(nodes[0].items) < 4:
        return None
    head, name, _, params = nodes[0].items[:4]
    if str(head) != "def":
        return None
    return str(name), str(params)


__all__ = ["with_python", "load_function", "binding_of", "binding_mode", "merged_text"]
