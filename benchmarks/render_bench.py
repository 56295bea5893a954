"""How long rendering N bindings takes (ks target, split layout).

Measures, best of --repeat runs:
  default   render_module with the built-in templates
  override  the same with a one-block override (the `call` block of entry_points.cpp.j2)
  fstring   a plain f-string generator of the same files (three C++ files and the
            .pyi stub), written here from the same Bindings (what ksbind would be
            without templates and the context layer)

and prints each time and the ratios override/default and default/fstring
(target: <= 3.0), checking that the f-string output is byte-identical to the
templates' C++ output (apart from each file's stamp line).

    python -m benchmarks.render_bench [--n 10000] [--repeat 3] [--profile]
"""
from __future__ import annotations

import cProfile
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ksbind
from benchmarks.timing import parser
from ksbind.binding import select_bindings
from ksbind.codegen.render import cpp_string
from ksbind.lang.model import FunctionDecl
from ksbind.lang.types import TupleType
from ksbind.spec import Binding, BindingSpec
from ksbind.support import SUPPORT_FUNCTIONS

SIGNATURES = [  # (argument types, result type): a mix of scalars, tensors and tuples
    ("Float", "Float"),
    ("(Tuple Float (Tensor 1 Float))", "(Tensor 1 Float)"),
    ("(Tensor 2 Float)", "Float"),
    ("(Tuple Integer Float Bool)", "(Tuple Float Float)"),
]


def declarations(n: int) -> tuple[list[FunctionDecl], list[BindingSpec]]:
    lines, specs = [], []
    for i in range(n):
        arg, ret = SIGNATURES[i % len(SIGNATURES)]
        params = arg[len("(Tuple "):-1].split(" ") if arg.startswith("(Tuple") else [arg]
        if arg == "(Tuple Float (Tensor 1 Float))":
            params = ["Float", "(Tensor 1 Float)"]
        lines.append(f"(edef [fn{i} {arg}] {ret} ({' '.join(params)}))")
        specs.append(BindingSpec(f"fn{i}", None, f"fn{i}_vjp" if i % 2 == 0 else None))
    return ksbind.parse_ks("\n".join(lines)), specs


# ------------------------------------------------------------------ the f-string generator

