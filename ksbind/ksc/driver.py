"""Running the Knossos compiler ksc: the first pipeline stage when a config names ``ksc:``.

ksc turns the module's ``.ks`` sources (after the runtime's ``prelude.ks``)
into one ``.kso`` (every definition, fully typed: the source of truth for
signatures) and one ``.cpp``. ksbind asks only for what it binds
(``--remove-unused --used F... [sufrev F]...``) and adds the ``gdef`` forms
ksc needs for a requested vjp when the sources lack them:

- ``[sufrev F]`` needs ``suffwdpass``/``sufrevpass``/``sufrev`` gdefs for F and
  for every user function F calls, callees' first (ksc derives gdefs in
  order); ``[rev F]`` needs ``rev`` of every user function F calls. ksbind
  reads the call graph off the sources (CallGraph) for which gdefs to write,
  and writes them callees first (the sources' order: ks has no forward
  references), whatever order the bindings are in, so ksc normally runs once;
  what the graph cannot see (calls through overloaded names) ksc names ("Not
  in scope ..."), and ksbind adds it and runs ksc again.
- ksc's SUF-AD cannot build ``sufrev`` for recursive functions, folds, some
  lambdas. A vjp with ``vjp_from: auto`` is then ``rev``: at once where the
  graph shows recursion, else once ksc fails. A vjp ksc cannot derive at all
  is a KscVjpError naming it, the gdef ksc asked for, and what to write.

ksc runs from an argument list (never a shell), with a timeout, one INFO line
per run on the ``ksbind.ksc`` logger. Its output is cached by content (ksc
binary, prelude, sources, what was asked): a second build of the same sources
does not run ksc, and does not even need it (the entry records which ksc made
it: ksc_toolchains). ksc's errors become a one-line KscError located in the
``.ks`` source.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Collection, Iterable, Sequence

from ksbind.binding import parse_structured_name
from ksbind.cache import store as buildcache
from ksbind.errors import KsbindError, KscError, KscVjpError, Location
from ksbind.lang.model import StructuredName
from ksbind.lang.reader import KsSource, read_text, scan_ks, structured_name_from_node
from ksbind.lang.sexpr import SList, parse_sexprs
from ksbind.lang.types import TupleType
from ksbind.spec import DEFAULT_TIMEOUT, VJP_SOURCES, KscSpec

log = logging.getLogger("ksbind.ksc")

SUF_PASSES = ("suffwdpass", "sufrevpass", "sufrev")
#: Declarations of the sources' edef'd functions, which ksc's .cpp calls but does not declare.
EDEFS_HEADER = "ksbind-edefs.h"
#: The flags ksbind always gives ksc besides sources, outputs and the used list.
KSC_FLAGS = ("--generate-cpp", "--cpp-include", "prelude.h", "--cpp-include", EDEFS_HEADER)
#: How many times ksc may be re-run to add gdefs it asked for.
MAX_RUNS = 40




@dataclass(frozen=True)
class KscToolchain:
    """A ksc binary and the runtime folder (prelude.ks, knossos.h, prelude.h) it goes with."""

    exe: Path
    runtime: Path
    timeout: float = DEFAULT_TIMEOUT
    #: Set when ksc itself was not found and this is the ksc a cached output records:
    #: that output may be reused, but ksc cannot run (``missing`` says why).
    missing: KscError | None = field(default=None, compare=False)
    exe_sha256: str | None = field(default=None, compare=False)

    @property
    def prelude(self) -> Path:
        return self.runtime / "prelude.ks"


@dataclass(frozen=True)
class VjpRequest:
    """A binding's vjp: of which function, from which derivation, asked for where."""

    primal: StructuredName
    vjp_from: str = "auto"
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class KscOutput:
    kso: Path
    cpp: Path
    #: For each requested vjp's primal, the derivation ksc built: "sufrev" or "rev".
    vjp_kinds: dict[StructuredName, str]
    ran: bool  # False when the output came from the cache


def find_ksc(spec: KscSpec) -> KscToolchain:
    """The ksc binary and runtime a spec names, or the defaults; a KscError says how to point at them."""
    how = _HOW[spec.set_by]
    if spec.path is not None:
        exe: Path | None = spec.path
        origin = _ORIGIN[spec.set_by]
    elif os.environ.get("KSC"):
        exe, origin = Path(os.environ["KSC"]), "$KSC"
    else:
        found = shutil.which("ksc")
        exe, origin = (Path(found) if found else None), "PATH"
    if exe is None:
        raise KscError(f"ksc (the Knossos compiler) not found: {how}", spec.location)
    if not exe.is_file():
        raise KscError(f"ksc not found at {exe} (from {origin}): {how}", spec.location)
    if not os.access(exe, os.X_OK):
        raise KscError(f"ksc at {exe} (from {origin}) is not executable: chmod +x it, or {how}", spec.location)
    runtime = _find_runtime(spec, exe)
    return KscToolchain(exe.resolve(), runtime.resolve(), spec.timeout)


