"""The two test lanes: `unit` (compiles nothing, runs no ksc: `scripts/test.sh --fast`)
and `slow` (compiles C++ with a real compiler, runs ksc, or runs mypy).

tests/conftest.py gives every collected test exactly one of the two markers,
from what the test uses (``lane_of``): a test is `slow` when it, one of its
fixtures (all the way down), or a function of tests/ it calls (all the way
down) refers to one of the compiling functions below (``compiling_functions``),
to ksc's binary, hands a subprocess Python code or a `ksbind` command line
that builds, or runs a command line that starts a compiler or mypy (HEAVY_TOOLS). An explicit ``@pytest.mark.slow`` is still honoured (for what the
rule cannot see); nothing is ever moved the other way.

The rule reads code, so it can miss a way of compiling it does not know. The
unit lane therefore runs with every compiler and ksc replaced by a script that
fails and records the call (``install_guard``): a test that compiles in the
unit lane fails there, naming the program it ran, instead of slowing the lane
down unnoticed. CI runs the unit lane this way (scripts/test.sh).
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import os
import re
import shlex
import shutil
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

LANES = ("unit", "slow")

#: The `ksbind` CLI commands that compile (a test passing one of these to the
#: CLI, in process or in a subprocess, compiles).
BUILDING_COMMANDS = frozenset({"build"})
#: Names that build when they appear in Python code handed to a subprocess
#: (``run_python("import ksbind; ksbind.build(...)")``).
BUILDING_NAMES = frozenset({"build", "load", "load_ks", "build_spec", "built", "compile_objects", "examples",
                            "compile", "compile_for"})
#: `python -m TOOL` in a test's command line puts it in the slow lane: package
#: builds and installs compile (or take seconds each), and a cold mypy run
#: compiles nothing but takes tens of seconds (it reads torch's stubs).
HEAVY_TOOLS = ("mypy", "build", "pip")


#: The functions that compile or run ksc, as "module:name". A name ksbind no
#: longer has is skipped (the guard still catches what it did).
COMPILING = (
    "ksbind.pipeline:full_build", "ksbind.pipeline:build_spec", "ksbind.pipeline:build_configs",
    "ksbind.pipeline:_build_resolved", "ksbind.load:load_ks", "ksbind.load:_load",
    "ksbind.compile_api:compile", "ksbind.compile_api:CompiledFunction",
    "ksbind.backend.compile:compile_objects", "ksbind.backend.compile:link", "ksbind.backend.build:build_module",
    "ksbind.backend.native:build_plan", "ksbind.targets.torch.build:build_planned",
    "ksbind.targets.jax.build:build_planned", "ksbind.backend.pch:build", "ksbind.backend.pch:start_background",
    "ksbind.targets.torch.link_stub:make", "ksbind.targets.torch.link_stub:start",
    "ksbind.ksc.driver:compile_ks", "ksbind.ksc.driver:run_ksc",
    "ksbind.build_meta:build_wheel", "ksbind.build_meta:build_editable", "ksbind.standalone:build_into",
    "ksbind.editable:build_for_import",
    "tests.e2e_support:built", "tests.abi3_support:build_wheel",
    # The session's build cache: what a test hands a subprocess that builds.
    "tests.e2e_support:session_cache_dir",
)


@functools.cache
def compiling_functions() -> frozenset[int]:
    """ids of the COMPILING functions (with the public face's wrappers of them)."""
    import ksbind

    found: list[object] = [getattr(ksbind, name) for name in ("build", "load_ks", "compile")]
    for where in COMPILING:
        module_name, name = where.split(":")
        try:
            found.append(getattr(importlib.import_module(module_name), name))
        except (ImportError, AttributeError):
            continue
    ids = set()
    for f in found:
        ids.add(id(f))
        wrapped = getattr(f, "__wrapped__", None)
        if wrapped is not None:
            ids.add(id(wrapped))
    return frozenset(ids)


# ------------------------------------------------------------------ the rule


def lane_of(functions: Iterable[Callable[..., Any]], params: Iterable[object] = ()) -> str | None:
    """Why these (a test, its fixtures' functions) compile, or None: the first
    compiling reference found, as "module.function: what"."""
    for value in params:
        reason = _reason_of_value(value, "a parameter")
        if reason:
            return reason
    for f in functions:
        reason = _reason_of_function(f)
        if reason:
            return reason
    return None


#: Modules of tests/ whose functions the rule does not read: the lanes' own machinery.
NOT_READ = ("tests.lanes", "tests.conftest")


def _is_tests_function(value: object) -> bool:
    module = getattr(value, "__module__", None) or ""
    return (isinstance(value, FunctionType) and (module == "tests" or module.startswith("tests."))
            and module not in NOT_READ)


def _reason_of_value(value: object, where: str) -> str | None:
    if id(value) in compiling_functions():
        return f"{where} uses {getattr(value, '__qualname__', value)}"
    if isinstance(value, (Path, str)) and os.sep in str(value) and is_guarded(Path(value).name):
        return f"{where} is {Path(value).name} ({value})"
    if isinstance(value, str) and len(value) > 20:
        text_reason = _reason_of_text(value)
        return f"{where}: {text_reason}" if text_reason else None
    if _is_tests_function(value):
        assert isinstance(value, FunctionType)
        return _reason_of_function(value)
    return None


@functools.cache
def _module_tree(module: ModuleType) -> ast.Module | None:
    try:
        return ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return None


def _function_node(f: FunctionType) -> ast.AST | None:
    """The def of f in its module's source (decorators included)."""
    module = inspect.getmodule(f)
    tree = _module_tree(module) if module is not None else None
    if tree is not None:
        line = f.__code__.co_firstlineno
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if first == line or node.lineno == line:
                    return node
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError):
        return None