def fstring_files(bindings: list[Binding], module_doc: str, tensor_types: list[tuple[int, str]]) -> dict[str, str]:
    """entry_points.h, entry_points.cpp and module.cpp for the ks target, without templates."""
    decls_h, entries_h, bodies, defs = [], [], [], []
    seen: set[str] = set()
    for b in bindings:
        entries = [(b.name, b.decl, False)] + ([(b.vjp_name, b.vjp_decl, True)] if b.vjp_decl else [])
        for name, d, is_vjp in entries:
            assert name is not None and d is not None
            sym = d.cpp_symbol
            ret = d.cpp_return_type
            if sym not in seen:
                seen.add(sym)
                decls_h.append(f"{ret} {sym}(ks::allocator *{''.join(', ' + t for t in d.cpp_param_types)});")
            if is_vjp:
                primal = b.decl
                types = [t.cpp for t in primal.params] + [d.params[1].cpp]
                names = [f"arg{i}" for i in range(len(types))]
                first = ", ".join(names[:-1])
                packed = isinstance(primal.arg_type, TupleType)
                call = (f"ks::make_Tuple({first})" if packed else first) + f", {names[-1]}"
                py_names = _py_names(primal) + ["dret"]
                doc = (f"vjp of {primal.name}: gradient of each argument given the result's gradient. "
                       f"Calls {d.signature}")
            else:
                types = [t.cpp for t in d.params]
                names = [f"arg{i}" for i in range(len(types))]
                call = ", ".join(names)
                py_names = _py_names(d)
                doc = d.signature
            params = ", ".join(f"{t} {n}" for t, n in zip(types, names))
            ks_call = f"ks::{sym}(&g_alloc{', ' + call if call else ''})"
            probe = (f", [&](ks::allocator* probe) {{ (void)ks::{b.decl.cpp_symbol}(probe"
                     f"{''.join(', ' + n for n in names[:-1])}); }}") if is_vjp else ""
            site = f"static constexpr ksbind::CallSite {name}_site{{{cpp_string(name)}, {cpp_string(str(d.name))}}};\n"
            logged = '<< ", " '.join(f"<< ksbind::logged({n}) " for n in names)
            entries_h.append(f"{ret} {name}({params});")
            bodies.append(
                site + f"{ret} {name}({params}) {{\n"
                f"    const bool release_gil = ksbind::large_call({', '.join(names)});\n"
                f"    ksbind::ArenaLock arena(g_alloc, release_gil);\n"
                f"    if (g_logging) {{\n"
                f"        std::cerr << \"{sym}(\" {logged}<< \") =\" << std::endl;\n"
                f"        auto ret = arena.call({name}_site, release_gil, [&] {{ return {ks_call}; }}{probe});\n"
                f"        std::cerr << ksbind::logged(ret) << std::endl;\n"
                f"        return ret;\n"
                f"    }} else {{\n"
                f"        auto ret = arena.call({name}_site, release_gil, [&] {{ return {ks_call}; }}{probe});\n"
                f"        return ret;\n"
                f"    }}\n"
                f"}}\n")
            args = "".join(f', pybind11::arg("{p}")' for p in py_names)
            defs.append(f'    m.def("{name}", &ks::entry_points::generated::{name}, {cpp_string(doc)}{args});\n'
                        f'    ksbind::pybind::bad_calls::install(m.attr("{name}"));  // a bad call\'s message '
                        'summarises its arguments')
    ns_open = "namespace ks {\nnamespace entry_points {\nnamespace generated {\n"
    header = ("#pragma once\n\n#include <ksbind/entry_points.h>\n\n"
              "// The ks functions called below, as ksc declares them.\nnamespace ks {\n"
              + "".join(line + "\n" for line in decls_h) + "}\n\n" + ns_open + "\n"
              + "".join(line + "\n" for line in entries_h) + "\n}\n}\n}\n")
    source = "#include \"entry_points.h\"\n\n" + ns_open + "\n" + "".join(body + "\n" for body in bodies) + "}\n}\n}\n"
    tensors = "".join(f'    declare_tensor_{r}<ks::{e}>(m, "Tensor_{r}_{e}");\n' for r, e in tensor_types)
    module = ("#include <ksbind/pybind.h>\n#include <ksbind/ks_scalars.h>\n#include \"entry_points.h\"\n\n"
              "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
              f"    m.doc() = {cpp_string(module_doc)};\n"
              + "".join(f'    m.def("{f.name}", &{f.module_cpp}, {cpp_string(f.module_doc)});\n'
                        for f in SUPPORT_FUNCTIONS if not f.kernels_only) +
              "    ksbind::configure_module(100000000, false);\n\n"
              + tensors + "\n" + "".join(line + "\n" for line in defs) + "}\n")
    return {"entry_points.h": header, "entry_points.cpp": source, "module.cpp": module}


def fstring_stub(bindings: list[Binding], ctx_stub: str) -> str:
    """The .pyi's per-binding part, as the stub template writes it (its fixed prologue is copied)."""
    from ksbind.codegen.render import py_docstring
    from ksbind.targets.ks.target import py_type
    out = [ctx_stub]
    for b in bindings:
        entries = [(b.name, b.decl, False)] + ([(b.vjp_name, b.vjp_decl, True)] if b.vjp_decl else [])
        for name, d, is_vjp in entries:
            assert d is not None
            if is_vjp:
                primal = b.decl
                types = list(primal.params) + [d.params[1]]
                names = _py_names(primal) + ["dret"]
                doc = (f"vjp of {primal.name}: gradient of each argument given the result's gradient. "
                       f"Calls {d.signature}")
            else:
                types, names, doc = list(d.params), _py_names(d), d.signature
            params = ", ".join(f"{n}: {py_type(t, param=True)}" for n, t in zip(names, types))
            out.append(f"\n\ndef {name}({params}) -> {py_type(d.return_type)}:\n    {py_docstring(doc)}\n")
    return "".join(out)