def _find_runtime(spec: KscSpec, exe: Path) -> Path:
    if spec.runtime is not None:
        runtime = spec.runtime
        origin = _ORIGIN_RUNTIME[spec.set_by]
    elif os.environ.get("KSC_RUNTIME"):
        runtime, origin = Path(os.environ["KSC_RUNTIME"]), "$KSC_RUNTIME"
    else:
        # ksc's own layout: bin/ksc beside runtime/ (knossos-ksc's src/runtime installed alongside).
        runtime, origin = exe.resolve().parent.parent / "runtime", f"beside {exe}"
    if not (runtime / "prelude.ks").is_file() or not (runtime / "knossos.h").is_file():
        raise KscError(f"ksc's runtime folder (with prelude.ks and knossos.h) not found at {runtime} "
                       f"(from {origin}): {_HOW_RUNTIME[spec.set_by]}", spec.location)
    return runtime


#: How to point ksbind at ksc, by who chose the settings (KscSpec.set_by): a config,
#: load_ks's arguments, or the command line (ksbind decls --ksc).
_HOW = {"config": "set ksc: {path: ...} in the config, or the KSC environment variable, or put ksc on PATH",
        "load_ks": "pass ksc= (the ksc binary) to load_ks, or set the KSC environment variable, or put ksc on PATH",
        "cli": "pass --ksc PATH, or set the KSC environment variable, or put ksc on PATH"}
_HOW_RUNTIME = {"config": "set ksc: {runtime: ...} in the config or KSC_RUNTIME",
                "load_ks": "pass ksc_runtime= to load_ks or set KSC_RUNTIME",
                "cli": "pass --ksc-runtime DIR or set KSC_RUNTIME"}
_ORIGIN = {"config": "the config's ksc: path", "load_ks": "load_ks's ksc=", "cli": "--ksc"}
_ORIGIN_RUNTIME = {"config": "the config's ksc: runtime", "load_ks": "load_ks's ksc_runtime=",
                   "cli": "--ksc-runtime"}


def ksc_toolchains(spec: KscSpec, sources: Sequence[Path], name: str, cache_root: Path) -> list[KscToolchain]:
    """The ksc to use: the one found (a list of one); when none is, the kscs whose output for
    these sources the cache holds (most recently used first), which can be reused but not run.
    With neither, find_ksc's error: the same error as without a cache."""
    try:
        return [find_ksc(spec)]
    except KscError as missing:
        recorded = _recorded_toolchains(spec, sources, name, cache_root, missing)
        if not recorded:
            raise
        return recorded


def ksc_runtime(spec: KscSpec) -> Path:
    """ksc's runtime folder alone (a module of .kso files runs no ksc): the one beside ksc,
    or, ksc not found, the one the spec or $KSC_RUNTIME names."""
    try:
        return find_ksc(spec).runtime
    except KscError:
        given = _given_runtime(spec)
        if given is None or not (given / "prelude.ks").is_file():
            raise
        return given.resolve()


def _recorded_toolchains(spec: KscSpec, sources: Sequence[Path], name: str, cache_root: Path,
                         missing: KscError) -> list[KscToolchain]:
    key = _sources_key(sources)
    found: dict[tuple[str, str], tuple[float, KscToolchain]] = {}
    for meta in cache_root.glob(f"ksc-{name}-*/ksc.json"):
        try:
            record = json.loads(meta.read_text(encoding="utf-8"))
            used = meta.stat().st_mtime
        except (OSError, ValueError):
            continue  # an entry being removed, or not one of this version's
        if not isinstance(record, dict) or record.get("sources_key") != key:
            continue
        ksc = record.get("ksc")
        if not isinstance(ksc, dict):
            continue
        runtime = _given_runtime(spec) or Path(str(ksc.get("runtime")))
        if not (runtime / "prelude.ks").is_file():
            continue  # its runtime has gone too: nothing to build against
        identity = (str(ksc.get("exe_sha256")), str(runtime))
        tool = KscToolchain(Path(str(ksc.get("exe"))), runtime.resolve(), spec.timeout, missing,
                            str(ksc.get("exe_sha256")))
        if identity not in found or found[identity][0] < used:
            found[identity] = (used, tool)
    return [tool for _, tool in sorted(found.values(), key=lambda e: -e[0])]


def _given_runtime(spec: KscSpec) -> Path | None:
    if spec.runtime is not None:
        return spec.runtime
    return Path(os.environ["KSC_RUNTIME"]) if os.environ.get("KSC_RUNTIME") else None


# ------------------------------------------------------------------ the ksc step


