"""The ``ksbind`` command. Bad input prints one line and exits 2."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ksbind._version import __version__
from ksbind.errors import KsbindError, KsbindWarning

if TYPE_CHECKING:
    from ksbind.lang.model import FunctionDecl


#: Every environment variable ksbind reads (its Python code and the generated
#: modules' C++ headers), for ``--help``'s ENVIRONMENT section; tests/test_cli.py
#: checks it against the code.
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("KSC", "the ksc binary when a config's ksc: names no path (else ksc on PATH)"),
    ("KSC_RUNTIME", "ksc's runtime folder when ksc: names none (else runtime/ beside ksc's bin/)"),
    ("KSBIND_VERBOSE", "0 warnings only, 1 progress (default), 2 also compiler command lines; -q/-v win"),
    ("KSBIND_CACHE_DIR", "the build cache (default $XDG_CACHE_HOME/ksbind, else ~/.cache/ksbind)"),
    ("XDG_CACHE_HOME", "see KSBIND_CACHE_DIR"),
    ("KSBIND_CACHE_MAX_BYTES", "the cache's size cap, e.g. 500M (default 2G)"),
    ("KSBIND_JOBS", "compiler processes at once, across all modules of a build (default: one per CPU)"),
    ("CXX", "the C++ compiler, may carry arguments (default g++)"),
    ("KSBIND_CXXFLAGS", "extra compiler flags (part of the cache key)"),
    ("KSBIND_CCACHE", "a compiler launcher, or 0 for none (default: ccache when installed)"),
    ("SCCACHE_BASEDIRS", "with KSBIND_CCACHE=sccache: folders sccache strips from paths (ksbind adds its cache "
                         "folder for the compiles it runs; docs/building.md)"),
    ("KSBIND_OBJECT_CACHE", "0: no per-unit object cache"),
    ("KSBIND_PCH", "0: no precompiled header"),
    ("KSBIND_LINKER", "the linker (-fuse-ld=NAME), or default for the compiler's own (default: lld, else gold, "
                      "when installed)"),
    ("KSBIND_NOOP", "0: no no-op build records: ksbind.build(config) renders and looks up the cache every time"),
    ("KSBIND_ARENA_BYTES", "a built module's allocator arena size, read when it loads"),
    ("KSBIND_GIL_RELEASE_ELEMENTS", "a built module releases the GIL for calls on at least this many elements"),
    ("KSBIND_CPU_CAPABILITY", "torch modules: cap the SIMD kernels used (default, avx2, avx512)"),
    ("KSBIND_VECTOR_MATH", "0: torch modules' kernels call ks's exp, erf, sin, tanh... as scalar double functions "
                           "rather than through libmvec's vector float ones, and divide as written (part of the "
                           "cache key)"),
    ("PATH", "where ksc, the compiler and its launcher are found; a wheel build (ksbind.build_meta) puts its "
             "Python's scripts folder first to run auditwheel"),
)

#: ``ksbind build`` of several modules where some failed (each one is reported; the others were built).
PARTIAL_FAILURE = 3

_CONFIG_HELP = "a YAML config file (one module, or several under modules:; see docs/config.md)"
_TEMPLATES_HELP = "a template override folder, searched before the built-in templates (repeatable)"


def _epilog() -> str:
    width = max(len(name) for name, _ in ENVIRONMENT)
    lines = ["environment:"]
    for name, text in ENVIRONMENT:
        lines += textwrap.wrap(text, 79, initial_indent=f"  {name.ljust(width)}  ",
                               subsequent_indent=" " * (width + 4))
    return "\n".join(lines) + ("\n\nexit status: 0 ok, 1 --check found changes, 2 bad input, 3 some modules of a build "
                               "failed (the others were built), 130 interrupted.")


def _parser() -> argparse.ArgumentParser:
    # -v/-q on every command; SUPPRESS keeps a subcommand from overwriting another's value.
    common = argparse.ArgumentParser(add_help=False)
    loud = common.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=2, default=argparse.SUPPRESS,
                      help="also show the compiler's command lines (KSBIND_VERBOSE=2)")
    loud.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=0, default=argparse.SUPPRESS,
                      help="show warnings and errors only, no progress (KSBIND_VERBOSE=0)")
    epilog = _epilog()

    def command(parent: argparse._SubParsersAction, name: str, help: str,  # type: ignore[type-arg]
                description: str | None = None) -> argparse.ArgumentParser:
        text = textwrap.fill(description or help[:1].upper() + help[1:] + ".", 79)
        sub: argparse.ArgumentParser = parent.add_parser(
            name, help=help, description=text, parents=[common], epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        return sub

    p = argparse.ArgumentParser(prog="ksbind", description="Bind Knossos-compiled functions to Python and PyTorch.",
                                parents=[common], epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ksbind {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="one of these (ksbind COMMAND --help describes its arguments):")

    g = command(sub, "generate", "write the generated C++ for each config")
    g.add_argument("configs", nargs="+", metavar="CONFIG", help=_CONFIG_HELP)
    g.add_argument("-o", "--out-dir", metavar="DIR", help="write each module to DIR/NAME instead of its 'output'")
    g.add_argument("--check", action="store_true", help="write nothing; exit 1 listing files that would change")
    g.add_argument("--templates", action="append", default=[], metavar="DIR", help=_TEMPLATES_HELP)
    g.add_argument("--dump-context", metavar="FILE", help="also write the template context as JSON to FILE")

    c = command(sub, "check", "validate configs and declarations, render in memory, write nothing")
    c.add_argument("configs", nargs="+", metavar="CONFIG", help=_CONFIG_HELP)
    c.add_argument("--templates", action="append", default=[], metavar="DIR", help=_TEMPLATES_HELP)

    b = command(sub, "build", "generate, compile and import each config's module",
                "Generate, compile (cached: an unchanged module is not compiled again) and import each "
                "config's module; print where each one is. Progress lines go to stderr.")
    b.add_argument("configs", nargs="+", metavar="CONFIG", help=_CONFIG_HELP)
    b.add_argument("--templates", action="append", default=[], metavar="DIR", help=_TEMPLATES_HELP)

    s = command(sub, "stubs", "write each config's module stub NAME.pyi into a folder",
                "Write each config's module stub, NAME.pyi, into DIR, where type checkers and editors find "
                "it (put DIR on MYPYPATH, or in pyright's stubPath). Nothing is compiled.")
    s.add_argument("configs", nargs="+", metavar="CONFIG", help=_CONFIG_HELP)
    s.add_argument("-o", "--out-dir", metavar="DIR", required=True, help="the folder to write NAME.pyi into")
    s.add_argument("--templates", action="append", default=[], metavar="DIR", help=_TEMPLATES_HELP)

    d = command(sub, "decls", "list the functions a .ks/.kso file declares, or ksc's prelude (--prelude)")
    d.add_argument("file", metavar="FILE", nargs="?", help="a .ks or .kso file")
    d.add_argument("--prelude", action="store_true",
                   help="list the functions of the prelude.ks of ksc's runtime (found as --ksc-runtime, "
                        "$KSC_RUNTIME, else runtime/ beside ksc: --ksc PATH, $KSC, ksc on PATH), then "
                        "those of its prelude-aten.ks (the aten:: functions) when it has one, each "
                        "with its ks signature and the derivatives the prelude writes for it")
    d.add_argument("--ksc", nargs="?", const="", metavar="PATH",
                   help="compile the .ks file with ksc first and list what its .kso states (PATH: the ksc "
                        "binary; default $KSC, then ksc on PATH)")
    d.add_argument("--ksc-runtime", metavar="DIR", help="ksc's runtime folder (default $KSC_RUNTIME)")

    t = command(sub, "templates", "list or eject the built-in templates")
    tsub = t.add_subparsers(dest="templates_command", required=True, metavar="{list,eject}",
                            help="what to do with the built-in templates")
    command(tsub, "list", "show every built-in template and its blocks")
    e = command(tsub, "eject", "copy built-in templates out for editing")
    e.add_argument("dir", metavar="DIR", help="the folder to copy them into (use it as a templates: folder)")
    e.add_argument("names", nargs="*", metavar="NAME", help="the templates to copy (default: all)")
    e.add_argument("--force", action="store_true", help="overwrite files in DIR that differ from the built-ins")

    command(sub, "schema", "print the JSON Schema of ksbind configs",
            "Print the JSON Schema of ksbind configs (the file ksbind ships as ksbind/config.schema.json). "
            "Save it and name it in a config's first line, '# yaml-language-server: $schema=PATH', and "
            "editors with a YAML language server complete keys and mark mistakes as you type.")

    k = command(sub, "cache", "list or clean the build cache ($KSBIND_CACHE_DIR)")
    ksub = k.add_subparsers(dest="cache_command", required=True, metavar="{list,clean}",
                            help="what to do with the cache")
    command(ksub, "list", "one line per cached build and ksc output: size and last use")
    kc = command(ksub, "clean", "remove cache entries (default: least recently used ones, down to the "
                                "size cap KSBIND_CACHE_MAX_BYTES)")
    which = kc.add_mutually_exclusive_group()
    which.add_argument("--older-than", type=_days, metavar="DAYS", help="remove entries not used for DAYS days")
    which.add_argument("--all", action="store_true", help="remove every entry")
    return p


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days >= 0 or days == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of days (0 or more), found {text!r}")
    return days


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from ksbind import log

    try:
        with warnings.catch_warnings(), log.verbosity(getattr(args, "verbosity", None)):
            warnings.simplefilter("always", KsbindWarning)
            warnings.showwarning = _show_warning
            try:
                code = _run(args)
            except KsbindError as e:
                print(f"ksbind: error: {e}".replace("\n", " "), file=sys.stderr)
                code = 2
            sys.stdout.flush()  # here, not at exit: a closed pipe is caught below
            return code
    except KeyboardInterrupt:
        # Builds write through staging folders and atomic renames: nothing half-written is left.
        print("ksbind: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `ksbind ... | head -1`: the reader left. Point stdout at /dev/null so the
        # interpreter's own flush at exit fails no more, and exit as SIGPIPE would.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """ksbind's warnings as one line each, like its errors."""
    text = str(message).replace("\n", " ")
    prefix = "ksbind: warning: " if issubclass(category, KsbindWarning) else f"{category.__name__}: "
    print(prefix + text, file=sys.stderr)


