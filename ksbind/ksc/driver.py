"""Running the Knossos compiler ksc: the first pipeline stage when a config names ``ksc:``.

ksc turns the module's ``.ks`` sources (after the runtime's ``prelude.ks``, and
its ``prelude-aten.ks`` when the sources call ``aten::`` functions: ksc_preludes)
into one ``.kso`` (every definition, fully typed: the source of truth for
signatures) and one ``.cpp``. ksbind asks only for what it binds
(``--remove-unused --used F... [sufrev F]...``), with the gdefs its vjps need
(ksbind.ksc.planner chooses them).

This module finds ksc and its runtime, runs it from an argument list (never a
shell), with a timeout, one INFO line per run on the ``ksbind.ksc`` logger, and
caches its output by content (ksc binary, prelude, sources, what was asked): a
second build of the same sources does not run ksc, and does not even need it
(the entry records which ksc made it: ksc_toolchains). ksc's errors become a
one-line KscError located in the ``.ks`` source (ksbind.ksc.diagnostics).
"""
from __future__ import annotations

import contextlib
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ksbind import session
from ksbind.cache.keys import Hasher, file_sha256
from ksbind.cache.maintenance import remove_folder
from ksbind.cache.objects import damaged_file
from ksbind.errors import KsbindError, KscError, Location, warn
from ksbind.inputs import note_dir, note_file, read_if_present
from ksbind.ksc.diagnostics import KscFailure, one_line, strip_callstack
from ksbind.ksc.planner import CallGraph, JvpRequest, Planner, VjpRequest, prelude_names
from ksbind.lang.model import StructuredName
from ksbind.lang.reader import KsSource, read_text, scan_ks
from ksbind.settings import pick
from ksbind.spec import DEFAULT_TIMEOUT, VJP_KINDS, KscSpec, VjpKind

log = logging.getLogger("ksbind.ksc")

#: Declarations of the sources' edef'd functions, which ksc's .cpp calls but does not declare.
EDEFS_HEADER = "ksbind-edefs.h"
#: The flags ksbind always gives ksc besides sources, outputs and the used list.
KSC_FLAGS = ("--generate-cpp", "--cpp-include", "prelude.h", "--cpp-include", EDEFS_HEADER)
#: ksc's prelude of PyTorch's operators (``aten::mul``...), and the header defining its edefs.
ATEN_PRELUDE = "prelude-aten.ks"
ATEN_HEADER = "prelude-aten.h"
ATEN_PREFIX = "aten::"


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

    @property
    def aten_prelude(self) -> Path:
        return self.runtime / ATEN_PRELUDE


def calls_aten(scanned: Sequence[KsSource]) -> bool:
    """Whether the sources call (or gdef) an ``aten::`` function they do not declare
    themselves: then ksc is given the runtime's prelude-aten.ks after prelude.ks."""
    own = {d.name.base_name.name for s in scanned for d in s.decls}
    for s in scanned:
        for sites in s.calls.values():
            for callee, _ in sites:
                name = callee if isinstance(callee, str) else callee.base_name.name
                if name.startswith(ATEN_PREFIX) and name not in own:
                    return True
        if any(g.target.base_name.name.startswith(ATEN_PREFIX) and g.target.base_name.name not in own
               for g in s.gdefs):
            return True
    return False


def ksc_preludes(tool: KscToolchain, scanned: Sequence[KsSource]) -> tuple[Path, ...]:
    """The runtime's ks files ksc reads before the sources: prelude.ks, and prelude-aten.ks
    (when the runtime has it) for sources that call ``aten::`` functions (calls_aten)."""
    if calls_aten(scanned):
        note_file(tool.aten_prelude)  # the rule depends on whether it is there
        if tool.aten_prelude.is_file():
            return tool.prelude, tool.aten_prelude
    return (tool.prelude,)


def ksc_headers(tool: KscToolchain, scanned: Sequence[KsSource], preludes: Sequence[Path]) -> tuple[str, ...]:
    """The runtime's headers ksc's .cpp includes (``--cpp-include``): prelude.h, and prelude-aten.h,
    which defines prelude-aten.ks's edefs, when ksc reads prelude-aten.ks (ksc_preludes) or the
    sources declare ``aten::`` functions themselves (a copy of it given as a source)."""
    aten = tool.aten_prelude in preludes or any(
        d.name.base_name.name.startswith(ATEN_PREFIX) for s in scanned for d in s.decls)
    return ("prelude.h", ATEN_HEADER) if aten and (tool.runtime / ATEN_HEADER).is_file() else ("prelude.h",)


