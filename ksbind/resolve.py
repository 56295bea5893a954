"""The read and select steps for one module: its declarations (through ksc when the
config names it) and its bindings.

Without ``ksc:``, ``.ks``/``.kso`` files and inline declarations are read as
they are. With ``ksc:``, ``.ks`` sources are compiled by ksc first (see
``ksbind.ksc``): ksc's ``.kso`` is then the source of truth for signatures,
its ``.cpp`` is compiled before the config's ``cpp:``, and ksc's runtime is the
module's runtime unless the config names another.

A config's ``python:`` functions are translated first (``ksbind.pyfunctions``):
one more ``.ks`` source for ksc, and a binding each.

Default bindings (no ``bindings:``) cover the user's own functions, not a
prelude's: with ksc, the functions the ``.ks`` sources define; without it,
every function not declared in the config's ``prelude:`` files (by default the
runtime folders' ``prelude.ks`` and ``prelude-aten.ks``).
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ksbind.binding import declared_vjp, select_bindings
from ksbind.errors import DeclarationError, KscError
from ksbind.inputs import note_dir, refuse
from ksbind.ksc.driver import (
    ATEN_PRELUDE,
    KscToolchain,
    compile_ks,
    ksc_preludes,
    ksc_runtime,
    ksc_toolchains,
    scan_sources,
)
from ksbind.ksc.planner import JvpRequest, VjpRequest
from ksbind.lang.model import FunctionDecl, StructuredName
from ksbind.lang.reader import (
    KsSource,
    parse_ks,
    read_ks,
    read_text,
    same_signature,
    scan_ks_text,
)
from ksbind.settings import pick
from ksbind.spec import VJP_KINDS, Binding, BindingSpec, ModuleSpec, RuntimeSpec, VjpKind
from ksbind.targets.registry import get_target


@dataclass(frozen=True)
class ResolvedModule:
    """A module ready to render and build: ``spec`` has ksc's outputs and runtime filled in."""

    spec: ModuleSpec
    decls: list[FunctionDecl]
    bindings: list[Binding]
    ksc_ran: bool = False  # whether this resolution ran ksc (False: no ksc, or its cached output)


def resolve_spec(spec: ModuleSpec, cache_dir: Path | None = None) -> ResolvedModule:
    """Declarations and bindings of a module (running ksc, cached, when the config names it)."""
    if spec.python:  # Python functions: translated to one more .ks source, with their bindings
        from ksbind.cache.layout import cache_root
        from ksbind.pyfunctions import with_python

        spec = with_python(spec, Path(cache_dir) if cache_dir is not None else cache_root())
    if spec.ksc is not None and any(p.suffix != ".kso" for p in spec.ks_files):
        return _resolve_with_ksc(spec, cache_dir)
    if spec.ksc is not None:  # only .kso files: ksc has nothing to compile, but its runtime is still wanted
        spec = _with_ksc_runtime(spec, ksc_runtime(spec.ksc))
    decls = module_decls(spec)
    return ResolvedModule(spec, decls, select_bindings(decls, spec.bindings, spec.location, _not_prelude(spec),
                                                      get_target(spec.target).crossing_problem))


def module_decls(spec: ModuleSpec, ks_files: Sequence[Path] | None = None) -> list[FunctionDecl]:
    """Every function the module's files and inline text declare, each once."""
    decls: list[FunctionDecl] = []
    for path in spec.ks_files if ks_files is None else ks_files:
        decls.extend(read_ks(path))
    if spec.declarations is not None:
        decls.extend(parse_ks(spec.declarations.text, str(spec.config_path)))
    return unique_decls(decls)


def unique_decls(decls: Sequence[FunctionDecl]) -> list[FunctionDecl]:
    seen: dict[Any, FunctionDecl] = {}
    unique: list[FunctionDecl] = []
    for d in decls:
        if d.name in seen:
            if not same_signature(seen[d.name], d):
                raise DeclarationError(f"{d.name} is declared twice with different signatures "
                                       f"(also at {seen[d.name].location})", d.location)
            if d.param_names and not seen[d.name].param_names:  # prefer the def's parameter names
                unique[unique.index(seen[d.name])] = seen[d.name] = d
            continue
        seen[d.name] = d
        unique.append(d)
    return unique