def _prelude_listing(args: argparse.Namespace) -> str:
    """``ksbind decls --prelude``: the runtime's prelude.ks, then its prelude-aten.ks (when there is
    one: ksc reads it before sources that call aten:: functions), one line per function each
    defines or edefs, with the derivatives it writes by hand (those ksc does not derive)."""
    from ksbind.ksc.driver import ATEN_PRELUDE, ksc_runtime
    from ksbind.spec import KscSpec

    if args.file is not None:
        raise KsbindError(f"decls --prelude takes no FILE (given {args.file}): it lists ksc's prelude.ks")
    runtime = ksc_runtime(KscSpec(Path(args.ksc) if args.ksc else None,
                                  Path(args.ksc_runtime) if args.ksc_runtime else None, set_by="cli"))
    lines: list[str] = []
    for prelude in (runtime / "prelude.ks", runtime / ATEN_PRELUDE):
        if prelude.name == "prelude.ks" or prelude.is_file():
            lines += _prelude_lines(prelude)
    return "\n".join(lines)


def _prelude_lines(prelude: Path) -> list[str]:
    """One prelude file's listing: a header line, then a line per function."""
    from ksbind.lang.reader import read_text, scan_ks

    source = scan_ks(read_text(prelude), str(prelude))
    written: dict[str, set[str]] = {}
    for d in source.decls:
        if d.name.is_derived:  # [rev [f T]] or [rev f]: keyed by [f T], else by f
            inner = d.name.base_name
            written.setdefault(str(inner) if inner.arg_type is not None else inner.name, set()).add(
                d.name.derivations[0])
    asked = {str(g.target): {x.kind for x in source.gdefs if x.target == g.target} for g in source.gdefs}
    lines = [f"# {prelude}: def|edef [NAME ARGUMENT-TYPE] -> RESULT-TYPE; the derivatives it writes by hand, "
             "and those it asks ksc for (gdef)"]
    for d in source.decls:
        if d.name.is_derived:
            continue
        notes = []
        own = written.get(str(d.name), set()) | written.get(d.name.name, set())
        if own:
            notes.append("written: " + ", ".join(sorted(own)))
        if str(d.name) in asked:
            notes.append("gdef: " + ", ".join(sorted(asked[str(d.name)])))
        lines.append(f"{d.origin} {d.name} -> {d.return_type}" + (f"  ({'; '.join(notes)})" if notes else ""))
    return lines