@dataclass(frozen=True)
class KscOutput:
    kso: Path
    cpp: Path
    #: For each requested vjp's primal, the derivation ksc built: "sufrev" or "rev".
    vjp_kinds: dict[StructuredName, VjpKind]
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
        for d in os.environ.get("PATH", "").split(os.pathsep):  # a ksc put earlier on PATH is another ksc
            note_dir(d or ".")
            if found is not None and os.path.dirname(found) == d:
                break
    if exe is None:
        raise KscError(f"ksc (the Knossos compiler) not found: {how}", spec.location)
    if not exe.is_file():
        raise KscError(f"ksc not found at {exe} (from {origin}): {how}", spec.location)
    if not os.access(exe, os.X_OK):
        raise KscError(f"ksc at {exe} (from {origin}) is not executable: chmod +x it, or {how}", spec.location)
    runtime = _find_runtime(spec, exe)
    note_dir(runtime)  # ksc's runtime: which prelude and headers are there
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
        "cli": "pass --ksc PATH, or set the KSC environment variable, or put ksc on PATH",
        "compile": "pass ksc= (the ksc binary) to ksbind.compile, or set the KSC environment variable, "
                   "or put ksc on PATH"}
_HOW_RUNTIME = {"config": "set ksc: {runtime: ...} in the config or KSC_RUNTIME",
                "load_ks": "pass ksc_runtime= to load_ks or set KSC_RUNTIME",
                "cli": "pass --ksc-runtime DIR or set KSC_RUNTIME",
                "compile": "pass ksc_runtime= to ksbind.compile or set KSC_RUNTIME"}
_ORIGIN = {"config": "the config's ksc: path", "load_ks": "load_ks's ksc=", "cli": "--ksc",
           "compile": "ksbind.compile's ksc="}