def compile_ks(tool: KscToolchain, sources: Sequence[Path], scanned: Sequence[KsSource],
               used: Sequence[StructuredName], vjps: Sequence[VjpRequest], name: str,
               cache_root: Path) -> KscOutput:
    """Run ksc on sources (cached by content); returns its .kso and .cpp.

    A cached output is reused with a ``tool`` that cannot run (ksc not found, see
    ksc_toolchains); without one, that tool's error is raised."""
    sources_key = _sources_key(sources)
    exe_sha256 = tool.exe_sha256 or _file_digest(tool.exe)
    key = _cache_key(tool, exe_sha256, sources_key, used, vjps)
    entry = cache_root / f"ksc-{name}-{key[:16]}"
    meta = entry / "ksc.json"
    kso, cpp = entry / f"{name}.kso", entry / f"{name}.cpp"
    if meta.is_file() and kso.is_file() and cpp.is_file():
        os.utime(meta)  # last used: what the cache's eviction goes by
        kinds = json.loads(meta.read_text(encoding="utf-8"))["vjp_kinds"]
        if tool.missing is not None:
            log.info("ksc: %s unchanged: ksc's cached output reused (%s)", _label(sources), tool.missing.message)
        else:
            log.debug("ksc: %s unchanged: ksc's cached output reused", _label(sources))
        return KscOutput(kso, cpp, {_name_of(k): v for k, v in kinds.items()}, ran=False)
    if tool.missing is not None:  # ksc would have to run, and there is none
        raise KscError(tool.missing.message, tool.missing.location)
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".ksc-{name}-", dir=cache_root) as tmp:
        staging = Path(tmp) / "out"
        staging.mkdir()
        run = _Planner(tool, sources, scanned, used, vjps, staging, name)
        kinds = run.solve()
        meta_text = json.dumps({"vjp_kinds": {str(k): v for k, v in kinds.items()},
                                "extra_gdefs": run.extra_text(), "sources_key": sources_key,
                                # which ksc made it: reused by name when ksc is not found (ksc_toolchains)
                                "ksc": {"exe": str(tool.exe), "exe_sha256": exe_sha256,
                                        "runtime": str(tool.runtime)}}, indent=1)
        (staging / "ksc.json").write_text(meta_text, encoding="utf-8")
        try:
            os.replace(staging, entry)  # whole entries appear at once
        except OSError:
            if not meta.is_file():  # not "another process installed it first"
                raise
    return KscOutput(kso, cpp, kinds, ran=True)


def _sources_key(sources: Sequence[Path]) -> str:
    """What ksc is given, less ksc itself: found again without ksc (ksc_toolchains)."""
    h = buildcache.Hasher.with_environment()
    h.add_text("flags", "\0".join(KSC_FLAGS))
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}")
    return h.hexdigest()


def _cache_key(tool: KscToolchain, exe_sha256: str, sources_key: str, used: Sequence[StructuredName],
               vjps: Sequence[VjpRequest]) -> str:
    h = buildcache.Hasher()
    h.add_text("sources", sources_key)
    h.add_text("ksc", exe_sha256)
    h.add_file(tool.prelude, "prelude")
    h.add_text("runtime headers", _runtime_header_text(tool.runtime))  # what ksbind-edefs.h leaves out
    h.add_text("used", "\0".join(map(str, used)))
    h.add_text("vjps", "\0".join(f"{v.primal}:{v.vjp_from}" for v in vjps))
    return h.hexdigest()


