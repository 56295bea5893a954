"""Running the Knossos compiler ksc: the first pipeline stage when a config names ``ksc:``.

ksc turns the module's ``.ks`` sources (after the runtime's ``prelude.ks``)
into one ``.kso`` (every definition, fully typed: the source of truth for
signatures) and one ``.cpp``. ksbind asks only for what it binds
(``--remove-unused --used F... [sufrev F]...``) and adds the ``gdef`` forms
ksc needs for a requested vjp when the sources lack them:

- ``[sufrev F]`` needs ``suffwdpass``/``sufrevpass``/``sufrev`` gdefs for F and
  for every user function F calls; ``[rev F]`` needs ``rev`` of every user
  function F calls. ksc names each missing one ("Not in scope ..."), so
  ksbind adds what ksc asks for and runs it again (a handful of runs at most).
- ksc's SUF-AD cannot build ``sufrev`` for recursive functions or folds (it
  asks again for a gdef it was given). A vjp with ``vjp_from: auto`` then
  falls back to ``rev``, which ksc can build for those.

ksc runs from an argument list (never a shell), with a timeout, and its
output is cached by content (ksc binary, prelude, sources, what was asked):
a second build of the same sources does not run ksc. ksc's errors become a
one-line KscError located in the ``.ks`` source.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from . import buildcache
from .errors import KscError, KsbindError, Location
from .model import StructuredName
from .binding import VJP_SOURCES, parse_structured_name
from .reader import KsSource, read_text, scan_ks, structured_name_from_node
from .sexpr import SList, parse_sexprs

DEFAULT_TIMEOUT = 300.0
SUF_PASSES = ("suffwdpass", "sufrevpass", "sufrev")
#: Declarations of the sources' edef'd functions, which ksc's .cpp calls but does not declare.
EDEFS_HEADER = "ksbind-edefs.h"
#: The flags ksbind always gives ksc besides sources, outputs and the used list.
KSC_FLAGS = ("--generate-cpp", "--cpp-include", "prelude.h", "--cpp-include", EDEFS_HEADER)
#: How many times ksc may be re-run to add gdefs it asked for.
MAX_RUNS = 40


@dataclass(frozen=True)
class KscSpec:
    """A config's ``ksc:`` mapping (None fields: $KSC / $KSC_RUNTIME, then ``ksc`` on PATH)."""

    path: Path | None = None
    runtime: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class KscToolchain:
    """A ksc binary and the runtime folder (prelude.ks, knossos.h, prelude.h) it goes with."""

    exe: Path
    runtime: Path
    timeout: float = DEFAULT_TIMEOUT

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
    how = ("set ksc: {path: ...} in the config, or the KSC environment variable, or put ksc on PATH")
    if spec.path is not None:
        exe: Path | None = spec.path
        origin = "the config's ksc: path"
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
        runtime, origin = spec.runtime, "the config's ksc: runtime"
    elif os.environ.get("KSC_RUNTIME"):
        runtime, origin = Path(os.environ["KSC_RUNTIME"]), "$KSC_RUNTIME"
    else:
        # ksc's own layout: bin/ksc beside runtime/ (knossos-ksc's src/runtime installed alongside).
        runtime, origin = exe.resolve().parent.parent / "runtime", f"beside {exe}"
    if not (runtime / "prelude.ks").is_file() or not (runtime / "knossos.h").is_file():
        raise KscError(f"ksc's runtime folder (with prelude.ks and knossos.h) not found at {runtime} "
                       f"(from {origin}): set ksc: {{runtime: ...}} in the config or KSC_RUNTIME",
                       spec.location)
    return runtime


# ------------------------------------------------------------------ the ksc step