def _decls(args: argparse.Namespace) -> list[FunctionDecl]:
    """A file's declarations; with --ksc, those of the .kso ksc writes for it (the file's own functions)."""
    from ksbind.lang.reader import read_ks

    if args.file is None:
        raise KsbindError("decls needs a FILE (a .ks or .kso file), or --prelude")
    if args.ksc is None:
        return read_ks(args.file)
    from ksbind.resolve import resolve_spec
    from ksbind.spec import KscSpec, ModuleSpec, RuntimeSpec

    path = Path(args.file).resolve()
    spec = ModuleSpec(name="decls", config_path=path, target="ks", ks_files=(path,),
                      runtime=RuntimeSpec(bundled=False, from_ksc=True),
                      ksc=KscSpec(Path(args.ksc) if args.ksc else None,
                                  Path(args.ksc_runtime) if args.ksc_runtime else None, set_by="cli"))
    resolved = resolve_spec(spec)
    own = {b.decl.name.base_name for b in resolved.bindings}
    return [d for d in resolved.decls if d.name.base_name in own]


def _cache(args: argparse.Namespace) -> int:
    """``ksbind cache list|clean``: a filesystem fault there is one line (exit 2)."""
    from ksbind.cache.layout import cache_fault, cache_root, check_root
    from ksbind.cache.maintenance import cache_max_bytes

    root = cache_root()
    cap = cache_max_bytes()
    check_root(root)  # a file there is not an empty cache
    if args.cache_command == "clean" and os.path.isdir(root) and not os.access(root, os.W_OK):
        raise KsbindError(f"cannot clean the build cache {root}: it is read-only (or not writable by this user);"
                          " make it writable, or set KSBIND_CACHE_DIR to the cache to clean")
    try:
        return _cache_command(args, root, cap)
    except OSError as e:
        fault = cache_fault(e, root)
        if fault is None:
            raise
        raise fault from None