_digests: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """sha256 of a (large) file, once per process while its size and mtime stay put."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _digests[key] = h.hexdigest()
    return _digests[key]


def _name_of(text: str) -> StructuredName:
    return parse_structured_name(text, None)


@dataclass
class _Failure:
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout + "\n" + self.stderr


class CallGraph:
    """Which of the sources' defs call which, read off their bodies.

    ksc resolves a call by its arguments' types, which ksbind does not infer: a plain
    name is matched to the sources' defs of that name that take as many arguments.
    An edge is *exact* when one def matches and neither the prelude nor an edef has
    that name; any other edge may be wrong (an overload, the prelude's function),
    so ksbind neither adds gdefs nor decides that a function is recursive by such
    an edge: it only tells which vjps a function ksc fails on may concern.
    """

    def __init__(self, scanned: Sequence[KsSource], prelude_names: Collection[str] = ()) -> None:
        defs = [d for s in scanned for d in s.decls if d.origin == "def" and not d.name.is_derived]
        self.defs: dict[StructuredName, int] = {}  # name -> position in the sources
        for d in defs:
            self.defs.setdefault(d.name, len(self.defs))
        by_base: dict[str, list[StructuredName]] = {}
        for n in self.defs:
            by_base.setdefault(n.name, []).append(n)
        shared = set(prelude_names) | {d.name.name for s in scanned for d in s.decls if d.origin == "edef"}
        self.exact: dict[StructuredName, set[StructuredName]] = {n: set() for n in self.defs}
        self.edges: dict[StructuredName, set[StructuredName]] = {n: set() for n in self.defs}
        self.called_names: dict[StructuredName, set[str]] = {n: set() for n in self.defs}
        for s in scanned:
            for caller, sites in s.calls.items():
                if caller not in self.defs:
                    continue
                for callee, nargs in sites:
                    if isinstance(callee, StructuredName):  # written in full: exactly that function
                        self.called_names[caller].add(callee.base_name.name)
                        if callee in self.defs:
                            self.exact[caller].add(callee)
                            self.edges[caller].add(callee)
                        continue
                    self.called_names[caller].add(callee)
                    matches = [n for n in by_base.get(callee, ()) if nargs == 1 or _arity(n) == nargs]
                    self.edges[caller].update(matches)
                    if len(matches) == 1 and len(by_base[callee]) == 1 and callee not in shared:
                        self.exact[caller].add(matches[0])
        self.recursive = self._on_exact_cycles()

    def reachable(self, roots: Iterable[StructuredName], exact: bool = True) -> list[StructuredName]:
        """The defs the roots call, directly or not, the roots included (those that are defs)."""
        edges = self.exact if exact else self.edges
        seen: dict[StructuredName, None] = {}
        stack = [r for r in roots if r in self.defs]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen[n] = None
                stack.extend(sorted(edges[n] - seen.keys(), key=self.defs.__getitem__))
        return list(seen)

    def may_call(self, root: StructuredName, target: StructuredName) -> bool:
        """Whether root may call target, directly or not (by name, for a target that is not a def)."""
        reached = self.reachable([root], exact=False)
        if target in self.defs:
            return target in reached
        return any(target.base_name.name in self.called_names[n] for n in reached)

    def order(self, nodes: Iterable[StructuredName]) -> list[StructuredName]:
        """nodes with callees before their callers. ks has no forward references (a def
        calls only what is defined above it, or itself), so that is the sources' order;
        functions that are not the sources' defs (the prelude's) call none of them: first."""
        wanted = list(dict.fromkeys(nodes))
        return ([n for n in wanted if n not in self.defs]
                + sorted((n for n in wanted if n in self.defs), key=self.defs.__getitem__))

    def _on_exact_cycles(self) -> set[StructuredName]:
        out: set[StructuredName] = set()
        for component in self._components(list(self.defs), self.exact):
            if len(component) > 1 or component[0] in self.exact[component[0]]:
                out.update(component)
        return out

    def _components(self, nodes: Sequence[StructuredName], edges: dict[StructuredName, set[StructuredName]]
                    ) -> list[list[StructuredName]]:
        """Strongly connected components of the subgraph on nodes, callees' first (Tarjan, iterative)."""
        inside = set(nodes)
        index: dict[StructuredName, int] = {}
        low: dict[StructuredName, int] = {}
        stack: list[StructuredName] = []
        on_stack: set[StructuredName] = set()
        out: list[list[StructuredName]] = []
        for root in sorted(nodes, key=self.defs.__getitem__):
            if root in index:
                continue
            work = [(root, iter(sorted(edges[root] & inside, key=self.defs.__getitem__)))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            while work:
                node, children = work[-1]
                child = next(children, None)
                if child is not None:
                    if child not in index:
                        index[child] = low[child] = len(index)
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(sorted(edges[child] & inside, key=self.defs.__getitem__))))
                    elif child in on_stack:
                        low[node] = min(low[node], index[child])
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[StructuredName] = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    out.append(component)
        return out


def _label(sources: Sequence[Path]) -> str:
    return ", ".join(Path(s).name for s in sources) or "(no sources)"


def _arity(name: StructuredName) -> int:
    """How many arguments a call of [f T] is written with: T's elements when T is a tuple."""
    t = name.arg_type
    return len(t.elements) if isinstance(t, TupleType) else 1


class _KscRunner:
    """Runs ksc for one module, counting and logging every run (one INFO line each, with its time)."""

    def __init__(self, tool: KscToolchain, out: Path, sources: Sequence[Path], where: Location | None) -> None:
        self.tool, self.out, self.where = tool, out, where
        self.label = _label(sources)
        self.runs = 0

    def run(self, cmd: list[str], why: str = "") -> subprocess.CompletedProcess[str]:
        self.runs += 1
        log.debug("ksc command (run %d): %s", self.runs, shlex.join(cmd))
        start = time.perf_counter()
        proc = run_ksc(cmd, self.tool.timeout, self.out, self.where)
        seconds = time.perf_counter() - start
        outcome = "" if proc.returncode == 0 else ", failed"
        log.info("ksc: %s (run %d%s) %.1f s%s", self.label, self.runs, f", {why}" if why else "", seconds, outcome)
        if proc.returncode != 0:
            log.debug("ksc said: %s", _one_line(_strip_callstack(proc.stdout + "\n" + proc.stderr))[:2000])
        return proc