# ------------------------------------------------------------------ without ksc: which functions are a prelude's


def _not_prelude(spec: ModuleSpec) -> Callable[[FunctionDecl], bool] | None:
    if spec.prelude is None:
        for d in spec.runtime.include_dirs:
            note_dir(d)  # a prelude.ks put there later changes the default bindings
    files = spec.prelude if spec.prelude is not None else tuple(
        d / name for d in spec.runtime.include_dirs for name in _PRELUDES if (d / name).is_file())
    if not files:
        return None
    names = frozenset().union(*(_declared_base_names(Path(f)) for f in files))
    return lambda d: d.name.base_name not in names


#: The runtime's ks files that are ksc's: prelude.ks, and prelude-aten.ks (PyTorch's aten:: operators).
_PRELUDES = ("prelude.ks", ATEN_PRELUDE)


def _declared_base_names(path: Path) -> frozenset[StructuredName]:
    return _base_names_in(read_text(path, "prelude file"), path)  # read every time: it may have changed


# Per process: a function of the text alone (the same text has the same names).
@lru_cache(maxsize=32)
def _base_names_in(text: str, path: Path) -> frozenset[StructuredName]:
    source = scan_ks_text(text, str(path))
    return frozenset(d.name.base_name for d in source.decls) | frozenset(g.target.base_name for g in source.gdefs)


# ------------------------------------------------------------------ with ksc


def _resolve_with_ksc(spec: ModuleSpec, cache_dir: Path | None) -> ResolvedModule:
    from ksbind.cache.layout import cache_root

    assert spec.ksc is not None
    sources = [p for p in spec.ks_files if p.suffix != ".kso"]
    kso_files = [p for p in spec.ks_files if p.suffix == ".kso"]
    scanned = scan_sources(sources)
    # By default bind what the sources define; an edef's C++ is the user's, bound only when asked.
    own = {d.name for s in scanned for d in s.decls if d.origin == "def" and not d.name.is_derived}
    is_own: Callable[[FunctionDecl], bool] = lambda d: d.name in own  # noqa: E731
    root = Path(cache_dir) if cache_dir is not None else cache_root()

    # ksc, or (not found) the kscs whose cached output for these sources may be reused.
    tools = ksc_toolchains(spec.ksc, sources, spec.name, root)
    for i, tool in enumerate(tools):
        # Before ksc runs, its .kso does not exist: bind against the sources (and the prelude) to
        # learn which functions and vjps to ask ksc for. Warnings wait for the real selection below.
        before = _declarations_before_ksc(tool, scanned, spec, kso_files)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Every function the defaults could bind, also those the target cannot cross: the
            # final selection below skips those with its warning (here warnings are silenced).
            planned = select_bindings(before, spec.bindings, spec.location, is_own)
        used, vjps, jvps = _what_to_ask(planned, spec.bindings, scanned, before)
        if tool.missing is not None:  # ksc not found: a cached output of a ksc seen before
            refuse("ksc was not found (a cached output of a ksc seen before was reused)")
        try:
            out = compile_ks(tool, sources, scanned, used, vjps, spec.name, root, jvps)
            break
        except KscError:
            if tool.missing is None or i + 1 == len(tools):
                raise  # ksc's own error, or no recorded ksc left: "ksc not found"
    resolved = dataclasses.replace(spec, ks_files=(out.kso, *kso_files))
    resolved = _with_ksc_runtime(resolved, tool.runtime)
    resolved = dataclasses.replace(resolved, cpp=(out.cpp, *spec.cpp))
    decls = _located_in_sources(module_decls(resolved), scanned)
    specs = _with_chosen_vjps(spec.bindings, planned, out.vjp_kinds)
    return ResolvedModule(resolved, decls, select_bindings(decls, specs, spec.location, is_own,
                                                          get_target(spec.target).crossing_problem), out.ran)


