"""The object cache and the shared precompiled header (ksbind/cache/objects.py,
ksbind/backend/pch.py, ksbind/backend/compile.py): hits, misses on every key component,
healing, eviction, and concurrent builds compiling each object once.

Most tests use a tiny toolchain (no pybind11: each compile takes ~0.1 s); one
builds real modules in concurrent processes."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ksbind.backend import pch
from ksbind.backend.compile import compile_objects, link
from ksbind.backend.runner import Unit
from ksbind.backend.toolchain import Toolchain
from ksbind.cache.keys import environment_key
from ksbind.cache.layout import DEPS
from ksbind.cache.maintenance import clean, scan
from ksbind.cache.objects import ObjectCache, parse_depfile
from ksbind.errors import KsbindWarning

from .conftest import REPO


def logging_compiler(folder: Path, name: str = "cxx", version: str = "") -> Path:
    """A compiler that appends what it compiles (the -c source, or the header
    it precompiles) to folder/NAME.log, then runs g++; ``version`` changes what
    its --version says."""
    log = folder / f"{name}.log"
    script = folder / name
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = --version ]; then echo "{version or 'g++ wrapper'}"; exec g++ --version; fi
        prev=
        for a in "$@"; do
            if [ "$prev" = -c ] || [ "$prev" = c++-header ]; then echo "$a" >> {log}; fi
            prev="$a"
        done
        exec g++ "$@"
        """))
    script.chmod(0o755)
    return script


def compiled(folder: Path, name: str = "cxx") -> list[str]:
    log = folder / f"{name}.log"
    return [Path(p).name for p in log.read_text().split()] if log.exists() else []


def project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """src/a.cpp (including "a.h" beside it and <lib.h> from inc/) and src/gen.cpp
    (a generated-style unit using the precompiled lib.h)."""
    src, inc = tmp_path / "src", tmp_path / "inc"
    src.mkdir()
    inc.mkdir()
    (inc / "lib.h").write_text("#pragma once\n#define LIBVAL 1\ninline int lib_twice(int x) { return 2 * x; }\n")
    (src / "a.h").write_text("#pragma once\n#define AVAL 10\n")
    (src / "a.cpp").write_text('#include "a.h"\n#include <lib.h>\nextern "C" int a_value() { return AVAL + LIBVAL; }\n')
    (src / "gen.cpp").write_text('#include <lib.h>\nextern "C" int gen_value() { return lib_twice(LIBVAL); }\n')
    return src, inc, src / "a.cpp"


def toolchain(inc: Path, cxx: Path, extra: tuple[str, ...] = ()) -> Toolchain:
    return Toolchain("test", (str(cxx),), ("-O0", "-fPIC", "-std=c++17", *extra), (inc,),
                     ldflags=("-fPIC",), pch_includes=("lib.h",))


def load(objects: list[Path], tc: Toolchain, out: Path) -> ctypes.CDLL:
    link(objects, tc, out, objects[0], out.parent)
    return ctypes.CDLL(str(out))


def test_depfile_parsing() -> None:
    text = "obj/a.o: /src/a.cpp /inc/with\\ space.h \\\n  /inc/b.h /inc/b.h \\\n /inc/c$$.h\n/inc/b.h:\n"
    assert parse_depfile(text) == ["/src/a.cpp", "/inc/with space.h", "/inc/b.h", "/inc/c$.h"]