_seen: dict[int, str | None] = {}
_kept: list[object] = []  # what _seen's ids are of: kept alive, so no id is reused
_open: set[int] = set()   # the functions being read now (a cycle of helpers ends at them)


def _reason_of_function(f: Callable[..., Any]) -> str | None:
    f = inspect.unwrap(f)
    if not isinstance(f, FunctionType):
        return None
    key = id(f)
    if key in _seen:
        return _seen[key]
    if key in _open:
        return None  # read further up: what it finds is said there
    _open.add(key)
    try:
        node = _function_node(f)
        reason = None if node is None else _reason_of_node(node, f)
    finally:
        _open.discard(key)
    found = None if reason is None else f"{f.__module__}.{f.__qualname__}: {reason}"
    # "Compiles nothing" is known only once no function it reaches is still being read.
    if found is not None or not _open:
        _seen[key] = found
        _kept.append(f)
    return found


def _local_imports(node: ast.AST) -> dict[str, object]:
    """What the function's own import statements bind."""
    names: dict[str, object] = {}
    for n in ast.walk(node):
        try:
            if isinstance(n, ast.Import):
                for a in n.names:
                    top = a.name.split(".")[0]
                    names[a.asname or top] = importlib.import_module(a.name if a.asname else top)
            elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                module = importlib.import_module(n.module)
                for a in n.names:
                    if hasattr(module, a.name):
                        names[a.asname or a.name] = getattr(module, a.name)
        except ImportError:
            continue
    return names


def _fixture_functions(namespace: dict[str, object]) -> list[FunctionType]:
    """The functions of the fixtures defined in (or imported into) a module."""
    found = (getattr(value, "_fixture_function", None) for value in namespace.values())
    return [f for f in found if isinstance(f, FunctionType)]


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _resolve(parts: list[str], namespace: dict[str, object]) -> Iterator[object]:
    """Each prefix's value of a dotted name (a.b.c: a, a.b, a.b.c), while it resolves."""
    if parts[0] not in namespace:
        return  # a local variable or a builtin
    value = namespace[parts[0]]
    yield value
    for attr in parts[1:]:
        try:
            value = getattr(value, attr)
        except Exception:  # a lazy attribute that fails to import: nothing to see
            return
        yield value