def compile_ks(tool: KscToolchain, sources: Sequence[Path], scanned: Sequence[KsSource],
               used: Sequence[StructuredName], vjps: Sequence[VjpRequest], name: str,
               cache_root: Path) -> KscOutput:
    """Run ksc on sources (cached by content); returns its .kso and .cpp."""
    key = _cache_key(tool, sources, used, vjps)
    entry = cache_root / f"ksc-{name}-{key[:16]}"
    meta = entry / "ksc.json"
    kso, cpp = entry / f"{name}.kso", entry / f"{name}.cpp"
    if meta.is_file() and kso.is_file() and cpp.is_file():
        os.utime(meta)  # last used: what the cache's eviction goes by
        kinds = json.loads(meta.read_text(encoding="utf-8"))["vjp_kinds"]
        return KscOutput(kso, cpp, {_name_of(k): v for k, v in kinds.items()}, ran=False)
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".ksc-{name}-", dir=cache_root) as tmp:
        staging = Path(tmp) / "out"
        staging.mkdir()
        run = _Planner(tool, sources, scanned, used, vjps, staging, name)
        kinds = run.solve()
        meta_text = json.dumps({"vjp_kinds": {str(k): v for k, v in kinds.items()},
                                "extra_gdefs": run.extra_text()}, indent=1)
        (staging / "ksc.json").write_text(meta_text, encoding="utf-8")
        try:
            os.replace(staging, entry)  # whole entries appear at once
        except OSError:
            if not meta.is_file():  # not "another process installed it first"
                raise
    return KscOutput(kso, cpp, kinds, ran=True)


def _cache_key(tool: KscToolchain, sources: Sequence[Path], used: Sequence[StructuredName],
               vjps: Sequence[VjpRequest]) -> str:
    h = buildcache.Hasher.with_environment()
    h.add_text("ksc", _file_digest(tool.exe))
    h.add_text("flags", "\0".join(KSC_FLAGS))
    h.add_file(tool.prelude, "prelude")
    h.add_text("runtime headers", _runtime_header_text(tool.runtime))  # what ksbind-edefs.h leaves out
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}")
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