def test_hits_and_misses_on_headers_flags_compiler_and_versions(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    src, inc, a = project(tmp_path)
    cxx = logging_compiler(tmp_path)
    tc = toolchain(inc, cxx)
    cache = ObjectCache(tmp_path / "cache")
    work = tmp_path / "work"
    work.mkdir()

    def objs(tc: Toolchain = tc) -> list[Path]:
        return compile_objects([Unit(a)], tc, objects=cache, work=work, log_dir=tmp_path)

    first = objs()
    assert compiled(tmp_path) == ["a.cpp"]
    assert objs() == first and compiled(tmp_path) == ["a.cpp"]  # a hit: not compiled again
    assert ctypes.CDLL(str(link(first, tc, tmp_path / "a1.so", a, tmp_path))).a_value() == 11

    (src / "a.h").write_text("#pragma once\n#define AVAL 20\n")  # a header beside the source
    second = objs()
    assert second != first and compiled(tmp_path) == ["a.cpp"] * 2
    assert ctypes.CDLL(str(link(second, tc, tmp_path / "a2.so", a, tmp_path))).a_value() == 21
    (src / "a.h").write_text("#pragma once\n#define AVAL 10\n")  # back: the first object is still good
    assert objs() == first and len(compiled(tmp_path)) == 2

    (inc / "lib.h").write_text("#pragma once\n#define LIBVAL 2\ninline int lib_twice(int x) { return 2 * x; }\n")
    assert objs() not in (first, second) and len(compiled(tmp_path)) == 3  # a header on the include path

    flagged = toolchain(inc, cxx, ("-DEXTRA=1",))
    objs(flagged)
    assert len(compiled(tmp_path)) == 4  # another flag
    objs(flagged)
    assert len(compiled(tmp_path)) == 4

    other = logging_compiler(tmp_path, "cxx2", version="g++ (other) 99.1")
    objs(toolchain(inc, other))
    assert compiled(tmp_path, "cxx2") == ["a.cpp"]  # another compiler (path and --version)

    monkeypatch.setattr("ksbind.cache.keys.environment_key", lambda: [*environment_key(), ("pybind11", "9.9.9")])
    objs()
    assert len(compiled(tmp_path)) == 5  # another Python/pybind11 version
    monkeypatch.setattr("ksbind.cache.keys.environment_key", environment_key)
    objs()
    assert len(compiled(tmp_path)) == 5


def test_damaged_object_is_rebuilt(tmp_path: Path) -> None:
    src, inc, a = project(tmp_path)
    cxx = logging_compiler(tmp_path)
    tc = toolchain(inc, cxx)
    cache = ObjectCache(tmp_path / "cache")
    (obj,) = compile_objects([Unit(a)], tc, objects=cache, work=tmp_path, log_dir=tmp_path)
    size = obj.stat().st_size
    with open(obj, "r+b") as f:
        f.truncate(size // 2)  # a killed copy, a full disk
    with pytest.warns(KsbindWarning, match=r"is damaged \(unit\.o has \d+ bytes, deps\.json says \d+\): rebuilding it"):
        (again,) = compile_objects([Unit(a)], tc, objects=cache, work=tmp_path, log_dir=tmp_path)
    assert compiled(tmp_path) == ["a.cpp", "a.cpp"] and again.stat().st_size == size
    assert ctypes.CDLL(str(link([again], tc, tmp_path / "a.so", a, tmp_path))).a_value() == 11


def _as_a_new_process(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Forget what this process hashed (as a new process would) and record what is hashed from now on."""
    from ksbind.cache import objects
    from ksbind.cache.keys import file_sha256 as real

    monkeypatch.setattr(objects, "_digests", {})
    monkeypatch.setattr(objects, "_checked", {})
    hashed: list[str] = []

    def counting(path: Path | str, dir_fd: int | None = None) -> str:
        hashed.append(Path(path).name)
        return real(path, dir_fd)

    monkeypatch.setattr(objects, "file_sha256", counting)
    return hashed


def test_a_new_process_trusts_recorded_identities_and_sees_every_write(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """deps.json records each header's and stored file's stat identity (size, mtime, ctime,
    inode) when hashed; a lookup in a new process whose files still have them reads none of
    them. A write that keeps the size and sets the mtime back still changes the ctime: the
    header is hashed again (a miss), the damaged object found and rebuilt."""
    src, inc, a = project(tmp_path)
    cxx = logging_compiler(tmp_path)
    tc = toolchain(inc, cxx)
    cache = ObjectCache(tmp_path / "cache")

    def objs() -> list[Path]:
        return compile_objects([Unit(a)], tc, objects=cache, work=tmp_path, log_dir=tmp_path)

    (first,) = objs()
    record = json.loads((first.parent / DEPS).read_text())
    assert {Path(p).name for p in record["identities"]["deps"]} >= {"a.h", "lib.h", "a.cpp"}
    assert set(record["identities"]["files"]) == {"unit.o"}

    hashed = _as_a_new_process(monkeypatch)
    assert objs() == [first] and compiled(tmp_path) == ["a.cpp"] and hashed == []

    def rewrite_keeping_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
        st = path.stat()
        data = path.read_bytes()
        assert len(old) == len(new) and old in data
        time.sleep(0.01)  # a ctime of its own, even on a coarse clock
        with open(path, "r+b") as f:
            f.write(data.replace(old, new, 1))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns

    rewrite_keeping_size_and_mtime(src / "a.h", b"AVAL 10", b"AVAL 30")
    hashed = _as_a_new_process(monkeypatch)
    (second,) = objs()
    assert "a.h" in hashed and second != first and compiled(tmp_path) == ["a.cpp"] * 2
    assert ctypes.CDLL(str(link([second], tc, tmp_path / "a3.so", a, tmp_path))).a_value() == 31

    rewrite_keeping_size_and_mtime(second, b"\x7fELF", b"\x7fELG")  # damaged in place
    _as_a_new_process(monkeypatch)
    with pytest.warns(KsbindWarning, match=r"is damaged \(unit\.o does not match its sha256\): rebuilding it"):
        (again,) = objs()
    assert compiled(tmp_path) == ["a.cpp"] * 3
    assert ctypes.CDLL(str(link([again], tc, tmp_path / "a4.so", a, tmp_path))).a_value() == 31


def test_precompiled_header_is_built_used_and_invalidated(tmp_path: Path) -> None:
    src, inc, a = project(tmp_path)
    cxx = logging_compiler(tmp_path)
    tc = toolchain(inc, cxx)
    root = tmp_path / "cache"
    cache = ObjectCache(root)
    units = [Unit(a), Unit(src / "gen.cpp", pch=True)]
    assert pch.lookup(tc, root).stored is None
    first = compile_objects(units, tc, objects=cache, work=tmp_path, log_dir=tmp_path, background_pch=False)
    assert sorted(compiled(tmp_path)) == ["a.cpp", "gen.cpp", "ksbind_pch.h"]  # built alongside the units
    shared = pch.lookup(tc, root)
    assert shared.stored is not None and (shared.include.parent / "ksbind_pch.h.gch").is_file()
    # g++ really loads it (-H marks a precompiled header with "!").
    used = subprocess.run(["g++", *tc.compile_args(), "-include", str(shared.include), "-H", "-fsyntax-only",
                           str(src / "gen.cpp")], capture_output=True, text=True)
    assert used.returncode == 0 and f"! {shared.include}.gch" in used.stderr, used.stderr
    # The unit compiled before the .gch existed is as good (it read the header): a hit.
    again = compile_objects(units, tc, objects=cache, work=tmp_path, log_dir=tmp_path, background_pch=False)
    assert again == first and len(compiled(tmp_path)) == 3
    lib = load(again, tc, tmp_path / "g1.so")
    assert lib.gen_value() == 2

    (inc / "lib.h").write_text("#pragma once\n#define LIBVAL 5\ninline int lib_twice(int x) { return 2 * x; }\n")
    assert pch.lookup(tc, root).stored is None  # its header changed: not used
    n = len(compiled(tmp_path))
    lib = load(compile_objects(units, tc, objects=cache, work=tmp_path, log_dir=tmp_path, background_pch=False), tc, tmp_path / "g2.so")
    assert lib.gen_value() == 10 and lib.a_value() == 15
    assert sorted(compiled(tmp_path)[n:]) == ["a.cpp", "gen.cpp", "ksbind_pch.h"]  # and rebuilt for the new one
    assert pch.lookup(tc, root).stored is not None


def test_every_precompiled_header_file_heals_from_every_damage(tmp_path: Path) -> None:
    """Each file of a stored precompiled header (the header, its .gch, deps.json) damaged in
    each way of tests/heal_support.py: one warning naming it, built again, used again."""
    import warnings

    from ksbind.cache.maintenance import broken
    from ksbind.errors import KsbindWarning
    from tests.heal_support import JSON_KINDS, KINDS, damage

    src, inc, a = project(tmp_path)
    tc = toolchain(inc, logging_compiler(tmp_path))
    root = tmp_path / "cache"
    cache = ObjectCache(root)
    units = [Unit(a), Unit(src / "gen.cpp", pch=True)]
    compile_objects(units, tc, objects=cache, work=tmp_path, log_dir=tmp_path, background_pch=False)
    stored = pch.lookup(tc, root).stored
    assert stored is not None
    files = sorted(stored.dir.iterdir())
    assert [f.name for f in files] == ["deps.json", "ksbind_pch.h", "ksbind_pch.h.gch"]
    healed = 0
    for path in files:
        for kind in KINDS + (JSON_KINDS if path.name == "deps.json" else ()):
            damage(path, kind)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                objs = compile_objects(units, tc, objects=cache, work=tmp_path, log_dir=tmp_path,
                                       background_pch=False)
            said = [str(w.message) for w in caught if issubclass(w.category, KsbindWarning)]
            assert len(said) == 1 and str(stored.dir) in said[0] and "damaged" in said[0], (path.name, kind, said)
            again = pch.lookup(tc, root).stored
            assert again is not None and again.dir == stored.dir and path.is_file(), (path.name, kind)
            assert [e for e in scan(root, shared=True) if broken(e)] == []
            assert load(objs, tc, tmp_path / f"h{healed}.so").gen_value() == 2
            healed += 1
    assert healed == 14


def test_old_objects_are_evicted_and_clean_all_empties_the_cache(tmp_path: Path) -> None:
    src, inc, a = project(tmp_path)
    tc = toolchain(inc, logging_compiler(tmp_path))
    root = tmp_path / "cache"
    compile_objects([Unit(a), Unit(src / "gen.cpp", pch=True)], tc, objects=ObjectCache(root), work=tmp_path,
                    log_dir=tmp_path, background_pch=False)
    shared = [e for e in scan(root, shared=True) if e.kind in ("object", "pch")]
    assert sorted(e.kind for e in shared) == ["object", "object", "pch"]
    assert {e.module for e in shared} == {"a.cpp", "gen.cpp", "ksbind_pch.h"}
    old = time.time() - 30 * 86400
    for e in shared:
        os.utime(e.path / DEPS, (old, old))
    code = f"from ksbind.cache.maintenance import evict; print(len(evict({str(root)!r}, max_bytes=1)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr
    assert not [e for e in scan(root, shared=True) if e.kind in ("object", "pch")]
    compile_objects([Unit(a)], tc, objects=ObjectCache(root), work=tmp_path, log_dir=tmp_path)
    report = clean(root, everything=True)
    assert [e.kind for e in report.removed] == ["object"]
    assert list(root.iterdir()) == []


CONCURRENT = """\
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from ksbind.backend.compile import Unit, compile_objects
from ksbind.cache.objects import ObjectCache
from ksbind.backend.toolchain import Toolchain
start = Path({start!r})
while not start.exists():
    time.sleep(0.01)
tc = Toolchain("test", ({cxx!r},), ("-O0", "-fPIC", "-std=c++17"), (Path({inc!r}),), pch_includes=("lib.h",))
units = [Unit(Path({a!r})), Unit(Path({gen!r}), pch=True)]
objs = compile_objects(units, tc, objects=ObjectCache(Path({root!r})), work=Path({work!r}), log_dir=Path({work!r}), background_pch=False)
print(" ".join(map(str, objs)))
"""


def test_concurrent_compiles_of_the_same_units_compile_each_once(tmp_path: Path) -> None:
    src, inc, a = project(tmp_path)
    cxx = logging_compiler(tmp_path)
    start = tmp_path / "start"
    procs = []
    for i in range(3):
        work = tmp_path / f"work{i}"
        work.mkdir()
        code = CONCURRENT.format(repo=str(REPO), start=str(start), cxx=str(cxx), inc=str(inc), a=str(a),
                                 gen=str(src / "gen.cpp"), root=str(tmp_path / "cache"), work=str(work))
        procs.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    time.sleep(0.5)
    start.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert len({o for o, _ in outs}) == 1  # the same objects for all three
    log = compiled(tmp_path)
    assert sorted(log) in (["a.cpp", "gen.cpp"], ["a.cpp", "gen.cpp", "ksbind_pch.h"]), log
    assert json.loads((Path(outs[0][0].split()[0]).parent / DEPS).read_text())["source"] == str(a)


# ------------------------------------------------------------ real modules, concurrently

MODULE = """\
name: {name}
target: python
ks: [{repo}/examples/relu3/relu3.ks]
cpp: [{cpp}]
bindings:
  - {{name: vrelu3, function: "[vrelu3 (Tensor 1 Float)]"}}
output: {out}
"""

BUILDER = """\
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
start = Path({start!r})
while not start.exists():
    time.sleep(0.01)
import ksbind
m = ksbind.build({config!r}, cache_dir={cache!r})
print(m.__file__)
print(m.vrelu3([2.0])[0])
"""

IMPORTER = """\
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from ksbind.backend.loader import import_from_path
from ksbind.backend.native import module_entry
from ksbind.cache.maintenance import scan
from ksbind.cache.manifest import MANIFEST
cache, stop, seen = Path({cache!r}), Path({stop!r}), {{}}
while not stop.exists():
    for e in scan(cache):
        if e.kind != "module" or e.path in seen:
            continue
        import json
        try:
            manifest = json.loads((e.path / MANIFEST).read_text())
        except OSError:
            continue
        entry = module_entry(cache, manifest["module"], manifest["key"], manifest["target"])
        state, why = entry.check()
        assert state in ("ok", "missing"), (e.path, state, why)  # never a partial entry
        if state == "ok":
            m = import_from_path(manifest["module"], entry.module_path)
            seen[e.path] = m.vrelu3([2.0])[0]
    time.sleep(0.02)
print(sorted((p.name, v) for p, v in seen.items()))
"""


def test_concurrent_module_builds_share_objects_while_another_process_imports(tmp_path: Path) -> None:
    """Two processes build module A and one builds module B (the same bindings
    and user C++, another name) at once while a fourth imports whatever is
    complete: every object is compiled once (the bindings' one shared by A and
    B), nobody sees a partial entry. Then editing the user's C++ recompiles
    only it, and `ksbind cache clean --all` empties the cache."""
    cpp = tmp_path / "relu3.cpp"
    cpp.write_text((REPO / "examples" / "relu3" / "relu3.cpp").read_text())
    cxx = logging_compiler(tmp_path)
    cache, start, stop = tmp_path / "cache", tmp_path / "start", tmp_path / "stop"
    configs = {}
    for name in ("objc_a", "objc_b"):
        configs[name] = tmp_path / f"{name}.yaml"
        configs[name].write_text(MODULE.format(name=name, repo=REPO, cpp=cpp, out=tmp_path / f"out_{name}"))
    env = {**os.environ, "CXX": str(cxx)}
    env.pop("KSBIND_PCH", None)

    def builder(name: str) -> subprocess.Popen[str]:
        code = BUILDER.format(repo=str(REPO), start=str(start), config=str(configs[name]), cache=str(cache))
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=tmp_path)

    importer = subprocess.Popen([sys.executable, "-c", IMPORTER.format(repo=str(REPO), cache=str(cache),
                                                                        stop=str(stop))],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    builders = [builder("objc_a"), builder("objc_a"), builder("objc_b")]
    time.sleep(0.3)
    start.touch()
    try:
        outs = [p.communicate(timeout=600) for p in builders]
    finally:
        stop.touch()
        imported, importer_err = importer.communicate(timeout=120)
    for p, (stdout, stderr) in zip(builders, outs):
        assert p.returncode == 0, stderr
        assert float(stdout.splitlines()[1]) == pytest.approx(2 - 2 / 3)
    assert outs[0][0] == outs[1][0]
    assert importer.returncode == 0, importer_err
    # The first builds found no precompiled header and started one in the background, once.
    deadline = time.monotonic() + 300
    while list(cache.glob("pch/*/building")):
        assert time.monotonic() < deadline, "the background precompiled header build did not finish"
        time.sleep(0.1)
    log = compiled(tmp_path)
    assert sorted(n for n in log if n != "ksbind_pch.h") == \
        ["PyInit_objc_a.cpp", "PyInit_objc_b.cpp", "entry_points.cpp", "module.cpp", "relu3.cpp"], log
    assert log.count("ksbind_pch.h") == 1

    # Only the user's C++ changed: only it is compiled.
    cpp.write_text(cpp.read_text().replace("return x - 2.0f / 3.0f;", "return x - 1.0f / 3.0f;"))
    start.touch()
    again = builder("objc_b")
    stdout, stderr = again.communicate(timeout=600)
    assert again.returncode == 0, stderr
    assert float(stdout.splitlines()[1]) == pytest.approx(2 - 1 / 3)
    assert compiled(tmp_path)[len(log):] == ["relu3.cpp"]
    assert "compiling 1 of 4 units with cxx" in stderr and "[1/1] relu3.cpp " in stderr

    assert list(cache.glob("pch/*/*/deps.json")), "the precompiled header was never built"
    cli_env = {**os.environ, "KSBIND_CACHE_DIR": str(cache)}
    listed = subprocess.run([sys.executable, "-m", "ksbind", "cache", "list"], env=cli_env, cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "shared by all modules: 6 objects, 1 precompiled headers" in listed.stdout.splitlines()[-1], listed.stdout
    cleaned = subprocess.run([sys.executable, "-m", "ksbind", "cache", "clean", "--all"], env=cli_env, cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    assert list(cache.iterdir()) == []