def _located_in_sources(decls: list[FunctionDecl], scanned: Sequence[KsSource]) -> list[FunctionDecl]:
    """ksc's .kso restates the user's functions: point at the user's .ks (what a user edits), not at it."""
    where = {d.name: d.location for s in scanned for d in s.decls}
    where.update({g.name: g.location for s in scanned for g in s.gdefs})
    return [dataclasses.replace(d, location=where[d.name]) if d.name in where else d for d in decls]


def _with_ksc_runtime(spec: ModuleSpec, runtime: Path) -> ModuleSpec:
    """ksc's runtime, unless the config names one. No runtime sources: ksc's .cpp ends with
    #include "knossos.cpp" (and with only .kso files, the C++ given is ksc's output too)."""
    if not spec.runtime.from_ksc:
        return spec
    return dataclasses.replace(spec, runtime=RuntimeSpec(bundled=False, include_dirs=(runtime,)))


def _declarations_before_ksc(tool: KscToolchain, scanned: Sequence[KsSource], spec: ModuleSpec,
                             kso_files: Sequence[Path]) -> list[FunctionDecl]:
    preludes = [_scanned_prelude(p) for p in ksc_preludes(tool, scanned)]  # prelude-aten.ks too, if called
    decls = [*(d for p in preludes for d in p.decls), *(d for s in scanned for d in s.decls)]
    by_name = {d.name: d for d in decls}
    for g in (g for s in scanned for g in s.gdefs):
        primal = by_name.get(g.target)
        if g.kind in ("sufrev", "rev", "fwd") and primal is not None and g.name not in by_name:
            by_name[g.name] = primal.derive(g.kind)
            decls.append(by_name[g.name])
    decls += module_decls(spec, kso_files)
    # ksc's prelude restates some functions; the first statement stands.
    first: dict[StructuredName, FunctionDecl] = {}
    for d in decls:
        first.setdefault(d.name, d)
    return list(first.values())


def _scanned_prelude(path: Path) -> KsSource:
    return scan_ks_text(read_text(path, "ksc prelude"), str(path))  # read every time: it may have changed


def _what_to_ask(planned: Sequence[Binding], specs: Sequence[BindingSpec] | None,
                 scanned: Sequence[KsSource], before: Sequence[FunctionDecl]
                 ) -> tuple[list[StructuredName], list[VjpRequest], list[JvpRequest]]:
    """The functions ksc must keep (--used), the vjps it must derive and the jvps ([fwd F])."""
    edefs = {d.name for d in before if d.origin == "edef"}
    defs = {d.name for d in before if d.origin == "def"}
    vjp_from = {s.name: s.vjp_from for s in specs or ()}
    used: list[StructuredName] = []
    vjps: list[VjpRequest] = []
    jvps: list[JvpRequest] = []
    for b in planned:
        if b.decl.name not in edefs:  # an edef's C++ comes from cpp:, not from ksc
            used.append(b.decl.name)
        if b.jvp_decl is not None and b.decl.name not in edefs:
            if b.jvp_decl.name in defs:
                used.append(b.jvp_decl.name)
            elif b.jvp_decl.name not in edefs:
                jvps.append(JvpRequest(b.decl.name, b.location, b.name))
        if b.vjp_decl is None or b.decl.name in edefs:
            continue
        vjp = b.vjp_decl.name
        if vjp in defs:
            used.append(vjp)
        elif vjp not in edefs:
            kind = pick(vjp.name, VJP_KINDS)
            assert kind is not None  # a vjp_decl is [sufrev F] or [rev F]
            vjps.append(VjpRequest(b.decl.name, vjp_from.get(b.name, kind), b.location))
    return used, vjps, jvps


def _with_chosen_vjps(specs: Sequence[BindingSpec] | None, planned: Sequence[Binding],
                      kinds: dict[StructuredName, VjpKind]) -> tuple[BindingSpec, ...] | None:
    """Explicit bindings with vjp_from set to what ksc built for them."""
    if specs is None:
        return None
    primal = {b.name: b.decl.name for b in planned}
    return tuple(dataclasses.replace(s, vjp_from=kinds[primal[s.name]])
                 if s.vjp is not None and primal.get(s.name) in kinds else s for s in specs)


__all__ = ["ResolvedModule", "resolve_spec", "module_decls", "unique_decls", "declared_vjp"]