class _Planner:
    """Chooses the gdefs to add and runs ksc until it succeeds or fails for a reason of the user's."""

    def __init__(self, tool: KscToolchain, sources: Sequence[Path], scanned: Sequence[KsSource],
                 used: Sequence[StructuredName], vjps: Sequence[VjpRequest], out: Path, name: str) -> None:
        self.tool, self.sources, self.scanned, self.out, self.name = tool, list(sources), scanned, out, name
        self.used = list(dict.fromkeys(used))
        self.vjps = list(vjps)
        self.defs = {d.name: d for s in scanned for d in s.decls if d.origin == "def" and not d.name.is_derived}
        self.declared = {d.name for s in scanned for d in s.decls} | {g.name for s in scanned for g in s.gdefs}
        self.kinds: dict[StructuredName, str] = {}
        self.extra: dict[StructuredName, None] = {}  # gdef names added, in order

    # -- choosing what to ask for

    def _initial_kind(self, v: VjpRequest) -> str:
        if v.vjp_from != "auto":
            return v.vjp_from
        for kind in ("sufrev", "rev"):
            if StructuredName.derived(kind, v.primal) in self.declared:
                return kind
        return "sufrev"

    def _ask(self, kind: str, target: StructuredName, first: bool = False) -> bool:
        """Add the gdefs for [kind target] that the sources lack; False when all were there already.

        ksc derives gdefs in order and a derivative needs its callees' derivatives
        already made: a callee ksc asked for goes ``first``, before its callers.
        """
        wanted = SUF_PASSES if kind in SUF_PASSES else ("rev",)
        new = [n for n in (StructuredName.derived(k, target) for k in wanted)
               if n not in self.declared and n not in self.extra]
        if first:
            self.extra = {**dict.fromkeys(new), **self.extra}
        else:
            self.extra.update(dict.fromkeys(new))
        return bool(new)

    def extra_text(self) -> str:
        return "".join(f"(gdef {n.name} {n.inner})\n" for n in self.extra)

    # -- running

    def solve(self) -> dict[StructuredName, str]:
        (self.out / EDEFS_HEADER).write_text(edefs_header(self.scanned, self.tool.runtime), encoding="utf-8")
        self.kinds = {v.primal: self._initial_kind(v) for v in self.vjps}
        self._reset_extras()
        for _ in range(MAX_RUNS):
            failure = self._run(self.out)
            if failure is None:
                return self.kinds
            missing = missing_names(failure.stdout + "\n" + failure.stderr)
            if self._add_missing(missing):
                continue
            if self._fall_back_to_rev(missing):
                continue
            raise translate_error(failure, self.sources, self.scanned, self._locations(), self._fails_to_parse)
        raise KscError(f"ksc still asked for more gdefs after {MAX_RUNS} runs", self._first_location())

    def _reset_extras(self) -> None:
        self.extra = {}
        for primal, kind in self.kinds.items():
            self._ask(kind, primal)

    def _add_missing(self, missing: Sequence[StructuredName]) -> bool:
        progress = False
        for n in missing:
            target = n.inner
            if target is None or target.is_derived or target not in self.defs:
                continue  # not a gdef ksbind can add: ksc's error stands
            ask = n.name if n.name in SUF_PASSES else "rev"  # [D g], [fwd g], [rev g]: rev's closure
            progress |= self._ask(ask, target, first=True)
        return progress

    def _fall_back_to_rev(self, missing: Sequence[StructuredName]) -> bool:
        """ksc asked again for a SUF gdef it has: SUF-AD cannot build it (recursion, fold)."""
        if not any(n.is_derived and n.name in SUF_PASSES for n in missing):
            return False
        auto = [v for v in self.vjps if v.vjp_from == "auto" and self.kinds[v.primal] == "sufrev"
                and StructuredName.derived("sufrev", v.primal) not in self.declared]
        if not auto:
            return False
        # Keep sufrev for each vjp ksc can build alone; only the others fall back.
        for v in auto:
            self.kinds[v.primal] = "rev"
        for v in auto:
            self.kinds[v.primal] = "sufrev"
            if not self._builds_alone(v):
                self.kinds[v.primal] = "rev"
        self._reset_extras()
        return True

    def _builds_alone(self, v: VjpRequest) -> bool:
        trial = _Planner(self.tool, self.sources, self.scanned, [v.primal],
                         [VjpRequest(v.primal, "sufrev")], self.out, self.name)
        trial.kinds = {v.primal: "sufrev"}
        trial._reset_extras()
        for _ in range(MAX_RUNS):
            failure = trial._run(self.out)
            if failure is None:
                return True
            if not trial._add_missing(missing_names(failure.stdout + "\n" + failure.stderr)):
                return False
        return False

    def _run(self, out: Path) -> _Failure | None:
        extra = out / "ksbind-gdefs.ks"
        extra.write_text(";; gdefs ksbind added for the vjps it binds\n" + self.extra_text(), encoding="utf-8")
        used = self.used + [StructuredName.derived(k, p) for p, k in self.kinds.items()]
        cmd = [str(self.tool.exe), "--generate-cpp"]
        for src in [self.tool.prelude, *self.sources, extra]:
            cmd += ["--ks-source-file", str(Path(src).resolve())]
        cmd += ["--ks-output-file", str(out / f"{self.name}.kso"), "--cpp-include", "prelude.h",
                "--cpp-include", EDEFS_HEADER, "--cpp-output-file", str(out / f"{self.name}.cpp"), "--remove-unused"]
        for n in used:
            cmd += ["--used", str(n)]
        proc = run_ksc(cmd, self.tool.timeout, out, self._first_location())
        if proc.returncode == 0:
            return None
        return _Failure(proc.stdout, proc.stderr)

    def _fails_to_parse(self, src: Path) -> bool:
        """Whether ksc fails to parse this one source (after the prelude)."""
        cmd = [str(self.tool.exe), "--generate-cpp", "--ks-source-file", str(self.tool.prelude),
               "--ks-source-file", str(Path(src).resolve()), "--ks-output-file", str(self.out / "parse.kso"),
               "--cpp-include", "prelude.h", "--cpp-output-file", str(self.out / "parse.cpp"), "--all-defs"]
        return "Failed parse" in run_ksc(cmd, self.tool.timeout, self.out, None).stderr

    def _locations(self) -> dict[StructuredName, Location | None]:
        return {v.primal: v.location for v in self.vjps}

    def _first_location(self) -> Location | None:
        return Location(str(self.sources[0])) if self.sources else None


def edefs_header(scanned: Sequence[KsSource], runtime: Path) -> str:
    """The C++ declarations of the sources' edefs (those C++ can spell: no LM, which ksc keeps
    to itself), less those ksc's runtime headers already define: its prelude.h implements some
    edefs (``dot``...) with ``const&`` parameters, and a second, by-value declaration would
    make every call ambiguous."""
    from .context import KsFunction
    from .render import environment, render_template

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


__all__ = ["KscSpec", "KscToolchain", "VjpRequest", "KscOutput", "find_ksc", "compile_ks", "missing_names",
           "scan_sources", "VJP_SOURCES", "DEFAULT_TIMEOUT"]