def _cache_command(args: argparse.Namespace, root: Path, cap: int) -> int:
    import time

    from ksbind.cache.maintenance import EVICT_MIN_IDLE_SECONDS, clean, format_size, scan

    def when(t: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))

    if args.cache_command == "list":
        entries = sorted(scan(root), key=lambda e: -e.last_used)
        rows = [(e.module, e.key, e.target + (f" ({e.note})" if e.note else ""), format_size(e.size),
                 when(e.last_used)) for e in entries]
        header = ("MODULE", "KEY", "KIND", "SIZE", "LAST USED")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        if rows:
            for r in [header, *rows]:
                print("  ".join(c.rjust(w) if i == 3 else c.ljust(w) for i, (c, w) in
                                enumerate(zip(r, widths))).rstrip())
        total = sum(e.size for e in entries)
        shared = [e for e in scan(root, details=False, shared=True) if e.kind in ("object", "pch")]
        parts = (f"; shared by all modules: {sum(e.kind == 'object' for e in shared)} objects, "
                 f"{sum(e.kind == 'pch' for e in shared)} precompiled headers, "
                 f"{format_size(sum(e.size for e in shared))}") if shared else ""
        print(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {format_size(total)} in "
              f"{root} (cap {format_size(cap)}){parts}")
        return 0
    report = clean(root, older_than_days=args.older_than, everything=args.all)
    for e in report.removed:
        if e.kind not in ("object", "pch"):  # the shared parts: one line below
            print(f"removed {e.path.name} ({e.module}, {format_size(e.size)}, last used "
                  f"{when(e.last_used)})")
    shared = [e for e in report.removed if e.kind in ("object", "pch")]
    if shared:
        print(f"removed {len(shared)} shared objects and precompiled headers "
              f"({format_size(sum(e.size for e in shared))})")
    for e in report.skipped:
        print(f"kept {e.path.name} ({e.module}): it is being built")
    print(f"freed {format_size(report.freed)} ({len(report.removed)} "
          f"entr{'y' if len(report.removed) == 1 else 'ies'} removed) in {root}")
    if args.older_than is None and not args.all:
        left = sum(e.size for e in scan(root) if e.kind in ("module", "ksc"))
        if left > cap:
            print(f"still {format_size(left)}, over the cap of {format_size(cap)}: the rest "
                  f"was used in the last {EVICT_MIN_IDLE_SECONDS / 60:.0f} minutes or is being built")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.command == "cache":
        return _cache(args)
    if args.command == "schema":  # the shipped file: nothing to import or render
        sys.stdout.write((Path(__file__).parent / "config.schema.json").read_text(encoding="utf-8"))
        return 0
    from ksbind import pipeline

    if args.command == "generate":
        if args.check:
            stale = pipeline.stale_files(args.configs, args.out_dir, args.templates)
            for path in stale:
                print(f"would change: {path}")
            return 1 if stale else 0
        modules = pipeline.prepare(args.configs, args.out_dir, args.templates)
        from ksbind.codegen.output import write_planned
        if args.dump_context:
            from ksbind.codegen.context import context_to_json
            dump = {m.spec.name: context_to_json(m.rendered.context) for m in modules}
            from ksbind.fileio import write_atomic
            write_atomic(Path(args.dump_context), json.dumps(dump, indent=2, sort_keys=True) + "\n")
        for m in modules:
            written = write_planned(m.planned)
            print(f"{m.spec.name}: {len(m.planned)} files in {m.out_dir} ({len(written)} changed)")
        return 0
    if args.command == "check":
        modules = pipeline.prepare(args.configs, None, args.templates)
        for m in modules:
            print(f"{m.spec.name}: ok ({len(m.rendered.context['entry_points'])} entry points, "
                  f"target {m.spec.target})")
        return 0
    if args.command == "build":
        from ksbind.errors import BatchBuildError
        from ksbind.pipeline import build_configs
        try:
            built = build_configs(args.configs, templates=args.templates)
        except BatchBuildError as e:
            for name, module in e.built:
                print(f"{name}: built {getattr(module, '__file__', module)}")
            sys.stdout.flush()
            for f in e.failures:
                print(f"ksbind: error: {f.config}: module {f.module}: {f.error}".replace("\n", " "),
                      file=sys.stderr)
            print(f"ksbind: {len(e.failures)} of {e.total} modules failed to build", file=sys.stderr)
            return PARTIAL_FAILURE
        for name, module in built:
            print(f"{name}: built {getattr(module, '__file__', module)}")
        return 0
    if args.command == "stubs":
        for path in pipeline.write_stubs(args.configs, args.out_dir, args.templates):
            print(f"wrote {path}")
        return 0
    if args.command == "decls" and args.prelude:
        print(_prelude_listing(args))
        return 0
    if args.command == "decls":
        for d in _decls(args):
            params = ", ".join(d.cpp_param_types)
            print(f"{d.name}\n    symbol: ks::{d.cpp_symbol}\n    C++:    {d.cpp_return_type} "
                  f"{d.cpp_symbol}(ks::allocator *{', ' + params if params else ''})")
        return 0
    if args.command == "templates":
        from ksbind.codegen import authoring
        if args.templates_command == "list":
            print(authoring.describe_templates())
            return 0
        for path in authoring.eject(args.dir, args.names, force=args.force):
            print(f"ejected {path}")
        return 0
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