class _Planner:
    """Chooses the gdefs to add and runs ksc until it succeeds or fails for a reason of the user's.

    The gdefs come callees before callers (CallGraph.order), whatever order the
    bindings are in: ksc derives gdefs in order, and a function's SUF passes need
    those of the functions it calls. What the graph cannot see (a call through an
    overloaded name) ksc names, and ksbind adds it and runs ksc again.
    """

    def __init__(self, tool: KscToolchain, sources: Sequence[Path], scanned: Sequence[KsSource],
                 used: Sequence[StructuredName], vjps: Sequence[VjpRequest], out: Path, name: str,
                 graph: CallGraph | None = None, runner: _KscRunner | None = None) -> None:
        self.tool, self.sources, self.scanned, self.out, self.name = tool, list(sources), scanned, out, name
        self.used = list(dict.fromkeys(used))
        self.vjps = list(vjps)
        self.graph = graph or CallGraph(scanned, _prelude_names(tool.prelude))
        self.runner = runner or _KscRunner(tool, out, sources, self._first_location())
        self.declared = {d.name for s in scanned for d in s.decls} | {g.name for s in scanned for g in s.gdefs}
        self.kinds: dict[StructuredName, str] = {}
        #: Gdefs ksc asked for that the call graph did not show: target -> "suf"/"rev".
        self.reported: dict[StructuredName, set[str]] = {}
        #: Why a vjp_from: auto vjp is rev: ksc's words, for the log.
        self.fell_back: dict[StructuredName, str] = {}

    # -- choosing what to ask for

    def _initial_kind(self, v: VjpRequest) -> str:
        if v.vjp_from != "auto":
            return v.vjp_from
        for kind in ("sufrev", "rev"):
            if StructuredName.derived(kind, v.primal) in self.declared:
                return kind
        recursive = [n for n in self.graph.reachable([v.primal]) if n in self.graph.recursive]
        if recursive:  # SUF-AD cannot derive recursion: known without asking ksc
            self.fell_back[v.primal] = f"it calls {recursive[0]}, which is recursive"
            return "rev"
        return "sufrev"

    def planned(self) -> list[StructuredName]:
        """The gdefs ksbind adds, in the order ksc must see them."""
        needs: dict[StructuredName, set[str]] = {}
        for primal, kind in self.kinds.items():
            family = "suf" if kind in SUF_PASSES else "rev"
            needs.setdefault(primal, set()).add(family)
            for callee in self.graph.reachable([primal]):
                needs.setdefault(callee, set()).add(family)
        for target, families in self.reported.items():
            needs.setdefault(target, set()).update(families)
        names: list[StructuredName] = []
        for target in self.graph.order(needs):
            passes = (SUF_PASSES if "suf" in needs[target] else ()) + (("rev",) if "rev" in needs[target] else ())
            names += [n for n in (StructuredName.derived(k, target) for k in passes) if n not in self.declared]
        return names

    def extra_text(self) -> str:
        return "".join(f"(gdef {n.name} {n.inner})\n" for n in self.planned())

    # -- running

    def solve(self) -> dict[StructuredName, str]:
        (self.out / EDEFS_HEADER).write_text(edefs_header(self.scanned, self.tool.runtime), encoding="utf-8")
        self.kinds = {v.primal: self._initial_kind(v) for v in self.vjps}
        asked: StructuredName | None = None
        for _ in range(MAX_RUNS):
            failure = self._run()
            if failure is None:
                for primal, why in self.fell_back.items():
                    log.info("ksc: the vjp of %s is [rev %s]: ksc's SUF-AD cannot derive it (%s)", primal, primal, why)
                return self.kinds
            missing = missing_names(failure.text)
            if self._add_missing(missing):
                continue
            asked = next((n for n in missing if n.name in SUF_PASSES), None)
            if not self._suf_failure(asked, failure):
                raise self._rev_error(missing, failure) or self._failing_vjp(failure) or translate_error(failure, self.sources, self.scanned, self._locations(), self._fails_to_parse)
            self._check_source_gdef_order(asked, failure)
            if self._fall_back_to_rev(asked, failure):
                continue
            raise self._vjp_error(asked, failure)
        last = f": the last it asked for was {asked}" if asked is not None else ""
        raise KscError(f"ksc still asked for more gdefs after {MAX_RUNS} runs{last}", self._first_location())

    def _add_missing(self, missing: Sequence[StructuredName]) -> bool:
        """Add the gdefs ksc said it lacks (of the sources' defs); False when none is new."""
        have = set(self.planned()) | self.declared
        progress = False
        for n in missing:
            target = n.inner
            if target is None or target.is_derived or target not in self.graph.defs:
                continue  # not a gdef ksbind can add: ksc's error stands
            family = "suf" if n.name in SUF_PASSES else "rev"  # [D g], [fwd g], [rev g]: rev's closure
            wanted = [StructuredName.derived(k, target) for k in (SUF_PASSES if family == "suf" else ("rev",))]
            if all(w in have for w in wanted):
                continue
            self.reported.setdefault(target, set()).add(family)
            progress = True
        return progress

    def _suf_failure(self, asked: StructuredName | None, failure: _Failure) -> bool:
        """Whether ksc failed in SUF-AD (while some vjp is sufrev): asking again for a SUF
        gdef it has, or saying so (``mkSufFuns``, ``sufFwdRevPass: unimplemented``...)."""
        if not any(k == "sufrev" for k in self.kinds.values()):
            return False
        return asked is not None or _SUF_TROUBLE.search(failure.text) is not None

    def _check_source_gdef_order(self, asked: StructuredName | None, failure: _Failure) -> None:
        """The sources gdef a caller's SUF passes, and ksbind's gdefs of its callee come
        after them (in ksbind-gdefs.ks): only the user can move them."""
        if asked is None or asked in self.declared or asked.inner is None or asked.inner in self.graph.recursive:
            return
        target = asked.inner
        for g in (g for s in self.scanned for g in s.gdefs):
            if g.kind in SUF_PASSES and g.target != target and self.graph.may_call(g.target, target):
                gdefs = " ".join(f"(gdef {k} {target})" for k in SUF_PASSES)
                raise KscVjpError(
                    f"(gdef {g.kind} {g.target}) needs the SUF gdefs of {target}, which it calls, before it "
                    f"(ksc derives gdefs in order; ksc: {_ksc_words(failure)}): write {gdefs} above it, "
                    f"or remove the sources' gdefs of {g.target} and let ksbind add them", g.location)

    def _fall_back_to_rev(self, asked: StructuredName | None, failure: _Failure) -> bool:
        """vjp_from: auto vjps that need what SUF-AD cannot derive become [rev F] (which ksc can)."""
        sufrev = [v for v in self.vjps if self.kinds[v.primal] == "sufrev"]
        auto = [v for v in sufrev if v.vjp_from == "auto" and StructuredName.derived("sufrev", v.primal)
                not in self.declared]
        if not auto:
            return False
        culprits: list[VjpRequest] = []
        if asked is not None and asked.inner is not None:
            if any(v not in auto and self.graph.may_call(v.primal, asked.inner) for v in sufrev):
                return False  # a vjp that must be sufrev needs it: that is the error to report
            culprits = [v for v in auto if self.graph.may_call(v.primal, asked.inner)]
        why = f"it calls {asked.inner}: ksc: {_ksc_words(failure)}" if culprits and asked else ""
        if not culprits:  # ksc's words name no function of the sources: try each vjp alone
            culprits = [v for v in auto if not self._builds_alone(v)]
            why = "ksc fails on it alone"
        if not culprits:  # each builds alone: a vjp that must be sufrev fails, or they fail together
            if any(not self._builds_alone(v) for v in sufrev if v not in auto):
                return False
            culprits = auto
            why = f"ksc fails on these vjps together: {_ksc_words(failure)}"
        for v in culprits:
            self.kinds[v.primal] = "rev"
            self.fell_back[v.primal] = why
        # SUF gdefs ksc asked for on behalf of the vjps that are rev now are not needed any more.
        still = self.graph.reachable([p for p, k in self.kinds.items() if k == "sufrev"], exact=False)
        self.reported = {t: f if t in still else f - {"suf"} for t, f in self.reported.items()}
        return True

    def _builds_alone(self, v: VjpRequest, kind: str = "sufrev") -> bool:
        """Whether ksc derives [kind F] of this vjp when asked for nothing else."""
        trial = _Planner(self.tool, self.sources, self.scanned, [v.primal], [VjpRequest(v.primal, kind)],
                         self.out, self.name, self.graph, self.runner)
        trial.kinds = {v.primal: kind}
        for _ in range(MAX_RUNS):
            failure = trial._run(f"trying {StructuredName.derived(kind, v.primal)} alone")
            if failure is None:
                return True
            if not trial._add_missing(missing_names(failure.text)):
                return False
        return False

    def _vjp_error(self, asked: StructuredName | None, failure: _Failure) -> KscVjpError:
        """A sufrev vjp ksc cannot derive: which, what ksc asked for, and what to write instead."""
        sufrev = [v for v in self.vjps if self.kinds[v.primal] == "sufrev"]
        if asked is not None and asked.inner is not None:
            failing = [v for v in sufrev if self.graph.may_call(v.primal, asked.inner)]
        else:
            failing = [v for v in sufrev if not self._builds_alone(v)] if len(sufrev) > 1 else sufrev
        v = (failing or sufrev)[0]
        vjp = StructuredName.derived("sufrev", v.primal)
        rev = StructuredName.derived("rev", v.primal)
        if asked is None:
            why = "its SUF-AD cannot derive it"
        elif asked.inner is not None and asked.inner not in self.graph.defs:
            why = (f"it asked for {asked}, and {asked.inner} is not a def of the sources "
                   f"(an edef's SUF passes must be written by hand, as the prelude does for exp)")
        else:
            why = f"it asked for {asked} again after being given it (SUF-AD cannot derive recursion or fold)"
        how = (f"vjp_from: rev (or auto) on the binding, for ksc's {rev}" if v.vjp_from == "sufrev"
               else f"vjp_from: rev on the binding, or remove the sources' gdef of {vjp}")
        return KscVjpError(f"ksc cannot derive {vjp}: {why}. Write {how}, or define {vjp} by hand in the .ks "
                           f"(ksc: {_ksc_words(failure)})", v.location or self._def_location(v.primal))

    def _failing_vjp(self, failure: _Failure) -> KscVjpError | None:
        """ksc failed for no reason ksbind can read: when it succeeds without the vjps, the
        vjp it cannot derive (each tried alone) is the error, named. None: not the vjps'."""
        if not self.vjps or "Failed parse" in failure.stderr:
            return None
        bare = _Planner(self.tool, self.sources, self.scanned, self.used, [], self.out, self.name, self.graph,
                        self.runner)
        if bare._run("without the vjps") is not None:
            return None  # the sources themselves: ksc's own error says where
        for v in self.vjps:
            kind = self.kinds[v.primal]
            if self._builds_alone(v, kind):
                continue
            vjp = StructuredName.derived(kind, v.primal)
            sufrev = (f" (nor [sufrev {v.primal}]: {self.fell_back[v.primal]})"
                      if v.primal in self.fell_back else "")
            return KscVjpError(
                f"ksc cannot derive {vjp}{sufrev}: bind {v.primal.name} without vjp:, or define {vjp} by hand "
                f"in the .ks (ksc: {_ksc_words(failure)})", v.location or self._def_location(v.primal))
        return None

    def _rev_error(self, missing: Sequence[StructuredName], failure: _Failure) -> KscVjpError | None:
        """A rev vjp that needs the derivative of a function ksc cannot differentiate (an edef)."""
        for n in missing:
            if n.name not in ("D", "rev", "fwd") or n.inner is None or n.inner in self.graph.defs:
                continue
            target = n.inner
            for v in self.vjps:
                if self.kinds[v.primal] == "rev" and self.graph.may_call(v.primal, target):
                    rev = StructuredName.derived("rev", v.primal)
                    return KscVjpError(
                        f"ksc cannot derive {rev}: it asked for {n}, and {target} is not a def of the sources "
                        f"(an edef's derivative must be written by hand): define [rev {target.name}] (or "
                        f"[D {target.name}]) in the .ks, or bind {v.primal.name} without vjp: "
                        f"(ksc: {_ksc_words(failure)})", v.location or self._def_location(v.primal))
        return None

    def _run(self, why: str = "") -> _Failure | None:
        extra = self.out / "ksbind-gdefs.ks"
        extra.write_text(";; gdefs ksbind added for the vjps it binds\n" + self.extra_text(), encoding="utf-8")
        used = self.used + [StructuredName.derived(k, p) for p, k in self.kinds.items()]
        cmd = [str(self.tool.exe), "--generate-cpp"]
        for src in [self.tool.prelude, *self.sources, extra]:
            cmd += ["--ks-source-file", str(Path(src).resolve())]
        cmd += ["--ks-output-file", str(self.out / f"{self.name}.kso"), "--cpp-include", "prelude.h",
                "--cpp-include", EDEFS_HEADER, "--cpp-output-file", str(self.out / f"{self.name}.cpp"), "--remove-unused"]
        for n in used:
            cmd += ["--used", str(n)]
        proc = self.runner.run(cmd, why)
        if proc.returncode == 0:
            return None
        return _Failure(proc.stdout, proc.stderr)

    def _fails_to_parse(self, src: Path) -> bool:
        """Whether ksc fails to parse this one source (after the prelude)."""
        cmd = [str(self.tool.exe), "--generate-cpp", "--ks-source-file", str(self.tool.prelude),
               "--ks-source-file", str(Path(src).resolve()), "--ks-output-file", str(self.out / "parse.kso"),
               "--cpp-include", "prelude.h", "--cpp-output-file", str(self.out / "parse.cpp"), "--all-defs"]
        return "Failed parse" in self.runner.run(cmd, f"parsing {Path(src).name} alone").stderr

    def _locations(self) -> dict[StructuredName, Location | None]:
        return {v.primal: v.location for v in self.vjps}

    def _def_location(self, name: StructuredName) -> Location | None:
        return next((d.location for s in self.scanned for d in s.decls if d.name == name), self._first_location())

    def _first_location(self) -> Location | None:
        return Location(str(self.sources[0])) if self.sources else None