def _reason_of_node(node: ast.AST, f: FunctionType) -> str | None:
    namespace: dict[str, object] = dict(f.__globals__)
    if f.__closure__:
        for name, cell in zip(f.__code__.co_freevars, f.__closure__):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:
                pass
    namespace.update(_local_imports(node))
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == "getfixturevalue":
            # A fixture named at run time: any of those the module can see.
            for fixture in _fixture_functions(namespace):
                reason = _reason_of_function(fixture)
                if reason:
                    return f"request.getfixturevalue: {reason}"
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load):
            parts = _dotted(n)
            if parts is None:
                continue
            for value in _resolve(parts, namespace):
                if value is f:
                    continue
                reason = _reason_of_value(value, ".".join(parts))
                if reason:
                    return reason
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            reason = _reason_of_text(n.value)
            if reason:
                return reason
        elif isinstance(n, (ast.List, ast.Tuple)):
            words = [e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            first = n.elts[0] if n.elts else None
            if (len(n.elts) > 1 and isinstance(first, ast.Constant) and isinstance(first.value, str)
                    and is_guarded(first.value)):
                return f"a command line that runs {first.value}"
            if words and words[0] in BUILDING_COMMANDS:
                return f"the ksbind command line {words!r}"
            if "ksbind" in words and any(w in BUILDING_COMMANDS for w in words):
                return f"the command line {words!r}"
            if any(isinstance(e, ast.Starred) and _is_compiler(e.value) for e in n.elts):
                return "a command line that runs the toolchain's compiler"
            if any(words[i:i + 2] == ["-m", tool] for i in range(len(words)) for tool in HEAVY_TOOLS):
                return f"the command line {words!r} (runs {', '.join(HEAVY_TOOLS)})"
    return None


def _is_compiler(node: ast.expr) -> bool:
    """`tc.cxx` or `compiler()`: the compiler of a command line being built."""
    if isinstance(node, ast.Attribute):
        return node.attr == "cxx"
    if isinstance(node, ast.Call):
        parts = _dotted(node.func)
        return parts is not None and parts[-1] in ("compiler", "launcher")
    return False


def _reason_of_text(text: str) -> str | None:
    """Python code in a string (for a subprocess, whole or a piece of an f-string) that builds."""
    if "ksbind" not in text and "tests." not in text:
        return None
    found = _BUILDING_CALL.search(text)
    return f"a subprocess's Python code calls {found.group(1)}" if found else None


_BUILDING_CALL = re.compile(r"\b(" + "|".join(sorted(BUILDING_NAMES)) + r")\s*\(")


# ------------------------------------------------------------------ the guard

#: Programs the unit lane must not run: compilers, linkers, launchers and ksc.
GUARDED = ("g++", "gcc", "c++", "cc", "clang", "clang++", "ld", "ccache", "sccache", "ksc")
_GUARDED_PREFIXES = ("g++-", "gcc-", "clang-", "clang++-", "x86_64-linux-gnu-", "aarch64-linux-gnu-", "ld.")

GUARD_MESSAGE = ("ksbind's unit test lane: {program} is not available here. A test that compiles or runs ksc "
                 "belongs in the slow lane: see tests/lanes.py")


def is_guarded(name: str) -> bool:
    """Whether a program's name is a compiler, linker, compiler launcher or ksc's."""
    return name in GUARDED or (name.startswith(_GUARDED_PREFIXES)
                               and any(part in name for part in ("gcc", "g++", "clang", "ld")))


def _guarded_names(path: str) -> set[str]:
    names = set(GUARDED)
    for folder in path.split(os.pathsep):
        try:
            names.update(e for e in os.listdir(folder or ".") if is_guarded(e))
        except OSError:
            continue
    return names


def guard_env(folder: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables under which no compiler and no ksc can run: each is a
    script (in folder/bin) that appends its command line to folder/calls.log and
    fails with GUARD_MESSAGE. KSBIND_SHARED points at a copy of the shared
    folder made of links, except ksc's binary (tests that skip without ksc run,
    and fail)."""
    from tests.conftest import SHARED

    environ = dict(os.environ if environ is None else environ)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = folder / "calls.log"
    log.touch()
    for name in sorted(_guarded_names(environ.get("PATH", ""))):
        script = bin_dir / name
        real = shutil.which(name, path=environ.get("PATH", ""))
        # Asking a compiler its version compiles nothing (the toolchain's key does): passed through.
        version = (f'case "$*" in --version|-dumpversion|-dumpfullversion|-dumpmachine) exec {shlex.quote(real)} "$@";; '
                   "esac\n") if real and name != "ksc" else ""
        script.write_text("#!/bin/sh\n" + version +
                          f"printf '%s\\n' \"{name} $*\" >> '{log}'\n"
                          f"echo \"{GUARD_MESSAGE.format(program=name)}\" >&2\n"
                          "exit 97\n")
        script.chmod(0o755)
    shared = folder / "shared"
    (shared / "ksc" / "bin").mkdir(parents=True, exist_ok=True)
    if SHARED.is_dir():
        for entry in SHARED.iterdir():
            if entry.name != "ksc" and not (shared / entry.name).exists():
                (shared / entry.name).symlink_to(entry)
        for entry in (SHARED / "ksc").iterdir() if (SHARED / "ksc").is_dir() else ():
            if entry.name != "bin" and not (shared / "ksc" / entry.name).exists():
                (shared / "ksc" / entry.name).symlink_to(entry)
    ksc = shared / "ksc" / "bin" / "ksc"
    if not ksc.exists():
        ksc.symlink_to(bin_dir / "ksc")
    environ.update({
        "PATH": os.pathsep.join([str(bin_dir), environ.get("PATH", "")]),
        "CXX": str(bin_dir / "g++"), "CC": str(bin_dir / "gcc"), "KSC": str(bin_dir / "ksc"),
        "KSBIND_CCACHE": "0", "KSBIND_SHARED": str(shared), "KSBIND_TEST_LANE_LOG": str(log),
    })
    return environ


def install_guard(folder: Path) -> Path:
    """The guard in this process's environment (and so its subprocesses'); returns
    the shared folder tests must use instead of the real one."""
    env = guard_env(folder)
    os.environ.update(env)
    return Path(env["KSBIND_SHARED"])


def guard_calls() -> list[str]:
    """What has tried to run a guarded program so far (empty when no guard is installed)."""
    log = os.environ.get("KSBIND_TEST_LANE_LOG")
    if not log or not Path(log).is_file():
        return []
    return Path(log).read_text(encoding="utf-8", errors="replace").splitlines()
