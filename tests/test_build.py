"""The build step: cache hits without the compiler (also in a new process),
compile errors as BuildError, nothing loadable left by a failed or killed
build, stale locks, two processes building at once, a runtime folder given
in the config instead of the bundled one, and ksbind's headers that no runtime
folder can shadow."""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import ksbind
from ksbind.backend.loader import import_from_path
from ksbind.backend.toolchain import ABI3_SUFFIX, INCLUDE_DIR, RUNTIME_DIR
from ksbind.cache.keys import extension_suffix
from ksbind.cache.locks import build_lock
from ksbind.errors import BuildError, KsbindError
from ksbind.pipeline import full_build as build
from ksbind.targets.registry import TARGETS, get_target
from tests.e2e_support import REPO, run_python, session_cache_dir

EXAMPLES = REPO / "examples"


def relu3_config(tmp: Path, name: str = "relu3_ext", extra: str = "", cpp: str | None = None) -> Path:
    """A copy of configs/relu3.yaml that writes its generated files under tmp."""
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(textwrap.dedent(f"""\
        name: {name}
        target: ks
        ks: [{EXAMPLES / 'relu3' / 'relu3.ks'}]
        cpp: [{cpp or EXAMPLES / 'relu3' / 'relu3.cpp'}]
        bindings:
          - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]", vjp: vrelu3_vjp}}
        output: {tmp / ('out_' + name)}
        """) + extra)
    return cfg


def fake_compiler(tmp: Path, body: str) -> dict[str, str]:
    """An environment whose PATH finds a fake ``g++`` first."""
    bindir = tmp / "fakebin"
    bindir.mkdir(exist_ok=True)
    gxx = bindir / "g++"
    gxx.write_text("#!/bin/sh\n" + body)
    gxx.chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}


def modules_in(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*.so") if p.name.endswith((extension_suffix(), ABI3_SUFFIX))
                  and not p.name.startswith("."))


def descendants(pid: int) -> list[int]:
    """Every process below pid (read from /proc), children before their children."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = [], [pid]
    while frontier:
        kids = [p for p, pp in parents.items() if pp in frontier]
        out.extend(kids)
        frontier = kids
    return out


# ------------------------------------------------------------ the cache

def test_cache_hit_in_a_fresh_process_does_not_run_the_compiler(relu3_ks: ModuleType, runtime: str,
                                                                  tmp_path: Path) -> None:
    marker = tmp_path / "compiler-was-run"
    env = fake_compiler(tmp_path, f'echo "$@" >> {marker}\nexit 1\n')
    env["KSBIND_TEST_CACHE_DIR"] = str(session_cache_dir())
    code = textwrap.dedent(f"""\
        import time, numpy as np, sys
        sys.path.insert(0, {str(REPO)!r})
        t0 = time.perf_counter()
        from tests.e2e_support import built
        m = built("relu3.yaml", runtime={runtime!r})
        print(m.__file__)
        print("seconds", time.perf_counter() - t0)
        print(np.asarray(m.vrelu3(np.array([2.0], dtype=np.float32)))[0])
        """)
    out = run_python(code, env=env, cwd=tmp_path)  # another cwd: the stamp line differs, the key must not
    assert out.returncode == 0, out.stderr
    assert not marker.exists(), "the compiler ran on a cache hit"
    lines = out.stdout.splitlines()
    assert lines[0] == relu3_ks.__file__
    assert float(lines[2]) == pytest.approx(2 - 2 / 3)
    assert "compiling" not in out.stderr


def test_key_changes_with_every_input(tmp_path: Path) -> None:
    from ksbind.backend.native import CompilePlan, cache_key

    src = tmp_path / "a.cpp"
    src.write_text("int x;")
    header = tmp_path / "a.h"
    header.write_text("// v1")
    plan = CompilePlan("m", (src,), (INCLUDE_DIR, tmp_path / "py1", tmp_path / "py2"), ("-O2",), ("g++",), tmp_path)
    base = cache_key(plan, "ks")
    assert cache_key(plan, "ks") == base
    assert cache_key(plan, "python") != base
    assert cache_key(CompilePlan("m", (src,), plan.include_dirs, ("-O3",), ("g++",), tmp_path), "ks") != base
    assert cache_key(CompilePlan("m", (src,), plan.include_dirs, ("-O2",), ("clang++",), tmp_path), "ks") != base
    header.write_text("// v2")  # a header beside a source
    assert cache_key(plan, "ks") != base
    header.write_text("// v1")
    src.write_text("int y;")
    assert cache_key(plan, "ks") != base


def test_key_covers_ksbind_headers_and_the_runtime_folder(tmp_path: Path) -> None:
    """ksbind's own headers live one folder down (include/ksbind/), and ksc's output
    #includes the runtime's knossos.cpp: a change to either is a new key."""
    from ksbind.backend.native import CompilePlan, cache_key

    src = tmp_path / "src" / "a.cpp"
    runtime, include = tmp_path / "runtime", tmp_path / "include"
    for d in (src.parent, runtime, include / "ksbind"):
        d.mkdir(parents=True)
    src.write_text("int x;")
    files = [runtime / "knossos.h", runtime / "knossos.cpp", include / "ksbind" / "entry_points.h"]
    for f in files:
        f.write_text("// v1")
    plan = CompilePlan("m", (src,), (runtime, include, tmp_path / "py1", tmp_path / "py2"), (), ("g++",), tmp_path)
    base = cache_key(plan, "ks")
    for f in files:
        f.write_text("// v2")
        assert cache_key(plan, "ks") != base, f
        f.write_text("// v1")
    assert cache_key(plan, "ks") == base


