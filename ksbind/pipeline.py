"""The whole pipeline for configs: (ksc ->) read -> select -> render -> write.

Every module of every config is rendered in memory first; only then is
anything written, so bad input leaves the disk untouched.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ksbind import log, session
from ksbind.backend.build import build_module, prepare_build, schedule
from ksbind.backend.loader import needs_version, note_loaded, versioned_spec
from ksbind.backend.missing import explain_missing
from ksbind.batch import build_many
from ksbind.cache.layout import cache_fault, cache_root, check_root
from ksbind.codegen.output import (
    PlannedFile,
    plan_files,
    write_planned,
)
from ksbind.codegen.render import RenderedModule, render_module
from ksbind.config import load_config, select_module
from ksbind.errors import BuildError, ConfigError, Location, OutputError
from ksbind.inputs import refuse
from ksbind.lang.sexpr import gc_paused
from ksbind.resolve import ResolvedModule, resolve_spec
from ksbind.spec import ModuleOptions, ModuleSettings, ModuleSpec

ConfigArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


_sys_path_lock = threading.RLock()


@dataclass
class GeneratedModule:
    spec: ModuleSpec
    rendered: RenderedModule
    out_dir: Path
    planned: list[PlannedFile]


def module_options(spec: ModuleSpec, extra_templates: Sequence[str] = (), *, standalone: bool = False,
                   package: str | None = None) -> ModuleOptions:
    """What render takes of a module: its settings as the config gave them (every ModuleSettings
    field), and those made here (the config's path as shown, the template folders with the command
    line's first, where a wheel puts it)."""
    return ModuleOptions(
        **{f.name: getattr(spec, f.name) for f in dataclasses.fields(ModuleSettings)},
        config=os.path.relpath(spec.config_path) if spec.config_path.is_absolute() else str(spec.config_path),
        templates=tuple(extra_templates) + tuple(os.fspath(t) for t in spec.templates),
        standalone=standalone, package=package,
    )


def load_filters(spec: ModuleSpec) -> dict[str, Callable[..., Any]]:
    """Filters a config's ``filters:`` module adds (its FILTERS dict)."""
    if not spec.filters:
        return {}
    refuse("its config names a filters module (whose own imports no record can follow)")
    local = spec.config_path.parent / (spec.filters.replace(".", os.sep) + ".py")
    with _sys_path_lock:  # modules of a batch render in threads: one sys.path change at a time
        return _import_filters(spec, local)


def _import_filters(spec: ModuleSpec, local: Path) -> dict[str, Callable[..., Any]]:
    import importlib.util
    sys.path.insert(0, str(spec.config_path.parent))
    try:
        if local.is_file():
            # Loaded from the file each time (not sys.modules), so two configs'
            # same-named filter modules, or an edited one, are never confused.
            module_spec = importlib.util.spec_from_file_location(f"_ksbind_filters_{spec.name}", local)
            assert module_spec is not None and module_spec.loader is not None
            mod = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(str(spec.filters))
    except Exception as e:
        raise ConfigError(f"cannot import filters module {spec.filters!r}: {type(e).__name__}: {e}",
                          spec.location) from None
    finally:
        sys.path.pop(0)
    filters = getattr(mod, "FILTERS", None)
    if not isinstance(filters, dict) or not all(callable(f) for f in filters.values()):
        raise ConfigError(f"filters module {spec.filters!r} must define FILTERS = {{name: function}}",
                          spec.location)
    return filters


def render_spec(spec: ModuleSpec | ResolvedModule, extra_templates: Sequence[str] = (), *,
                standalone: bool = False, package: str | None = None) -> RenderedModule:
    """Render a module (resolving it first: reading its files, running ksc if it names it).
    ``standalone``/``package``: for a wheel (see ModuleOptions)."""
    with gc_paused():  # reading and rendering build many short-lived objects; see sexpr.gc_paused
        resolved = spec if isinstance(spec, ResolvedModule) else resolve_spec(spec)
        options = module_options(resolved.spec, extra_templates, standalone=standalone, package=package)
        return render_module(resolved.bindings, options=options,
                             filters=load_filters(resolved.spec))


def _config_list(configs: ConfigArg) -> list[Path]:
    if isinstance(configs, (str, os.PathLike)):
        return [Path(configs)]
    return [Path(c) for c in configs]


def prepare(configs: ConfigArg, out_dir: str | os.PathLike[str] | None = None,
            templates: Sequence[str] = ()) -> list[GeneratedModule]:
    """Render every module of every config in memory (nothing is written)."""
    modules: list[GeneratedModule] = []
    targets: dict[Path, str] = {}
    for config in _config_list(configs):
        for spec in load_config(config):
            rendered = render_spec(spec, templates)
            where = Path(out_dir) / spec.name if out_dir is not None else spec.output
            key = where.resolve()
            if key in targets:
                raise ConfigError(f"module {spec.name!r} would write to {where}, as module {targets[key]!r} "
                                  "does; give each module its own 'output'", spec.location)
            targets[key] = spec.name
            _check_output_folder(where)
            planned = plan_files(where, rendered.files)
            if spec.stubs is not None:  # `stubs: DIR`: the stub where type checkers look too
                _check_output_folder(spec.stubs)
                planned += plan_files(spec.stubs, stub_files(spec, rendered))
            modules.append(GeneratedModule(spec, rendered, where, planned))
    return modules


def stub_files(spec: ModuleSpec, rendered: RenderedModule) -> dict[str, str]:
    """The module's stub, ``{NAME.pyi: text}`` (empty if a template override dropped it)."""
    name = f"{spec.name}.pyi"
    return {name: rendered.files[name]} if name in rendered.files else {}


def write_stubs(configs: ConfigArg, out_dir: str | os.PathLike[str], templates: Sequence[str] = ()) -> list[Path]:
    """``ksbind stubs``: every module's NAME.pyi in ``out_dir`` (only files that changed
    are rewritten); nothing is compiled. Returns the stubs' paths."""
    planned: list[PlannedFile] = []
    for config in _config_list(configs):
        for spec in load_config(config):
            files = stub_files(spec, render_spec(spec, templates))
            if not files:
                raise OutputError(f"module {spec.name!r} renders no {spec.name}.pyi (a template override "
                                  "without the stub?)", spec.location)
            planned += plan_files(Path(out_dir), files)
    _check_output_folder(Path(out_dir))
    write_planned(planned)
    return [p.path for p in planned]


def _check_output_folder(where: Path) -> None:
    """Fail before anything is written when the output folder (or a folder above it) is a file."""
    for folder in (where, *where.parents):
        if folder.exists():
            if not folder.is_dir():
                raise OutputError("output folder is a file", Location(str(folder)))
            return


def generate(configs: ConfigArg, out_dir: str | os.PathLike[str] | None = None,
             templates: Sequence[str] = ()) -> list[Path]:
    """Generate every module of every config; returns the paths of all generated files.

    Files whose content is unchanged are not rewritten (so builds stay cached).
    """
    modules = prepare(configs, out_dir, templates)
    for m in modules:
        write_planned(m.planned)
    return [p.path for m in modules for p in m.planned]


def stale_files(configs: ConfigArg, out_dir: str | os.PathLike[str] | None = None,
                templates: Sequence[str] = ()) -> list[Path]:
    """Generated files that are missing or differ from what generate would write."""
    return [p.path for m in prepare(configs, out_dir, templates) for p in m.planned if not p.is_current]


def full_build(config_or_spec: str | os.PathLike[str] | ModuleSpec, *, name: str | None = None,
               templates: Sequence[str] = (), cache_dir: str | os.PathLike[str] | None = None,
               quiet: bool = False) -> ModuleType:
    """A build that resolves, renders and hands the module to the backend (which may still
    reuse cached objects and the cached module): what the public ``ksbind.build``
    (ksbind/build_api.py) runs when its no-op record does not describe the module as it is.
    Arguments as ``ksbind.build``'s."""
    if isinstance(config_or_spec, ModuleSpec):
        spec = config_or_spec
    else:
        spec = select_module(config_or_spec, name, "pass name=... or use build_configs()", BuildError)
    return build_spec(spec, templates=templates, cache_dir=cache_dir, quiet=quiet)


def build_configs(configs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                  templates: Sequence[str] = (), cache_dir: str | os.PathLike[str] | None = None,
                  quiet: bool = False) -> list[tuple[str, ModuleType]]:
    """Build every module of every config (``ksbind build``): every config is
    read first (a bad one fails before anything is built), then the modules
    are built concurrently, sharing KSBIND_JOBS compiler processes
    (ksbind/batch.py), with a ``[k/N]`` line as each one finishes. Returns
    ``[(name, module)]`` in the configs' order. When some modules fail, the
    others are still built, and then a ``BatchBuildError`` lists each failure
    with its config's file and line (its ``built`` holds the others); a single
    module's failure is raised as it is."""
    paths = [configs] if isinstance(configs, (str, os.PathLike)) else list(configs)
    specs = [s for p in paths for s in load_config(p)]
    log.setup()  # once, before the build threads start
    with session.changed(quiet=quiet or session.current().quiet):  # the threads' contexts are copies of this one
        modules = build_many(specs, lambda s: build_spec(s, templates=templates, cache_dir=cache_dir, quiet=quiet))
    return [(s.name, m) for s, m in zip(specs, modules)]


def build_spec(spec: ModuleSpec, *, templates: Sequence[str] = (),
               cache_dir: str | os.PathLike[str] | None = None, quiet: bool = False) -> ModuleType:
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    check_root(root)
    log.setup()
    # The work the build kind overlaps with ksc's run and the compiles (torch's import), declared.
    token = session.enter(quiet=quiet or session.current().quiet, schedule=schedule(spec))
    try:
        resolved = resolve_spec(spec, root)  # runs ksc (cached) when the config names it
        try:
            return _build_resolved(resolved, templates, root)
        except BuildError as e:
            raise explain_missing(e, resolved.decls) from None
    except OSError as e:  # a full, read-only or misplaced cache: one line, not a traceback
        fault = cache_fault(e, root)
        if fault is None:
            raise
        raise fault from None
    finally:
        session.leave(token)


def _build_resolved(resolved: ResolvedModule, templates: Sequence[str], root: Path) -> ModuleType:
    """Build and load one resolved module; under a versioned name when this process
    already loaded other code under its name (see ksbind.backend.loader)."""
    spec = resolved.spec
    rendered = render_spec(resolved, templates)
    if spec.stubs is not None:  # `stubs: DIR`, under the name users import
        write_planned(plan_files(spec.stubs, stub_files(spec, rendered)))
    prepared = prepare_build(spec, rendered)  # the backend's build for the module's target
    if needs_version(spec.name, prepared.key):
        refuse(f"this process loaded another build of {spec.name} (this one is loaded under a versioned name)")
        # The name is in the generated code: rendered once more, under the versioned name (which
        # the first build's key makes unique, so it never needs a version itself).
        versioned = versioned_spec(spec, prepared.key)
        prepared = prepare_build(versioned, render_spec(dataclasses.replace(resolved, spec=versioned), templates))
    module = build_module(prepared, root)
    note_loaded(prepared.spec.name, prepared.key)
    # A module loaded before (A, then B under a versioned name, then A again) is handed back from
    # memory: `import NAME` must get it too, not the last one built; a versioned build is also
    # `import NAME`'s, the newest code.
    sys.modules[prepared.spec.name] = sys.modules[spec.name] = module
    return module