_ORIGIN_RUNTIME = {"config": "the config's ksc: runtime", "load_ks": "load_ks's ksc_runtime=",
                   "cli": "--ksc-runtime", "compile": "ksbind.compile's ksc_runtime="}


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
               cache_root: Path, jvps: Sequence[JvpRequest] = ()) -> KscOutput:
    """Run ksc on sources (cached by content); returns its .kso and .cpp.

    A cached output is reused with a ``tool`` that cannot run (ksc not found, see
    ksc_toolchains); without one, that tool's error is raised."""
    sources_key = _sources_key(sources)
    exe_sha256 = tool.exe_sha256 or _file_digest(tool.exe)
    preludes = ksc_preludes(tool, scanned)
    headers = ksc_headers(tool, scanned, preludes)
    key = _cache_key(tool, preludes, headers, exe_sha256, sources_key, used, vjps, jvps)
    entry = cache_root / f"ksc-{name}-{key[:16]}"
    meta = entry / "ksc.json"
    kso, cpp = entry / f"{name}.kso", entry / f"{name}.cpp"
    record = _check_output(entry, key)
    if record is not None:
        with contextlib.suppress(OSError):  # a read-only cache still serves it
            os.utime(meta)  # last used: what the cache's eviction goes by
        kinds = record["vjp_kinds"]
        if tool.missing is not None:
            log.info("ksc: %s unchanged: ksc's cached output reused (%s)", _label(sources), tool.missing.message)
        else:
            log.debug("ksc: %s unchanged: ksc's cached output reused", _label(sources))
        return KscOutput(kso, cpp, {StructuredName.parse(k): _vjp_kind(v) for k, v in kinds.items()}, ran=False)
    if tool.missing is not None:  # ksc would have to run, and there is none
        raise KscError(tool.missing.message, tool.missing.location)
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".ksc-{name}-", dir=cache_root) as tmp:
        staging = Path(tmp) / "out"
        staging.mkdir()
        names = frozenset().union(*(prelude_names(p) for p in preludes))
        run = Planner(_KscRunner(tool, staging, sources, name, preludes, headers), CallGraph(scanned, names),
                      sources, scanned, used, vjps, jvps)
        (staging / EDEFS_HEADER).write_text(edefs_header(scanned, tool.runtime, headers), encoding="utf-8")
        kinds = run.solve()
        files = {}
        for p in sorted(staging.iterdir()):
            files[p.name] = {"size": p.stat().st_size, "sha256": file_sha256(p)}
        meta_text = json.dumps({"format": KSC_OUTPUT_FORMAT, "key": key, "files": files,
                                "vjp_kinds": {str(k): v for k, v in kinds.items()},
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



def _vjp_kind(text: object) -> VjpKind:
    """A derivation as the cache's ksc.json records it (written by this module: a bad one is a bug)."""
    kind = pick(text, VJP_KINDS)
    if kind is None:
        raise AssertionError(f"ksc.json names an unknown vjp kind {text!r}")
    return kind

#: ksc.json's format: it lists every file of the entry with its size and sha256.
KSC_OUTPUT_FORMAT = 1


def _check_output(entry: Path, key: str) -> dict[str, Any] | None:
    """ksc.json of an intact cached output (every file listed there, with its size
    and sha256: content checked once per process), else None. A damaged one is
    said once and removed (then ksc runs again)."""
    meta = entry / "ksc.json"
    if not os.path.isdir(entry):
        return None
    try:
        raw = meta.read_bytes()
    except FileNotFoundError:
        _discard_output(entry, "it has no ksc.json")
        return None
    except OSError as e:
        _discard_output(entry, f"cannot read ksc.json: {e.strerror}")
        return None
    try:
        record = json.loads(raw)
        if not isinstance(record, dict) or record.get("format") != KSC_OUTPUT_FORMAT:
            _discard_output(entry, f"ksc.json is not of format {KSC_OUTPUT_FORMAT}")
            return None
        if record.get("key") != key:
            _discard_output(entry, "ksc.json is another output's")
            return None
        files = {str(n): (int(i["size"]), str(i["sha256"])) for n, i in record["files"].items()}
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in record["vjp_kinds"].items()) \
                or not files or any("/" in n or n.startswith(".") for n in files):
            raise ValueError("bad record")
    except (ValueError, TypeError, KeyError, AttributeError):
        _discard_output(entry, "ksc.json is unreadable")
        return None
    why = damaged_file(entry, files, "ksc.json")
    if why is not None:
        _discard_output(entry, why)
        return None
    return record


def _discard_output(entry: Path, why: str) -> None:
    if not os.path.lexists(entry):
        return  # removed meanwhile (eviction, clean): not damaged
    try:
        removed = remove_folder(entry.parent, entry) or not os.path.lexists(entry)
    except OSError:
        removed = False
    warn(f"ksc's cached output {entry} is damaged ({why}): {'running ksc again' if removed else 'not using it'}")
    return None


def _sources_key(sources: Sequence[Path]) -> str:
    """What ksc is given, less ksc itself: found again without ksc (ksc_toolchains)."""
    h = Hasher.with_environment()
    h.add_text("flags", "\0".join(KSC_FLAGS))
    for i, src in enumerate(sources):
        h.add_file(src, f"source{i}")
    return h.hexdigest()


def _cache_key(tool: KscToolchain, preludes: Sequence[Path], headers: Sequence[str], exe_sha256: str,
               sources_key: str, used: Sequence[StructuredName], vjps: Sequence[VjpRequest],
               jvps: Sequence[JvpRequest] = ()) -> str:
    h = Hasher()
    h.add_text("sources", sources_key)
    h.add_text("ksc", exe_sha256)
    h.add_file(tool.prelude, "prelude")
    for extra in preludes[1:]:  # prelude-aten.ks, when the sources call aten:: functions
        h.add_file(extra, f"prelude {extra.name}")
    if tuple(headers) != ("prelude.h",):  # (the key of a module without aten:: is what it was)
        h.add_text("cpp includes", "\0".join(headers))
    h.add_text("runtime headers", _runtime_header_text(tool.runtime, headers))  # what ksbind-edefs.h leaves out
    h.add_text("used", "\0".join(map(str, used)))
    h.add_text("vjps", "\0".join(f"{v.primal}:{v.vjp_from}" for v in vjps))
    if jvps:  # (the key of a module without jvps is what it was)
        h.add_text("jvps", "\0".join(str(j.primal) for j in jvps))
    return h.hexdigest()


#: Per process, by stat identity: (path, mtime_ns, size) -> sha256 of a file ksc reads.
_digests: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """sha256 of a (large) file, once per process while its size and mtime stay put."""
    note_file(path)  # ksc's binary: by its stat (ksbind/inputs.py, BIG_FILE), before it is hashed
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _digests[key] = h.hexdigest()
    return _digests[key]


def _label(sources: Sequence[Path]) -> str:
    return ", ".join(Path(s).name for s in sources) or "(no sources)"


class _KscRunner:
    """Runs ksc for one module into ``out``, counting and logging every run (one INFO line each,
    with its time): the Planner's RunsKsc."""

    def __init__(self, tool: KscToolchain, out: Path, sources: Sequence[Path], name: str,
                 preludes: Sequence[Path] = (), headers: Sequence[str] = ("prelude.h",)) -> None:
        self.tool, self.out, self.sources, self.name = tool, out, list(sources), name
        self.preludes = list(preludes) or [tool.prelude]
        self.includes = list(headers)
        self.where = Location(str(self.sources[0])) if self.sources else None
        self.label = _label(sources)
        self.runs = 0

    def compile(self, gdefs: str, used: Sequence[StructuredName], why: str = "") -> KscFailure | None:
        """ksc on the prelude, the sources and ksbind's gdefs, keeping the used functions."""
        extra = self.out / "ksbind-gdefs.ks"
        extra.write_text(";; gdefs ksbind added for the vjps it binds\n" + gdefs, encoding="utf-8")
        cmd = [str(self.tool.exe), "--generate-cpp"]
        for src in [*self.preludes, *self.sources, extra]:
            cmd += ["--ks-source-file", str(Path(src).resolve())]
        cmd += ["--ks-output-file", str(self.out / f"{self.name}.kso")]
        for header in [*self.includes, EDEFS_HEADER]:
            cmd += ["--cpp-include", header]
        cmd += ["--cpp-output-file", str(self.out / f"{self.name}.cpp"), "--remove-unused"]
        for n in used:
            cmd += ["--used", str(n)]
        proc = self.run(cmd, why)
        if proc.returncode == 0:
            return None
        return KscFailure(proc.stdout, proc.stderr)

    def fails_to_parse(self, src: Path) -> bool:
        """Whether ksc fails to parse this one source (after the preludes)."""
        cmd = [str(self.tool.exe), "--generate-cpp"]
        for prelude in self.preludes:
            cmd += ["--ks-source-file", str(prelude)]
        cmd += ["--ks-source-file", str(Path(src).resolve()), "--ks-output-file", str(self.out / "parse.kso"),
               "--cpp-include", "prelude.h", "--cpp-output-file", str(self.out / "parse.cpp"), "--all-defs"]
        return "Failed parse" in self.run(cmd, f"parsing {Path(src).name} alone").stderr

    def run(self, cmd: list[str], why: str = "") -> subprocess.CompletedProcess[str]:
        self.runs += 1
        log.debug("ksc command (run %d): %s", self.runs, shlex.join(cmd))
        start = time.perf_counter()
        proc = run_ksc(cmd, self.tool.timeout, self.out, self.where)
        seconds = time.perf_counter() - start
        outcome = "" if proc.returncode == 0 else ", failed"
        log.info("ksc: %s (run %d%s) %.1f s%s", self.label, self.runs, f", {why}" if why else "", seconds, outcome)
        if proc.returncode != 0:
            log.debug("ksc said: %s", one_line(strip_callstack(proc.stdout + "\n" + proc.stderr))[:2000])
        return proc


def edefs_header(scanned: Sequence[KsSource], runtime: Path, headers: Sequence[str] = ("prelude.h",)) -> str:
    """The C++ declarations of the sources' edefs (those C++ can spell: no LM, which ksc keeps
    to itself), less those ksc's runtime headers already define: its prelude.h implements some
    edefs (``dot``...) with ``const&`` parameters, and a second, by-value declaration would
    make every call ambiguous; prelude-aten.h (when among ``headers``) defines prelude-aten.ks's,
    some as templates, which a by-value declaration would hide (the call would pick it, and
    nothing would define it)."""
    from ksbind.codegen.context import KsFunction
    from ksbind.codegen.render import environment, render_template

    provided = _runtime_header_text(runtime, headers)
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


def _runtime_header_text(runtime: Path, headers: Sequence[str] = ("prelude.h",)) -> str:
    """What ksc's .cpp includes besides ksbind's header: knossos.h and ``headers`` (prelude.h,
    and prelude-aten.h where ksc_headers says)."""
    texts = []
    for p in (runtime / "knossos.h", *(runtime / h for h in headers)):
        data = read_if_present(p)
        if data is not None:
            texts.append(data.decode("utf-8", errors="replace"))
    return "".join(texts)


def run_ksc(cmd: list[str], timeout: float, cwd: Path, where: Location | None) -> subprocess.CompletedProcess[str]:
    """ksc from an argument list, never a shell, with a timeout (then it is killed)."""
    try:
        with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace", stdin=subprocess.DEVNULL) as proc:
            try:
                # The schedule's while_ksc, once ksc has started: the build starts there what it
                # needs later and that ksc's wait leaves a core free for (the torch build: torch's import).
                meanwhile = session.current().schedule.while_ksc
                if meanwhile is not None:
                    meanwhile()
                out, err = proc.communicate(timeout=timeout)
            except BaseException:  # the timeout, Ctrl-C: no ksc is left running
                proc.kill()
                proc.wait()
                raise
    except subprocess.TimeoutExpired:
        raise KscError(f"ksc did not finish within {timeout:.0f} s (set ksc: {{timeout: SECONDS}})", where) from None
    except OSError as e:
        raise KscError(f"cannot run ksc at {cmd[0]}: {e.strerror}", where) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def scan_sources(paths: Iterable[Path]) -> list[KsSource]:
    return [scan_ks(read_text(p), str(p)) for p in paths]


__all__ = ["KscToolchain", "KscOutput", "find_ksc", "ksc_toolchains", "ksc_runtime", "compile_ks",
           "calls_aten", "ksc_preludes", "ksc_headers", "ATEN_PRELUDE", "ATEN_HEADER",
           "edefs_header", "run_ksc", "scan_sources"]