def test_lock_of_a_killed_holder_does_not_hang(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from ksbind.cache.locks import build_lock
        with build_lock(Path({str(lock)!r})):
            print("locked", flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    with pytest.raises(BuildError, match="timed out"):
        with build_lock(lock, timeout=0.3):
            pass
    holder.kill()
    holder.wait()
    holder.stdout.close()
    assert lock.exists()  # the file stays; the lock does not
    # Taken without waiting for anyone: a non-blocking try succeeds at once (no time bound to
    # flake on a loaded machine; a lock the dead holder still held would time out here).
    with build_lock(lock, timeout=0.001):
        pass


# ------------------------------------------------------------ failures

def test_compile_error_is_build_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.cpp"
    bad.write_text('#include "knossos.h"\nnamespace ks {\nint oops( {\n}\n')
    cache = tmp_path / "cache"
    with pytest.raises(BuildError) as info:
        build(relu3_config(tmp_path, "bad_ext", cpp=str(bad)), cache_dir=cache, quiet=True)
    err = info.value
    assert isinstance(err, KsbindError)
    msg = str(err)
    assert str(bad) in msg and "error" in msg and "\n" not in msg
    assert err.location is not None and err.location.file == str(bad)
    assert "full output:" in msg and (tmp_path / "out_bad_ext" / "bad.cpp.build.log").is_file()
    assert modules_in(cache) == []


def test_error_in_generated_code_names_the_generated_file(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "entry_points.cpp.j2").write_text(
        '{% extends "builtin/entry_points.cpp.j2" %}\n{% block namespace_close %}\n}\n}\n}\nthis is not C++;\n'
        '{% endblock %}\n')
    cfg = relu3_config(tmp_path, "badgen_ext", extra=f"templates: [{templates}]\n")
    with pytest.raises(BuildError) as info:
        build(cfg, cache_dir=tmp_path / "cache", quiet=True)
    generated = tmp_path / "out_badgen_ext" / "entry_points.cpp"
    assert str(generated) in str(info.value)
    assert "error" in str(info.value)


def test_failing_compiler_leaves_nothing_loadable(tmp_path: Path) -> None:
    # Writes half an output file, then fails: as a crashed or killed compiler would.
    env = fake_compiler(tmp_path, 'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo garbage > "$2"; fi; '
                                  'shift; done\necho "fatal error: compiler crashed" >&2\nexit 1\n')
    cache = tmp_path / "cache"
    cfg = relu3_config(tmp_path)
    code = f"import ksbind\nksbind.build({str(cfg)!r}, cache_dir={str(cache)!r})\n"
    out = run_python(code, env=env)
    assert out.returncode != 0 and "BuildError" in out.stderr and "compiler crashed" in out.stderr
    assert modules_in(cache) == []
    assert not [p for p in cache.iterdir() if p.name.startswith(".staging")]


def test_killed_build_then_two_concurrent_builds(tmp_path: Path) -> None:
    """A build killed mid-compile leaves a lock file and no module; the next two
    builds, started at once, both end with the same working module."""
    cache = tmp_path / "cache"
    cfg = relu3_config(tmp_path)
    code = textwrap.dedent(f"""\
        import sys, numpy as np
        import ksbind
        m = ksbind.build({str(cfg)!r}, cache_dir={str(cache)!r})
        r = np.asarray(m.vrelu3(np.array([-1.0, 0.5, 2.0], dtype=np.float32)))
        print(m.__file__)
        print(repr(r.tolist()))
        """)
    victim = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (cache.exists() and any(p.name.startswith(".staging") for p in cache.iterdir())):
        assert time.monotonic() < deadline and victim.poll() is None, "build never started compiling"
        time.sleep(0.05)
    time.sleep(0.5)
    for pid in [victim.pid, *descendants(victim.pid)]:  # the build and its compilers
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    victim.communicate()  # reaped, its pipes closed
    assert modules_in(cache) == []
    assert any(p.suffix == ".lock" for p in cache.iterdir())

    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, stderr) in zip(procs, outs):
        assert p.returncode == 0, stderr
    files = {o[0].splitlines()[0] for o in outs}
    assert len(files) == 1
    for stdout, _ in outs:
        assert stdout.splitlines()[1] == repr([0.0, pytest.approx(0.5 ** 3 / 3), pytest.approx(2 - 2 / 3)]) or \
            np.allclose(eval(stdout.splitlines()[1]), [0.0, 0.5 ** 3 / 3, 2 - 2 / 3], rtol=1e-6)
    compiled = sum("compiling" in stderr for _, stderr in outs)
    assert compiled == 1, [e for _, e in outs]  # one built it, the other waited and reused it
    assert len(modules_in(cache)) == 1


# ------------------------------------------------------------ runtime and config keys

def test_runtime_folder_from_config_and_config_keys(tmp_path: Path) -> None:
    """runtime: {include_dirs, sources} replaces the bundled runtime; arena_bytes
    and logging from the config take effect; `ksbind build` reuses the cache."""
    runtime = tmp_path / "ksc_runtime"
    runtime.mkdir()
    shutil.copy(RUNTIME_DIR / "knossos.h", runtime / "knossos.h")
    with open(runtime / "knossos.h", "a") as f:
        f.write("\n#define KSC_RUNTIME_COPY 1\nnamespace ks { int runtime_marker(); }\n")
    (runtime / "knossos.cpp").write_text('#include "knossos.h"\nint ks::runtime_marker() { return 42; }\n')
    src = tmp_path / "marked.cpp"
    src.write_text(textwrap.dedent("""\
        #include "knossos.h"
        #ifndef KSC_RUNTIME_COPY
        #error "the bundled runtime was used instead of the config's"
        #endif
        namespace ks {
        ks::Integer marker$ai(ks::allocator * $alloc, ks::Integer x) { return x + ks::runtime_marker(); }
        }
        """))
    cfg = tmp_path / "marked.yaml"
    cfg.write_text(textwrap.dedent("""\
        name: marked_ext
        target: ks
        declarations: (edef marker Integer (Integer))
        cpp: [marked.cpp]
        runtime: {include_dirs: [ksc_runtime], sources: [ksc_runtime/knossos.cpp]}
        arena_bytes: 2000000
        logging: true
        output: out
        """))
    cache = tmp_path / "cache"
    m = build(cfg, cache_dir=cache, quiet=True)
    assert m.marker(1) == 43
    assert m.arena_bytes() == 2_000_000
    env = {"KSBIND_CACHE_DIR": str(cache)}
    code = (f"import ksbind\nm = ksbind.build({str(cfg)!r})\nprint(m.marker(5))\n")
    out = run_python(code, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "47"
    assert "marker$ai(5) =" in out.stderr and "\n47\n" in out.stderr + "\n"  # logging: true
    cli = subprocess.run([sys.executable, "-m", "ksbind", "build", str(cfg)], env={**os.environ, **env},
                         capture_output=True, text=True, cwd=REPO)
    assert cli.returncode == 0, cli.stderr
    assert "marked_ext: built" in cli.stdout and "compiling" not in cli.stderr


def test_build_needs_a_name_for_multi_module_configs() -> None:
    with pytest.raises(BuildError, match="examples_ks"):
        ksbind.build(REPO / "configs" / "examples.yaml")
    with pytest.raises(BuildError, match="no module named 'nope'"):
        ksbind.build(REPO / "configs" / "examples.yaml", name="nope")


KSC_STYLE_TUPLE_RUNTIME = """\
// A runtime whose ks::Tuple is its own class (not std::tuple), as a ksc
// runtime may have: only the surface docs/knossos.md lists (make_Tuple, ks::get).
#pragma once
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
namespace ks {
typedef int Integer; typedef float Float; typedef bool Bool; typedef std::string String;
template <class... Ts> struct Tuple {
    std::tuple<Ts...> items;
    Tuple() = default;
    explicit Tuple(Ts... xs) : items(xs...) {}
};
template <class... Ts> Tuple<std::decay_t<Ts>...> make_Tuple(Ts&&... ts) {
    return Tuple<std::decay_t<Ts>...>(std::forward<Ts>(ts)...);
}
template <size_t I, class... Ts> auto& get(Tuple<Ts...>& t) { return std::get<I>(t.items); }
template <size_t I, class... Ts> const auto& get(const Tuple<Ts...>& t) { return std::get<I>(t.items); }
struct allocator {
    explicit allocator(size_t) {}
    void* allocate(size_t) { return nullptr; }
    size_t mark() const { return 0; }
    void reset(size_t) {}
    size_t peak() const { return 0; }
};
template <size_t D> struct tensor_dimension { typedef int index_type; };
template <size_t D, class T> struct tensor {
    typedef int index_type;
    int size() const { return 0; }
    int num_elements() const { return 0; }
    T* data() const { return nullptr; }
};
}
"""


def test_headers_work_with_a_runtime_whose_tuple_is_not_std_tuple(tmp_path: Path) -> None:
    """ksbind's headers use only the runtime surface: ks::Tuple as a class of its
    own converts to and from Python (pybind caster, python-target converters) and logs."""
    import sysconfig

    import pybind11

    (tmp_path / "knossos.h").write_text(KSC_STYLE_TUPLE_RUNTIME)
    (tmp_path / "t.cpp").write_text(textwrap.dedent("""\
        #include <ksbind/pybind.h>
        #include <sstream>
        using T = ks::Tuple<ks::Float, ks::Tuple<ks::Integer, ks::Bool>>;
        PYBIND11_MODULE(ksc_tuple_ext, m) {
            m.def("echo", [](T x) { return x; });
            m.def("logged", [](T x) { std::ostringstream os; os << ksbind::logged(x); return os.str(); });
            m.def("python", [](pybind11::handle h) {  // the python target's converters (C API)
                try {
                    return pybind11::reinterpret_steal<pybind11::object>(
                        ksbind::python::to_py(ksbind::python::from_py<T>(nullptr, h.ptr(), "x")).release());
                } catch (ksbind::python::error& e) {
                    e.restore();
                    throw pybind11::error_already_set();
                } });
        }
        """))
    so = tmp_path / f"ksc_tuple_ext{extension_suffix()}"
    proc = subprocess.run(["g++", "-O0", "-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden", f"-I{tmp_path}",
                           f"-I{INCLUDE_DIR}", *(f"-I{d}" for d in get_target("ks").include_dirs),
                           f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}",
                           str(tmp_path / "t.cpp"), "-o", str(so)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    m = import_from_path("ksc_tuple_ext", so)
    assert m.echo((1.5, (2, True))) == (1.5, (2, True))
    assert m.logged((1.5, (2, True))) == "(1.5, (2, true))"
    assert m.python([1.5, (2, True)]) == (1.5, (2, True))
    with pytest.raises(TypeError, match=r"'x\[1\]\[1\]': expected a bool"):
        m.python((1.5, (2, 3)))


def test_built_module_has_its_stub_beside_it(relu3_ks: ModuleType) -> None:
    """Editors and mypy find NAME.pyi next to the imported extension."""
    assert relu3_ks.__file__ is not None
    stub = Path(relu3_ks.__file__).with_name(f"{relu3_ks.__name__}.pyi")
    assert stub.is_file()
    text = stub.read_text()
    assert "def vrelu3(" in text and "def vrelu3_vjp(" in text
    assert "class Tensor_1_Float" in text


def test_bad_ksbind_jobs_is_a_build_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "jobs.yaml"
    cfg.write_text(textwrap.dedent(f"""\
        name: jobs_ext
        declarations: "(edef [f Float] Float (Float))"
        cpp: [{REPO}/examples/relu3/relu3.cpp]
        output: out
        """))
    monkeypatch.setenv("KSBIND_JOBS", "two")
    with pytest.raises(BuildError, match="KSBIND_JOBS must be a whole number"):
        build(cfg, cache_dir=tmp_path / "cache", quiet=True)


# ------------------------------------------------------------ header layout

#: Every header name ksbind has or had: its own (ksbind/*.h) and the old flat ones,
#: some of which ksc's runtime folder also has.
OLD_HEADER_NAMES = ("knossos-entry-points.h", "knossos-pybind.h", "ksbind-python.h", "ksbind-torch.h",
                    "knossos-entry-points-python.h", "knossos-entry-points-torch.h", "torch.h", "torch_pybind.h")


def _preprocessed_headers(cmd: list[str], src: Path) -> list[Path]:
    """The headers a translation unit reaches (the preprocessor's dependency list)."""
    proc = subprocess.run([*cmd, "-M", str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    deps = proc.stdout.replace("\\\n", " ").split(":", 1)[1].split()
    return [Path(d).resolve() for d in deps]


def test_no_runtime_file_can_shadow_ksbind_headers(tmp_path: Path) -> None:
    """A runtime folder (searched before ksbind's) holding a file named like every
    ksbind header, old names included, each an #error: the generated code of every
    target still reaches only ksbind's own headers (included as <ksbind/...>). And
    ksbind's include folder holds nothing but ksbind/, so it shadows no runtime file."""
    from ksbind.backend.native import compile_plan
    from ksbind.backend.pch import companion_paths
    from ksbind.codegen.output import write_generated
    from ksbind.pipeline import render_spec
    from ksbind.spec import RuntimeSpec

    # ksbind's shared headers and each of its targets' own (in the target's package)
    folders = [INCLUDE_DIR, *(d for t in TARGETS.values() for d in t.include_dirs)]
    assert all([p.name for p in d.iterdir()] == ["ksbind"] for d in folders)
    own = sorted(h for d in folders for h in (d / "ksbind").glob("*.h"))
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    shutil.copy(RUNTIME_DIR / "knossos.h", runtime / "knossos.h")
    for name in {p.name for p in own} | set(OLD_HEADER_NAMES):
        (runtime / name).write_text(f'#error "{name} of the runtime folder shadowed a ksbind header"\n')
    specs = {s.name: s for s in ksbind.load_config(REPO / "configs" / "examples.yaml")}
    torch_spec = next(s for s in ksbind.load_config(REPO / "configs" / "torch_ops.yaml") if s.name == "torch_ops")
    jax_spec = ksbind.load_config(REPO / "configs" / "relu3_jax.yaml")[0]
    reached: set[Path] = set()
    for spec in [specs["examples_ks"], specs["examples_python"], torch_spec, jax_spec]:
        spec = dataclasses.replace(spec, runtime=RuntimeSpec(False, (runtime,), ()), output=tmp_path / spec.name)
        generated = write_generated(spec.output, render_spec(spec))
        if spec.target == "torch":
            pytest.importorskip("torch")
            from ksbind.targets.torch.build import ENTRIES, stable_plan, unit_text
            from ksbind.targets.torch.build import toolchain as torch_toolchain

            tc = torch_toolchain(spec, stable_plan(spec))
            assert tc.include_dirs[:2] == (runtime, INCLUDE_DIR)  # the runtime's folder first, then ksbind's
            cmd = ["g++", *tc.cflags, *tc.include_flags()]
            # the unit of ks code the build writes (its headers before the ks sources), and the
            # companion object built beside the shared precompiled header, with these flags
            unit = tmp_path / "torch_stable_unit.cpp"
            unit.write_text(unit_text(spec, spec.output / ENTRIES))
            companion = companion_paths(tc)
            assert companion is not None and companion[0].is_file()
            units = [p for p in generated if p.suffix == ".cpp"] + [unit, companion[0]]
        elif spec.target == "jax":
            pytest.importorskip("jax")
            from ksbind.targets.jax.build import toolchain

            tc = toolchain(spec)
            assert tc.include_dirs[:2] == (runtime, INCLUDE_DIR)  # the runtime's folder first, then ksbind's
            cmd = ["g++", *tc.cflags, *tc.include_flags()]
            units = [p for p in generated if p.suffix == ".cpp"]
        else:
            plan = compile_plan(spec, generated)
            assert plan.include_dirs[:2] == (runtime, INCLUDE_DIR)  # the runtime's folder first, then ksbind's
            cmd = ["g++", *plan.flags, *(f"-I{d}" for d in plan.include_dirs)]
            units = [p for p in plan.sources if p.parent == spec.output]
        for src in units:
            headers = _preprocessed_headers(cmd, src)
            assert not [h for h in headers if h.parent == runtime.resolve() and h.name != "knossos.h"]
            reached |= set(headers)
    assert {p.resolve() for p in own} <= reached
