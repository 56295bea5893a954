"""Which gdefs to ask ksc for, callees first, and the runs of ksc that settle each vjp.

ksbind asks ksc only for what it binds, and adds the ``gdef`` forms ksc needs for
a requested vjp when the sources lack them:

- ``[sufrev F]`` needs ``suffwdpass``/``sufrevpass``/``sufrev`` gdefs for F and
  for every user function F calls, callees' first (ksc derives gdefs in
  order); ``[rev F]`` needs ``rev`` of every user function F calls. ksbind
  reads the call graph off the sources (CallGraph) for which gdefs to write,
  and writes them callees first (the sources' order: ks has no forward
  references), whatever order the bindings are in, so ksc normally runs once;
  what the graph cannot see (calls through overloaded names) ksc names ("Not
  in scope ..."), and ksbind adds it and runs ksc again.
- ``[fwd F]`` (a binding's jvp) needs ``fwd`` of every user function F calls,
  as rev does; ksc cannot derive it through a lambda (a ``map``): a KscJvpError
  naming the binding.
- ksc's SUF-AD cannot build ``sufrev`` for recursive functions, folds, some
  lambdas. A vjp with ``vjp_from: auto`` is then ``rev``: at once where the
  graph shows recursion, else once ksc fails. A vjp ksc cannot derive at all
  is a KscVjpError naming it, the gdef ksc asked for, and what to write.

The Planner runs ksc through the driver's runner (RunsKsc), and reads its
failures with ksbind.ksc.diagnostics.
"""
from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ksbind.errors import KsbindError, KscError, KscJvpError, KscVjpError, Location
from ksbind.ksc.diagnostics import KscFailure, ksc_words, missing_names, suf_ad_gave_up, translate_error
from ksbind.lang.model import StructuredName
from ksbind.lang.reader import KsSource, read_text, scan_ks_text
from ksbind.lang.types import TupleType
from ksbind.spec import VJP_KINDS, VjpFrom, VjpKind

log = logging.getLogger("ksbind.ksc")

SUF_PASSES = ("suffwdpass", "sufrevpass", "sufrev")
#: How many times ksc may be re-run to add gdefs it asked for.
MAX_RUNS = 40


@dataclass(frozen=True)
class VjpRequest:
    """A binding's vjp: of which function, from which derivation, asked for where."""

    primal: StructuredName
    vjp_from: VjpFrom = "auto"
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class JvpRequest:
    """A binding's jvp, ``[fwd F]``: of which function, asked for where."""

    primal: StructuredName
    location: Location | None = field(default=None, compare=False)
    binding: str = field(default="", compare=False)  # the binding's name, for the error


class RunsKsc(Protocol):
    """How the Planner runs ksc (the driver's runner: it knows ksc, the sources and where outputs go)."""

    def compile(self, gdefs: str, used: Sequence[StructuredName], why: str = "") -> KscFailure | None:
        """ksc on the sources and these gdefs, keeping the used functions; None when it succeeds."""
        ...

    def fails_to_parse(self, src: Path) -> bool:
        """Whether ksc fails to parse this one source (after the prelude)."""
        ...


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


def _arity(name: StructuredName) -> int:
    """How many arguments a call of [f T] is written with: T's elements when T is a tuple."""
    t = name.arg_type
    return len(t.elements) if isinstance(t, TupleType) else 1


def prelude_names(prelude: Path) -> frozenset[str]:
    """The base names the runtime's prelude declares (a call of one may be the prelude's)."""
    try:
        source = scan_ks_text(read_text(prelude, "ksc prelude"), str(prelude))  # read every time: it may change
    except KsbindError:
        return frozenset()
    return frozenset(d.name.base_name.name for d in source.decls)