#: ksc's words when its SUF-AD gives up on a function.
_SUF_TROUBLE = re.compile(r"mkSufFuns|sufFwdRevPass|SUF/BOG|SUF fwd|SUF rev")


def _ksc_words(failure: _Failure) -> str:
    lines = [ln.strip() for ln in _strip_callstack(failure.stdout + "\n" + failure.stderr).splitlines()]
    lines = [ln for ln in lines if ln and ln != "ksc: Exiting" and not _PROGRESS.match(ln)]
    return _one_line("\n".join(lines[:3])).removeprefix("ksc: ") or "no message"


#: ksc's progress lines on stdout ("ksc: read decls", "ksc: Linted ..."), not part of an error.
_PROGRESS = re.compile(r"ksc: (read decls|Linted|Writing|-+$)|-+$")


@lru_cache(maxsize=8)
def _prelude_names(prelude: Path) -> frozenset[str]:
    """The base names the runtime's prelude declares (a call of one may be the prelude's)."""
    try:
        source = scan_ks(read_text(prelude, "ksc prelude"), str(prelude))
    except KsbindError:
        return frozenset()
    return frozenset(d.name.base_name.name for d in source.decls)


def edefs_header(scanned: Sequence[KsSource], runtime: Path) -> str:
    """The C++ declarations of the sources' edefs (those C++ can spell: no LM, which ksc keeps
    to itself), less those ksc's runtime headers already define: its prelude.h implements some
    edefs (``dot``...) with ``const&`` parameters, and a second, by-value declaration would
    make every call ambiguous."""
    from ksbind.codegen.context import KsFunction
    from ksbind.codegen.render import environment, render_template

    provided = _runtime_header_text(runtime)
    functions: dict[str, KsFunction] = {}
    for d in (d for s in scanned for d in s.decls if d.origin == "edef"):
        if re.search(re.escape(d.cpp_symbol) + r"\s*\(", provided):
            continue
        try:
            functions.setdefault(d.cpp_symbol, KsFunction(d.cpp_symbol, str(d.name), d.cpp_return_type,
                                                          tuple(d.cpp_param_types)))
        except KsbindError:  # an LM in the signature: [D f] and the like, which ksc itself handles
            continue
    return render_template(environment(), "ksc_edefs.h.j2", {"functions": list(functions.values())})