def _py_names(d: FunctionDecl) -> list[str]:
    return list(d.param_names) if len(d.param_names) == len(d.params) else [f"arg{i}" for i in range(len(d.params))]


# ------------------------------------------------------------------ timing

def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()  # CPU time: a busy machine slows wall time unevenly
        fn()
        times.append(time.process_time() - t)
    return min(times)


@dataclass
class RenderCases:
    """The three ways of producing the same files, ready to time."""

    default: Callable[[], object]
    overridden: Callable[[], object]
    fstring: Callable[[], object]
    identical: bool      # f-string output == the templates' output (stamp lines aside)
    entry_points: int
    output_bytes: int


def render_cases(n: int) -> RenderCases:
    decls, specs = declarations(n)
    override = Path(tempfile.mkdtemp(prefix="ksbind-bench-"))
    (override / "entry_points.cpp.j2").write_text(
        '{% extends "builtin/entry_points.cpp.j2" %}\n{% block call %}\n'
        "        auto ret = {{ m.ks_call(e) }};  // overridden\n        return ret;\n{% endblock %}\n")

    def default() -> ksbind.codegen.render.RenderedModule:
        return ksbind.render_module(decls, "bench", "ks", bindings=specs)

    def overridden() -> ksbind.codegen.render.RenderedModule:
        return ksbind.render_module(decls, "bench", "ks", bindings=specs, templates=[override])

    def fstring() -> dict[str, str]:
        bindings = select_bindings(decls, specs)  # the same selection step as render_module
        doc = "ksbind ks-target bindings for: " + ", ".join(str(b.decl.name) for b in bindings)
        used: list[tuple[int, str]] = []
        for b in bindings:
            for d in [b.decl] + ([b.vjp_decl] if b.vjp_decl else []):
                for t in list(d.params) + [d.return_type]:
                    for sub in t.walk():
                        key = (getattr(sub, "rank", 0), str(getattr(sub, "element", "")))
                        if key[0] and key not in used:
                            used.append(key)
        return fstring_files(bindings, doc, used)

    rendered = default()
    # The stub's fixed part (stamp aside: imports, tensor classes, allocator functions), which
    # the f-string generator copies rather than re-implements.
    stub_text = rendered.files["bench.pyi"].split("\n", 1)[1]
    stub_head = stub_text[:stub_text.index("\n\n\ndef fn0(") + 1]

    def fstring_all() -> dict[str, str]:
        files = fstring()
        files["bench.pyi"] = fstring_stub(select_bindings(decls, specs), stub_head)
        return files

    plain = fstring_all()
    same = all(rendered.files[k].split("\n", 1)[1] == plain[k] for k in plain)
    return RenderCases(default, overridden, fstring_all, same, len(rendered.context["entry_points"]),
                       sum(len(v) for v in rendered.files.values()))


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=10_000, help="number of bindings (default 10000; half have a vjp)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one default render")
    args = ap.parse_args(argv)

    cases = render_cases(args.n)
    default, overridden, fstring_all = cases.default, cases.overridden, cases.fstring
    same, n_entries = cases.identical, cases.entry_points

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        default()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)

    t_default = best(default, args.repeat)
    t_override = best(overridden, args.repeat)
    t_fstring = best(fstring_all, args.repeat)
    size = cases.output_bytes
    print(f"{args.n} bindings ({n_entries} entry points), ks target, {size / 1e6:.1f} MB of output, "
          f"CPU seconds, best of {args.repeat}; Python {sys.version.split()[0]}")
    print(f"  default templates    {t_default:7.3f} s")
    print(f"  one-block override   {t_override:7.3f} s   ratio to default {t_override / t_default:.2f}")
    print(f"  f-string generator   {t_fstring:7.3f} s   default / f-string {t_default / t_fstring:.2f} "
          f"(target <= 3.0); f-string output identical to the templates': {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
