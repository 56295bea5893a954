"""Compile generated modules with g++ and import them, cached by content hash.

``build(config_or_spec)`` renders a module, writes its generated files to its
output folder, and returns the imported extension module. The cache key
covers every input (generated files, the config's cpp sources and the headers
beside them, the runtime's headers and sources, ksbind's own headers, compiler
and flags, ksbind/pybind11/Python versions and ABI), so an unchanged rebuild
imports the cached module without running the compiler, in any process.
Torch-target modules are built by ``ksbind.build_torch`` (torch's own
extension builder) with the same cache (``ksbind.buildcache``).

Environment: ``CXX`` (compiler, default g++), ``KSBIND_CXXFLAGS`` (extra
flags, part of the key), ``KSBIND_CACHE_DIR`` (cache folder), ``KSBIND_JOBS``
(parallel compiles, default: CPU count).
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Sequence

from . import buildcache, versions
from .config import ModuleSpec, load_config
from .errors import BuildError, Location
from .missing import explain_missing
from .output import plan_files, write_generated, write_planned
from .render import RenderedModule
from .resolve import ResolvedModule
from .toolchain import (BASE_FLAGS, INCLUDE_DIR, KS_FLAGS, RUNTIME_DIR, compiler, first_error,
                        hash_include_path, ks_include_dirs)

#: Generated files that are translation units (the rest are headers or stubs).
CPP_SUFFIXES = (".cpp", ".cc", ".cxx")


@dataclass(frozen=True)
class CompilePlan:
    """Everything a compile needs, and nothing else: also what the key hashes."""

    name: str
    sources: tuple[Path, ...]        # translation units, in order
    include_dirs: tuple[Path, ...]   # searched in order: runtime first, then ksbind's
    flags: tuple[str, ...]
    cxx: tuple[str, ...]             # compiler command (may carry arguments)
    log_dir: Path                    # where a failed compile's full output goes


def build(config_or_spec: str | os.PathLike[str] | ModuleSpec, *, name: str | None = None,
          templates: Sequence[str] = (), cache_dir: str | os.PathLike[str] | None = None,
          quiet: bool = False) -> ModuleType:
    """Generate, compile (or reuse the cached build) and import one module.

    ``config_or_spec`` is a config path or a ModuleSpec. A config holding
    several modules needs ``name`` to say which one.
    """
    if isinstance(config_or_spec, ModuleSpec):
        spec = config_or_spec
    else:
        specs = load_config(config_or_spec)
        if name is not None:
            matching = [s for s in specs if s.name == name]
            if not matching:
                raise BuildError(f"no module named {name!r} in this config (it has: "
                                 f"{', '.join(s.name for s in specs)})", Location(os.fspath(config_or_spec)))
            spec = matching[0]
        elif len(specs) == 1:
            spec = specs[0]
        else:
            raise BuildError(f"this config holds {len(specs)} modules ({', '.join(s.name for s in specs)}): "
                             "pass name=... or use build_configs()", Location(os.fspath(config_or_spec)))
    return build_spec(spec, templates=templates, cache_dir=cache_dir, quiet=quiet)


def build_configs(configs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                  templates: Sequence[str] = (), cache_dir: str | os.PathLike[str] | None = None,
                  quiet: bool = False) -> list[tuple[str, ModuleType]]:
    """Build every module of every config (``ksbind build``); all are rendered first."""
    paths = [configs] if isinstance(configs, (str, os.PathLike)) else list(configs)
    specs = [s for p in paths for s in load_config(p)]
    return [(s.name, build_spec(s, templates=templates, cache_dir=cache_dir, quiet=quiet)) for s in specs]


def build_spec(spec: ModuleSpec, *, templates: Sequence[str] = (),
               cache_dir: str | os.PathLike[str] | None = None, quiet: bool = False) -> ModuleType:
    from .resolve import resolve_spec

    root = Path(cache_dir) if cache_dir is not None else buildcache.cache_root()
    resolved = resolve_spec(spec, root)  # runs ksc (cached) when the config names it
    try:
        return _build_resolved(resolved, templates, root, quiet)
    except BuildError as e:
        raise explain_missing(e, resolved.decls) from None


def _build_resolved(resolved: ResolvedModule, templates: Sequence[str], root: Path, quiet: bool) -> ModuleType:
    """Build and load one resolved module; under a versioned name when this process
    already loaded other code under its name (see ksbind.versions)."""
    from .pipeline import render_spec

    spec = resolved.spec
    rendered = render_spec(resolved, templates)
    if spec.target == "torch":
        from . import build_torch  # torch is imported only for torch modules

        key = build_torch.module_key(spec, rendered)
    else:
        plan = compile_plan(spec, write_generated(spec.output, rendered))
        key = cache_key(plan, rendered.target)
    if versions.needs_version(spec.name, key):
        module = _build_resolved(dataclasses.replace(resolved, spec=versions.versioned_spec(spec, key)),
                                 templates, root, quiet)
        sys.modules[spec.name] = module  # `import NAME` gets the newest code too
        return module
    if spec.target == "torch":
        module = build_torch.build_torch_module(spec, rendered, cache_dir=root, quiet=quiet)
    else:
        module = build_plan(plan, rendered, root, quiet=quiet)
    versions.note_loaded(spec.name, key)
    return module


def compile_plan(spec: ModuleSpec, generated: Sequence[Path]) -> CompilePlan:
    import pybind11

    runtime_sources = () if spec.runtime.bundled else tuple(spec.runtime.sources)
    # The user's sources first: small, and where errors usually are, so a
    # mistake is reported before the slow pybind11 files finish.
    units = tuple(spec.cpp) + runtime_sources + tuple(p for p in generated if p.suffix in CPP_SUFFIXES)
    include_dirs = tuple(dict.fromkeys(
        [*ks_include_dirs(spec), Path(pybind11.get_include()), Path(sysconfig.get_paths()["include"])]))
    flags = BASE_FLAGS + (f"-DTORCH_EXTENSION_NAME={spec.name}",) + tuple(
        shlex.split(os.environ.get("KSBIND_CXXFLAGS", "")))
    return CompilePlan(spec.name, units, include_dirs, flags, compiler(), Path(spec.output))


def cache_key(plan: CompilePlan, target: str) -> str:
    h = buildcache.Hasher.with_environment()
    h.add_text("target", target)
    h.add_text("name", plan.name)
    h.add_text("cxx", "\0".join(plan.cxx))
    h.add_text("flags", "\0".join(plan.flags))
    for i, src in enumerate(plan.sources):
        h.add_file(src, f"source{i}:{src.name}", strip_stamp=True)
    # Headers the sources may include: beside each source, and on the include
    # path (less pybind11's and Python's, the last two, which the versions cover).
    for d in dict.fromkeys(s.parent for s in plan.sources):
        h.add_dir_headers(d, strip_stamp=True)
    hash_include_path(h, plan.include_dirs[:-2])
    return h.hexdigest()


def build_plan(plan: CompilePlan, rendered: RenderedModule, root: Path, quiet: bool = False) -> ModuleType:
    entry = buildcache.CacheEntry(root, plan.name, cache_key(plan, rendered.target), target=rendered.target)
    if not entry.is_built():
        with entry.lock():
            if not entry.is_built():  # another process may have built it while we waited
                _compile_into(entry, plan, quiet)
    _install_stub(entry, plan.name, rendered)
    return buildcache.import_from_path(plan.name, entry.module_path)


def _install_stub(entry: buildcache.CacheEntry, name: str, rendered: RenderedModule) -> None:
    """Put NAME.pyi next to the built module so editors and mypy find it.

    Written on every build (if changed), not only on a cache miss: the stub is
    not part of the compile key, so a template change may alter it alone.
    """
    text = rendered.files.get(f"{name}.pyi")
    if text is not None:
        write_planned(plan_files(entry.dir, {f"{name}.pyi": text}))


def _progress(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"ksbind: {text}", file=sys.stderr, flush=True)


def _compile_into(entry: buildcache.CacheEntry, plan: CompilePlan, quiet: bool) -> None:
    start = time.monotonic()
    _progress(quiet, f"{plan.name}: compiling {len(plan.sources)} files with {plan.cxx[0]}")
    with entry.staging() as tmp:
        objects = compile_all(plan, tmp)
        out = tmp / entry.module_path.name
        _run([*plan.cxx, "-shared", *plan.flags, "-o", str(out), *map(str, objects)], plan.sources[0], "linking",
             plan.log_dir)
        entry.install(out)
    _progress(quiet, f"{plan.name}: done in {time.monotonic() - start:.1f} s ({entry.module_path})")


def compile_all(plan: CompilePlan, tmp: Path) -> list[Path]:
    """Compile every translation unit in parallel.

    On the first failure the other compiles are stopped and the failure that
    comes first in source order is raised.
    """
    includes = [f"-I{d}" for d in plan.include_dirs]
    objects = [tmp / f"{i}_{src.stem}.o" for i, src in enumerate(plan.sources)]
    failed = threading.Event()
    running: set[subprocess.Popen[str]] = set()
    lock = threading.Lock()

    def one(i: int) -> BuildError | None:
        if failed.is_set():
            return None
        src = plan.sources[i]
        try:
            _run([*plan.cxx, *plan.flags, *includes, "-c", str(src), "-o", str(objects[i])], src, "compiling",
                 plan.log_dir, running, lock, failed)
        except BuildError as e:
            failed.set()
            with lock:
                for proc in running:
                    _kill_group(proc)
            return e
        return None

    jobs = _jobs() or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(plan.sources)))) as pool:
        try:
            errors = list(pool.map(one, range(len(plan.sources))))
        except BaseException:  # Ctrl-C: stop the compilers now, not when they finish
            failed.set()
            with lock:
                for proc in running:
                    _kill_group(proc)
            raise
    for e in errors:
        if e is not None:
            raise e
    return objects


def _jobs() -> int:
    """KSBIND_JOBS: how many compilers run at once (0 or unset: one per core)."""
    text = os.environ.get("KSBIND_JOBS", "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise BuildError(f"KSBIND_JOBS must be a whole number of parallel compiles, found {text!r}")
    return int(text)


def _run(cmd: list[str], src: Path, what: str, log_dir: Path,
         running: set[subprocess.Popen[str]] | None = None, lock: threading.Lock | None = None,
         stopped: threading.Event | None = None) -> None:
    try:
        # Own process group, so stopping a compile also stops cc1plus.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        raise BuildError(f"cannot run C++ compiler {cmd[0]!r}: {e.strerror} (set CXX, or install g++)",
                         Location(str(src))) from None
    if running is not None and lock is not None:
        with lock:
            running.add(proc)
    try:
        output, _ = proc.communicate()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        if running is not None and lock is not None:
            with lock:
                running.discard(proc)
    if proc.returncode == 0:
        return
    if stopped is not None and stopped.is_set():
        return None  # stopped because another file failed; that failure is reported
    log: Path | None = log_dir / f"{src.name}.build.log" if _writable(log_dir) else None
    if log is not None:
        try:
            log.write_text(f"$ {shlex.join(cmd)}\n{output}", encoding="utf-8")
        except OSError:
            log = None
    first = first_error(output) or f"{cmd[0]} exited with status {proc.returncode}"
    more = f" (full output: {log})" if log is not None else ""
    raise BuildError(f"{what} {src} failed: {first}{more}", Location(str(src)))


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _writable(d: Path) -> bool:
    return os.access(d, os.W_OK)


__all__ = ["build", "build_configs", "build_spec", "compile_plan", "cache_key", "CompilePlan", "first_error",
           "INCLUDE_DIR", "RUNTIME_DIR", "BASE_FLAGS", "KS_FLAGS", "ks_include_dirs", "hash_include_path"]