def _runtime_header_text(runtime: Path) -> str:
    """What ksc's .cpp includes besides ksbind's header: knossos.h and prelude.h."""
    return "".join(p.read_text(encoding="utf-8", errors="replace")
                   for p in (runtime / "knossos.h", runtime / "prelude.h") if p.is_file())


def run_ksc(cmd: list[str], timeout: float, cwd: Path, where: Location | None) -> subprocess.CompletedProcess[str]:
    """ksc from an argument list, never a shell, with a timeout."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                              stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise KscError(f"ksc did not finish within {timeout:.0f} s (set ksc: {{timeout: SECONDS}})", where) from None
    except OSError as e:
        raise KscError(f"cannot run ksc at {cmd[0]}: {e.strerror}", where) from None


# ------------------------------------------------------------------ reading ksc's messages

_NOT_IN_SCOPE = re.compile(r"Not in scope:?(?: userCall:)?\s*(?=\[)")


def missing_names(output: str) -> list[StructuredName]:
    """The structured names ksc says are not in scope, in order."""
    out: list[StructuredName] = []
    for m in _NOT_IN_SCOPE.finditer(output):
        text = _bracketed(output, m.end())
        if text is None:
            continue
        try:
            nodes = parse_sexprs(text, "<ksc>")
            if len(nodes) == 1 and isinstance(nodes[0], SList):
                out.append(structured_name_from_node(nodes[0]))
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


def translate_error(failure: _Failure, sources: Sequence[Path], scanned: Sequence[KsSource],
                    vjp_locations: dict[StructuredName, Location | None],
                    fails_to_parse: Callable[[Path], bool]) -> KscError:
    """ksc's failure as one line, located in the .ks source where ksc's words allow."""
    parse = _PARSE_ERROR.search(failure.stderr)
    if parse:
        words = _one_line(_strip_callstack(parse.group(3)))
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
        return KscError(f"ksc: {first}{suffix}", loc)
    lines = [ln.strip() for ln in _strip_callstack(failure.stderr).splitlines() if ln.strip()]
    lines = [ln for ln in lines if ln not in ("ksc: Exiting",)]
    text = _one_line("\n".join(lines[:3])) or "ksc failed without saying why"
    return KscError(text if text.startswith("ksc") else f"ksc: {text}",
                    Location(str(sources[0])) if sources else None)


def _strip_callstack(text: str) -> str:
    return text.split("CallStack (from HasCallStack)", 1)[0]


def _one_line(text: str) -> str:
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


def scan_sources(paths: Iterable[Path]) -> list[KsSource]:
    return [scan_ks(read_text(p), str(p)) for p in paths]


__all__ = ["KscToolchain", "VjpRequest", "KscOutput", "find_ksc", "ksc_toolchains", "ksc_runtime",
           "compile_ks",
           "CallGraph", "missing_names",
           "scan_sources", "VJP_SOURCES"]