class Planner:
    """Chooses the gdefs to add and runs ksc until it succeeds or fails for a reason of the user's.

    The gdefs come callees before callers (CallGraph.order), whatever order the
    bindings are in: ksc derives gdefs in order, and a function's SUF passes need
    those of the functions it calls. What the graph cannot see (a call through an
    overloaded name) ksc names, and ksbind adds it and runs ksc again.
    """

    def __init__(self, runner: RunsKsc, graph: CallGraph, sources: Sequence[Path], scanned: Sequence[KsSource],
                 used: Sequence[StructuredName], vjps: Sequence[VjpRequest],
                 jvps: Sequence[JvpRequest] = ()) -> None:
        self.runner, self.graph = runner, graph
        self.sources, self.scanned = list(sources), scanned
        self.used = list(dict.fromkeys(used))
        self.vjps = list(vjps)
        self.jvps = list(dict.fromkeys(jvps))
        self.declared = {d.name for s in scanned for d in s.decls} | {g.name for s in scanned for g in s.gdefs}
        self.kinds: dict[StructuredName, VjpKind] = {}
        #: Gdefs ksc asked for that the call graph did not show: target -> "suf"/"rev"/"fwd".
        self.reported: dict[StructuredName, set[str]] = {}
        #: Why a vjp_from: auto vjp is rev: ksc's words, for the log.
        self.fell_back: dict[StructuredName, str] = {}

    # -- choosing what to ask for

    def _initial_kind(self, v: VjpRequest) -> VjpKind:
        if v.vjp_from != "auto":
            return v.vjp_from
        for kind in VJP_KINDS:
            if StructuredName.derived(kind, v.primal) in self.declared:
                return kind
        recursive = [n for n in self.graph.reachable([v.primal]) if n in self.graph.recursive]
        if recursive:  # SUF-AD cannot derive recursion: known without asking ksc
            self.fell_back[v.primal] = f"it calls {recursive[0]}, which is recursive"
            return "rev"
        return "sufrev"

    def _chosen_kinds(self) -> dict[StructuredName, VjpKind]:
        """One derivation per function: a binding's vjp_from: rev or sufrev is what every binding of
        that function gets (auto takes either), whatever the bindings' order; two bindings asking
        for different ones are an error (a module builds one vjp per function)."""
        explicit: dict[StructuredName, VjpRequest] = {}
        for v in self.vjps:
            if v.vjp_from == "auto":
                continue
            first = explicit.setdefault(v.primal, v)
            if first.vjp_from != v.vjp_from:
                raise KscVjpError(f"two bindings of {v.primal} ask for different vjps, vjp_from: "
                                  f"{first.vjp_from} (at {first.location}) and {v.vjp_from}: a module builds one vjp "
                                  "per function; give both the same vjp_from", v.location)
        kinds: dict[StructuredName, VjpKind] = {}
        for v in self.vjps:
            if v.primal in explicit:
                kinds[v.primal] = explicit[v.primal].vjp_from  # type: ignore[assignment]  # not auto
            else:
                kinds.setdefault(v.primal, self._initial_kind(v))
        return kinds

    def planned(self) -> list[StructuredName]:
        """The gdefs ksbind adds, in the order ksc must see them."""
        needs: dict[StructuredName, set[str]] = {}
        for primal, kind in self.kinds.items():
            family = "suf" if kind in SUF_PASSES else "rev"
            needs.setdefault(primal, set()).add(family)
            for callee in self.graph.reachable([primal]):
                needs.setdefault(callee, set()).add(family)
        for j in self.jvps:
            for target in [j.primal, *self.graph.reachable([j.primal])]:
                needs.setdefault(target, set()).add("fwd")
        for target, families in self.reported.items():
            needs.setdefault(target, set()).update(families)
        names: list[StructuredName] = []
        for target in self.graph.order(needs):
            passes = ((SUF_PASSES if "suf" in needs[target] else ()) + (("rev",) if "rev" in needs[target] else ())
                      + (("fwd",) if "fwd" in needs[target] else ()))
            names += [n for n in (StructuredName.derived(k, target) for k in passes) if n not in self.declared]
        return names

    def extra_text(self) -> str:
        return "".join(f"(gdef {n.name} {n.inner})\n" for n in self.planned())

    # -- running

    def solve(self) -> dict[StructuredName, VjpKind]:
        """Each vjp's derivation ("sufrev" or "rev") once ksc has built them all."""
        self.kinds = self._chosen_kinds()
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
                raise (self._rev_error(missing, failure) or self._jvp_error(missing, failure)
                       or self._failing_vjp(failure)
                       or translate_error(failure, self.sources, self.scanned, self._locations(),
                                          self.runner.fails_to_parse))
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
            for family in self._families_for(n.name):
                wanted = [StructuredName.derived(k, target) for k in (SUF_PASSES if family == "suf" else (family,))]
                if all(w in have for w in wanted):
                    continue
                self.reported.setdefault(target, set()).add(family)
                progress = True
        return progress

    def _families_for(self, asked: str) -> tuple[str, ...]:
        """Which gdef families a name ksc asked for belongs to: [D g] is the linear map that
        both a [fwd ...] and a [rev ...] of a caller need (ksc derives it with either gdef)."""
        if asked in SUF_PASSES:
            return ("suf",)
        if asked in ("rev", "fwd"):
            return (asked,)
        rev = any(k == "rev" for k in self.kinds.values())
        return (("rev",) if rev else ()) + (("fwd",) if self.jvps else ()) or ("rev",)

    def _suf_failure(self, asked: StructuredName | None, failure: KscFailure) -> bool:
        """Whether ksc failed in SUF-AD (while some vjp is sufrev): asking again for a SUF
        gdef it has, or saying so (``mkSufFuns``, ``sufFwdRevPass: unimplemented``...)."""
        if not any(k == "sufrev" for k in self.kinds.values()):
            return False
        return asked is not None or suf_ad_gave_up(failure)

    def _check_source_gdef_order(self, asked: StructuredName | None, failure: KscFailure) -> None:
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
                    f"(ksc derives gdefs in order; ksc: {ksc_words(failure)}): write {gdefs} above it, "
                    f"or remove the sources' gdefs of {g.target} and let ksbind add them", g.location)

    def _fall_back_to_rev(self, asked: StructuredName | None, failure: KscFailure) -> bool:
        """vjp_from: auto vjps that need what SUF-AD cannot derive become [rev F] (which ksc can)."""
        sufrev = [v for v in self.vjps if self.kinds[v.primal] == "sufrev"]
        chosen = {v.primal for v in self.vjps if v.vjp_from != "auto"}  # another binding said sufrev
        auto = [v for v in sufrev if v.vjp_from == "auto" and v.primal not in chosen
                and StructuredName.derived("sufrev", v.primal) not in self.declared]
        if not auto:
            return False
        culprits: list[VjpRequest] = []
        if asked is not None and asked.inner is not None:
            if any(v not in auto and self.graph.may_call(v.primal, asked.inner) for v in sufrev):
                return False  # a vjp that must be sufrev needs it: that is the error to report
            culprits = [v for v in auto if self.graph.may_call(v.primal, asked.inner)]
        why = f"it calls {asked.inner}: ksc: {ksc_words(failure)}" if culprits and asked else ""
        if not culprits:  # ksc's words name no function of the sources: try each vjp alone
            culprits = [v for v in auto if not self._builds_alone(v)]
            why = "ksc fails on it alone"
        if not culprits:  # each builds alone: a vjp that must be sufrev fails, or they fail together
            if any(not self._builds_alone(v) for v in sufrev if v not in auto):
                return False
            culprits = auto
            why = f"ksc fails on these vjps together: {ksc_words(failure)}"
        for v in culprits:
            self.kinds[v.primal] = "rev"
            self.fell_back[v.primal] = why
        # SUF gdefs ksc asked for on behalf of the vjps that are rev now are not needed any more.
        still = self.graph.reachable([p for p, k in self.kinds.items() if k == "sufrev"], exact=False)
        self.reported = {t: f if t in still else f - {"suf"} for t, f in self.reported.items()}
        return True

    def _builds_alone(self, v: VjpRequest, kind: VjpKind = "sufrev") -> bool:
        """Whether ksc derives [kind F] of this vjp when asked for nothing else."""
        trial = Planner(self.runner, self.graph, self.sources, self.scanned, [v.primal],
                        [VjpRequest(v.primal, kind)])
        trial.kinds = {v.primal: kind}
        return trial._builds(f"trying {StructuredName.derived(kind, v.primal)} alone")

    def _vjp_error(self, asked: StructuredName | None, failure: KscFailure) -> KscVjpError:
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
                           f"(ksc: {ksc_words(failure)})", v.location or self._def_location(v.primal))

    def _failing_vjp(self, failure: KscFailure) -> KscVjpError | None:
        """ksc failed for no reason ksbind can read: when it succeeds without the vjps, the
        vjp it cannot derive (each tried alone) is the error, named. None: not the vjps'."""
        if not self.vjps or "Failed parse" in failure.stderr:
            return None
        bare = Planner(self.runner, self.graph, self.sources, self.scanned, self.used, [])
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
                f"in the .ks (ksc: {ksc_words(failure)})", v.location or self._def_location(v.primal))
        return None

    def _rev_error(self, missing: Sequence[StructuredName], failure: KscFailure) -> KscVjpError | None:
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
                        f"(ksc: {ksc_words(failure)})", v.location or self._def_location(v.primal))
        return None

    def _jvp_error(self, missing: Sequence[StructuredName], failure: KscFailure) -> KscJvpError | None:
        """A jvp ksc cannot derive: through a lambda (a map), or of an edef's derivative. It is
        named when ksc builds everything else without the jvps, and fails with that one alone."""
        if not self.jvps or "Failed parse" in failure.stderr:
            return None
        for n in missing:  # the derivative of something that is not a def: an edef's, written by hand
            if n.name in ("D", "fwd") and n.inner is not None and n.inner not in self.graph.defs:
                for j in self.jvps:
                    if self.graph.may_call(j.primal, n.inner):
                        return self._jvp_failed(j, f"it asked for {n}, and {n.inner} is not a def of the sources "
                                                   f"(ksc's forward mode of a caller needs its linear map {n}, "
                                                   f"which only the edef's author can declare, as ksc's prelude does "
                                                   f"for its edefs)", failure)
        without = Planner(self.runner, self.graph, self.sources, self.scanned, self.used, self.vjps)
        without.kinds = dict(self.kinds)
        if without._run("without the jvps") is not None:
            return None  # the vjps' or the sources' failure: reported as before
        for j in self.jvps:
            trial = Planner(self.runner, self.graph, self.sources, self.scanned, [j.primal], [], [j])
            if not trial._builds(f"trying [fwd {j.primal}] alone"):
                lam = "gradE" in failure.text or "lambda" in failure.text
                why = ("ksc's forward AD cannot differentiate a lambda (a map over one)" if lam
                       else "ksc fails on it")
                return self._jvp_failed(j, why, failure)
        return None

    def _jvp_failed(self, j: JvpRequest, why: str, failure: KscFailure) -> KscJvpError:
        fwd = StructuredName.derived("fwd", j.primal)
        binding = j.binding or j.primal.name
        return KscJvpError(f"binding {binding!r}: ksc cannot derive {fwd}, the jvp of {j.primal}: {why}. Bind "
                           f"{binding} without jvp:, or define {fwd} by hand in the .ks (ksc: {ksc_words(failure)})",
                           j.location or self._def_location(j.primal))

    def _builds(self, why: str) -> bool:
        """Whether ksc builds what this planner asks for, adding the gdefs it names."""
        for _ in range(MAX_RUNS):
            failure = self._run(why)
            if failure is None:
                return True
            if not self._add_missing(missing_names(failure.text)):
                return False
        return False

    def _run(self, why: str = "") -> KscFailure | None:
        used = (self.used + [StructuredName.derived(k, p) for p, k in self.kinds.items()]
                + [StructuredName.derived("fwd", j.primal) for j in self.jvps])
        return self.runner.compile(self.extra_text(), used, why)

    def _locations(self) -> dict[StructuredName, Location | None]:
        return {v.primal: v.location for v in self.vjps}

    def _def_location(self, name: StructuredName) -> Location | None:
        return next((d.location for s in self.scanned for d in s.decls if d.name == name), self._first_location())

    def _first_location(self) -> Location | None:
        return Location(str(self.sources[0])) if self.sources else None
