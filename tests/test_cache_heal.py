"""The build cache heals from damage to any of its files, and its filesystem's faults are
one-line errors (docs/building.md, "When the cache is damaged, full or read-only").

The sweep builds a module through the real ksc and g++ into a cache of its own, then, for
every file in that cache and every kind of damage (tests/heal_support.py: emptied,
truncated, every byte changed, deleted; for JSON records also another key's and another
format's), damages that one file, builds again and checks: the build succeeds with the
right value, gives exactly the warning due (one, naming the damaged entry, for every file
a record lists), and leaves the whole cache intact (``maintenance.broken`` of every entry
is empty). A damaged object, precompiled header or unit copy is found by the next build
that needs it (one that links: the test removes the module entries first, as the
failure's first reproduction did); likewise damage outside a module entry (ksc's output,
objects, unit copies) is found by a build that reads it, not by a no-op build of the unchanged
module (which checks the module's entry and inputs), so the test removes the no-op records
first. A damaged no-op record is a miss: the build renders and writes it again, no warning.
Rebuilding after one damage recompiles at most the one unit hit: the
others are cache hits.

CI runs the python target with ``KSBIND_PCH=0``, in this process (a build after a
damage is the next build; every damage changes the file's size or mtime, which is what
makes this process look again), every file with every kind of damage except the objects
of the slow units (ksc's, the user's, the generated ones: seconds each to recompile), of
which one gets its deps.json emptied (what made every later build fail) and no more (the
init unit's object, handled by the same code, gets every kind); then the torch and jax modules
of the same project (where installed) are built into the cache too, and their module entries
(wrapper, stub, library, manifest) get every kind of damage, their other records being the
same kinds, read by the same code, as the python target's; the precompiled header's files are
swept on a small header in tests/test_objcache.py; lock files (names to lock, no record)
only in --all. ``scripts/test.sh --all``
(``KSBIND_CORPUS=all``) sweeps the ks, python and torch targets (jax where installed; or
the targets in ``KSBIND_HEAL_TARGETS``) with the precompiled headers on, every file with
every kind, each build in a process of its own.

The filesystem faults need a filesystem of their own: a tmpfs the test mounts (CI runs as
root), remounted read-only, or small enough to fill; without the right to mount they skip.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import ksbind
from ksbind.backend import pch
from ksbind.cache.layout import LINK_STUBS_DIR, NOOP_DIR, cache_fault
from ksbind.cache.maintenance import broken, clean, scan
from ksbind.errors import BuildError, KsbindWarning
from tests.conftest import REPO
from tests.heal_support import (
    JSON_KINDS,
    KINDS,
    VALUE,
    build_all,
    cached_files,
    call,
    damage,
    expected_warning,
    is_json_record,
    project,
)
from tests.test_ksc import KSC, needs_ksc

pytestmark = [needs_ksc]

EVERYTHING = os.environ.get("KSBIND_CORPUS") == "all"
#: The tmpfs's size: room for pch.MIN_FREE_BYTES free (it takes memory only as it is filled).
SIZE = 512 * 1024 ** 2


@dataclass
class Cache:
    root: Path
    project: Path
    mounted: bool  # a tmpfs of its own (the filesystem-fault tests need one)


def _mount_tmpfs(path: Path, size: str) -> bool:
    if not sys.platform.startswith("linux") or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    return done.returncode == 0


def _resize(path: Path, size: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True, capture_output=True)


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """path read-only for a while: a read-only bind mount over it (remounting the tmpfs
    itself is refused while this process maps a module file replaced since)."""
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True, capture_output=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cache]:
    base = tmp_path_factory.mktemp("heal")
    root = base / "cache"
    root.mkdir()
    mounted = _mount_tmpfs(root, str(SIZE))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KSBIND_PCH", "1" if EVERYTHING else "0")
        mp.setenv("KSBIND_CACHE_MAX_BYTES", "0")
        try:
            yield Cache(root, base / "project", mounted)
        finally:
            pch.wait_for_background(root, timeout=300)
            if mounted:
                subprocess.run(["umount", "-l", str(root)], capture_output=True)


def _targets() -> list[str]:
    """python, torch and jax in CI (torch's and jax's entries only, see _cases); with --all
    also ks, every file (KSBIND_HEAL_TARGETS=python,ks: those targets)."""
    if os.environ.get("KSBIND_HEAL_TARGETS"):
        return os.environ["KSBIND_HEAL_TARGETS"].split(",")
    out = ["python"] if not EVERYTHING else ["python", "ks"]
    with contextlib.suppress(ImportError):
        import torch  # noqa: F401

        out.append("torch")
    with contextlib.suppress(ImportError):
        import jax  # noqa: F401

        out.append("jax")
    return out


def _entry_target(root: Path, path: Path) -> str:
    """The target of the module entry holding path ("" outside module entries)."""
    parts = path.relative_to(root).parts
    try:
        return str(json.loads((root / parts[0] / "manifest.json").read_text())["target"]) if len(parts) == 2 else ""
    except (OSError, ValueError, KeyError):
        return ""


def _cases(root: Path, first: set[Path]) -> list[tuple[Path, str]]:
    """(file, kind of damage) of the sweep; see the module's docstring for CI's share.
    ``first``: the files the first target's build made (in CI, of the later targets'
    files only their module entries are swept: the rest is the same kinds of record,
    read by the same code)."""
    cases = []
    reproduced = False  # the deps.json of one slow unit's object emptied
    for path in cached_files(root):
        kinds = KINDS + (JSON_KINDS if is_json_record(path) else ())
        parts = path.relative_to(root).parts
        if not EVERYTHING:
            if path.name.endswith(".lock"):
                continue  # a name to lock, no record: --all only
            if path not in first and _entry_target(root, path) not in ("torch", "jax"):
                continue
            if parts[0] == "objects" and len(parts) == 4 \
                    and "PyInit_" not in json.loads((path.parent / "deps.json").read_text())["source"]:
                # A slow unit: one of them gets its deps.json emptied (what broke every later
                # build), the others nothing here (the same code as the init unit's object).
                kinds = ("empty",) if path.name == "deps.json" and not reproduced else ()
                reproduced = reproduced or bool(kinds)
        cases += [(path, kind) for kind in kinds]
    return cases


def _build_next(c: Cache, targets: list[str]) -> list[str]:
    """The next build after a damage: here (CI), or in a process of its own (--all)."""
    if not EVERYTHING:
        return build_all(c.root, targets, KSC, c.project)
    env = {**os.environ, "HEAL_KSC": str(KSC), "HEAL_PROJECT": str(c.project), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "tests.heal_support", str(c.root), *targets], env=env,
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    pch.wait_for_background(c.root, timeout=600)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _rebuilt(root: Path, path: Path) -> bool:
    """Whether the damaged file is back. An object compiled again may be stored beside
    its old folder rather than in it (with precompiled headers on, the first build's
    units were compiled before the header existed, their rebuilds with it: other
    recorded headers, another DEPSKEY folder under the same unit key)."""
    if path.is_file():
        return True
    parts = path.relative_to(root).parts
    if parts[0] in ("objects", "pch") and len(parts) == 4 and path.parent.parent.is_dir():
        return any((d / path.name).is_file() for d in path.parent.parent.iterdir()
                   if d.is_dir() and not d.name.startswith("."))
    return False


def _remove_modules(root: Path) -> None:
    """Every module entry gone (not damaged: missing), as after ``ksbind cache clean``."""
    for e in scan(root):
        if e.kind == "module":
            shutil.rmtree(e.path)


def test_every_cached_file_heals_from_every_damage(cache: Cache) -> None:
    targets = _targets()
    assert build_all(cache.root, targets[:1], KSC, cache.project) == []
    first = set(cached_files(cache.root))
    assert build_all(cache.root, targets, KSC, cache.project) == []
    if pch.wait_for_background(cache.root, timeout=600) and EVERYTHING:
        # The objects again, now that the precompiled headers exist: the ones later builds use.
        _remove_modules(cache.root)
        shutil.rmtree(cache.root / "objects")
        assert build_all(cache.root, targets, KSC, cache.project) == []
    cases = _cases(cache.root, first)
    kinds_of = {p.relative_to(cache.root).parts[0] for p, _ in cases}
    assert {"objects", "units"} <= kinds_of and any(k.startswith("ksc-") for k in kinds_of)
    healed = 0
    for path, kind in cases:
        if not path.exists():  # a lock of an entry rebuilt (removed with it), or see _rebuilt
            assert path.name.endswith(".lock") or _rebuilt(cache.root, path), f"{path} was not rebuilt"
            continue
        damage(path, kind)
        top = path.relative_to(cache.root).parts[0]
        if top in ("objects", "pch", "units", LINK_STUBS_DIR):
            _remove_modules(cache.root)  # the next build that needs them: one that links
        if top != NOOP_DIR and not (cache.root / top / "manifest.json").is_file():
            # Not a module entry: the next build that reads it is not a no-op build (one of an
            # unchanged module checks its entry and inputs, not ksc's output or the objects).
            shutil.rmtree(cache.root / NOOP_DIR, ignore_errors=True)
        started = time.monotonic()
        said = _build_next(cache, targets)
        print(f"{time.monotonic() - started:5.2f} s {path.relative_to(cache.root)} {kind}")
        due = expected_warning(cache.root, path, kind)
        where = f"{path.relative_to(cache.root)} {kind}"
        if due is None:
            assert said == [], where
        else:
            assert len(said) == 1 and due in said[0] and "damaged" in said[0], (where, said)
        if not path.name.endswith(".lock"):
            assert _rebuilt(cache.root, path), f"{where}: not rebuilt"
        assert [str(e.path) for e in scan(cache.root, shared=True) if broken(e)] == [], where
        healed += 1
    print(f"\ncache sweep: {healed} damages healed ({len(cached_files(cache.root))} files; targets {targets})")
    assert healed >= 50
    # The next process (which hashes every file afresh) finds all of it intact.
    env = {**os.environ, "HEAL_KSC": str(KSC), "HEAL_PROJECT": str(cache.project), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "tests.heal_support", str(cache.root), *targets], env=env,
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stderr[-2000:]


def test_clean_removes_what_is_broken(cache: Cache) -> None:
    """``ksbind cache clean`` (no option: nothing is over the cap) removes damaged entries, only them."""
    build_all(cache.root, ["python"], KSC, cache.project)
    obj = next(p for p in cached_files(cache.root) if p.name == "deps.json" and "objects" in p.parts
               and "PyInit_" in p.read_text())  # the init unit's: quick to compile again
    ksc_out = next(p for p in cached_files(cache.root) if p.name.endswith(".kso"))
    module = next(p for p in cached_files(cache.root) if p.name.endswith(".so"))
    before = {e.path for e in scan(cache.root, shared=True)}
    damage(obj, "empty")
    damage(ksc_out, "garbage")
    damage(module, "truncated")
    removed = {e.path for e in clean(cache.root).removed}
    assert removed == {obj.parent, ksc_out.parent, module.parent}
    assert {e.path for e in scan(cache.root, shared=True)} == before - removed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = ksbind.build(project(cache.project, "python", KSC), cache_dir=cache.root, quiet=True)
    assert call(m, "python") == VALUE
    assert [w for w in caught if issubclass(w.category, KsbindWarning)] == []  # gone, not damaged


# ---------------------------------------------------------------- filesystem faults

def _needs_mount(c: Cache) -> None:
    if not c.mounted:
        pytest.skip("mounting a tmpfs was refused (not root, or no mount): the filesystem faults need one")


def _cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KSBIND_CACHE_DIR": str(root)}
    return subprocess.run([sys.executable, "-m", "ksbind", *args], env=env, capture_output=True, text=True)


def _other_module(c: Cache) -> Path:
    """A module not in the cache yet (another name: another key)."""
    cfg = project(c.project, "python", KSC)
    other = cfg.with_name("other.yaml")
    other.write_text(cfg.read_text().replace("heal_python", "heal_other"))
    return other


def test_a_read_only_cache_serves_hits_and_says_what_to_do_for_the_rest(cache: Cache) -> None:
    _needs_mount(cache)
    m = ksbind.build(project(cache.project, "python", KSC), cache_dir=cache.root, quiet=True)
    with _read_only(cache.root):
        # A fresh process: the hit is checked from disk, nothing is written.
        env = {**os.environ, "HEAL_KSC": str(KSC), "HEAL_PROJECT": str(cache.project), "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "tests.heal_support", str(cache.root), "python"], env=env,
                              capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 0 and json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stderr
        with pytest.raises(BuildError) as e:
            ksbind.build(_other_module(cache), cache_dir=cache.root, quiet=True)
        text = str(e.value)
        assert text.startswith(f"{cache.root}: cannot write to the build cache {cache.root} (")
        assert "Read-only file system" in text and "KSBIND_CACHE_DIR" in text and "\n" not in text
        done = _cli("cache", "clean", "--all", root=cache.root)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == (f"ksbind: error: cannot clean the build cache {cache.root}: it is read-only (or not "
                               "writable by this user); make it writable, or set KSBIND_CACHE_DIR to the cache to "
                               "clean\n")
        assert call(m, "python") == VALUE


def test_a_full_cache_is_one_line_and_the_build_after_freeing_space_succeeds(cache: Cache,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC while installing the module (the link fits, its copy into the entry does not)."""
    _needs_mount(cache)
    # No precompiled header: one finished in the background between the two builds would make the
    # second compile its unit again (another object key), a whole new object the check below
    # would count as left behind.
    monkeypatch.setenv("KSBIND_PCH", "0")
    cfg = project(cache.project, "python", KSC)
    ksbind.build(cfg, cache_dir=cache.root, quiet=True)
    entry = next(p.parent for p in cached_files(cache.root) if p.name.endswith(".so") and "heal_python" in p.name)
    size = next(entry.glob("*.so")).stat().st_size
    shutil.rmtree(entry)
    st = os.statvfs(cache.root)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    # Room for the linked module in the staging folder, not for its copy into the entry.
    _resize(cache.root, used + size * 3 // 2)
    before = set(cached_files(cache.root))
    try:
        with pytest.raises(BuildError) as e:
            ksbind.build(cfg, cache_dir=cache.root, quiet=True)
        text = str(e.value)
        print(f"\n{text}")
        assert f"the build cache {cache.root} is full (" in text and "No space left on device" in text
        assert "KSBIND_CACHE_DIR" in text and "free space" in text
        # Nothing half-written: no new file (no module, no temporary, no staging folder) is left. A
        # whole object the build compiled before the install failed may stay: it is complete (its
        # deps.json beside it) and the next build reuses it. (Seen in CI, 2 runs of 4: the second
        # build compiled its unit again, cause not found; the object was whole each time.)
        new = set(cached_files(cache.root)) - before
        whole = {p for p in new if "objects" in p.relative_to(cache.root).parts
                 and {q.name for q in p.parent.iterdir()} >= {"deps.json", "unit.o"}}
        # and the lock files of the units it compiled (objects/.locks/KEY.lock): names to lock,
        # whose content means nothing (docs/building.md); and the record of a background header build that
        # the full disk failed (pch/KEY/failed, written whole: --all's builds start them)
        locks = {p for p in new if p.parent.name == ".locks" and p.suffix == ".lock"}
        failed = {p for p in new if p.name == pch.FAILED and p.parent.parent.name == "pch"
                  and json.loads(p.read_text())["free"] >= 0}
        assert new - whole - locks - failed == set()
        assert not [p for p in cache.root.iterdir() if p.name.startswith((".staging-", ".trash-"))]
    finally:
        _resize(cache.root, SIZE)
    m = ksbind.build(cfg, cache_dir=cache.root, quiet=True)
    assert call(m, "python") == VALUE
    assert [e for e in scan(cache.root, shared=True) if broken(e)] == []


def test_a_cache_path_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "cache"
    path.write_text("not a folder\n")
    cfg = project(tmp_path / "p", "python", KSC)
    with pytest.raises(BuildError) as e:
        ksbind.build(cfg, cache_dir=path, quiet=True)
    assert str(e.value) == (f"{path}: the build cache {path} is not a folder (it is a file): remove it, or set "
                            "KSBIND_CACHE_DIR to a folder")
    with pytest.raises(BuildError) as again:
        ksbind.load_ks("(def f Float (x : Float) x)", cache_dir=path)
    assert str(again.value) == str(e.value)
    done = _cli("cache", "list", root=path)
    assert done.returncode == 2 and done.stderr == f"ksbind: error: {e.value}\n"
    inside = path / "ksbind"  # a file above the cache folder
    with pytest.raises(BuildError) as e:
        ksbind.build(cfg, cache_dir=inside, quiet=True)
    assert "a file stands where a folder belongs" in str(e.value) and "KSBIND_CACHE_DIR" in str(e.value)


def test_faults_outside_the_cache_are_not_called_cache_faults(tmp_path: Path) -> None:
    err = OSError(28, "No space left on device", "/somewhere/else")
    assert cache_fault(err, tmp_path) is None
    assert cache_fault(OSError(30, "Read-only file system", str(tmp_path.parent)), tmp_path) is not None


# ---------------------------------------------------------------- a failed background header build

def test_a_failed_background_header_build_waits_for_space(cache: Cache, tmp_path: Path) -> None:
    """Not started again for the same key until more space is free than when it failed."""
    _needs_mount(cache)
    from ksbind.backend.toolchain import Toolchain

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "big.h").write_text("#error not precompilable\n")  # every try fails, quickly
    tc = Toolchain("heal-failing", ("g++",), ("-std=c++17",), (tmp_path / "inc",), pch_includes=("big.h",))
    shared = pch.lookup(tc, cache.root)
    folder = shared.plain.parent
    filler = cache.root / "filler"
    filler_bytes = pch.RETRY_FREED_BYTES + 4 * 1024 ** 2
    # Room for a build to start (pch.MIN_FREE_BYTES) with the filler written: the sweep's builds
    # (with --all, precompiled headers too) may have filled much of the tmpfs.
    st = os.statvfs(cache.root)
    _resize(cache.root, (st.f_blocks - st.f_bfree) * st.f_frsize + pch.MIN_FREE_BYTES + filler_bytes + 64 * 1024 ** 2)
    filler.write_bytes(b"\0" * filler_bytes)
    try:
        pch.start_background(tc, cache.root, shared)
        assert pch.wait_for_background(cache.root, timeout=120)
        assert (folder / pch.FAILED).is_file() and pch.lookup(tc, cache.root).stored is None
        for _ in range(3):  # later builds start none: no "building" marker, no process
            pch.start_background(tc, cache.root, shared)
            assert not (folder / pch.BUILDING).exists()
    finally:
        filler.unlink()
    # Space freed: the next build that would start one does.
    failed_at = (folder / pch.FAILED).stat().st_mtime
    pch.start_background(tc, cache.root, shared)
    assert pch.wait_for_background(cache.root, timeout=120)
    assert (folder / pch.FAILED).stat().st_mtime > failed_at  # tried again (and failed again)
    assert json.loads((folder / pch.FAILED).read_text())["free"] > 0


# ---------------------------------------------------------------- a killed build

#: A unit whose compile takes a minute or more (constant evaluation of 1.6e9 steps).
SLOW_CPP = """\
constexpr unsigned long spin() {
    unsigned long s = 0;
    for (unsigned long i = 0; i < 40000; ++i)
        for (unsigned long j = 0; j < 40000; ++j) s = s * 31 + j;
    return s;
}
static_assert(spin() != 1, "never true");
"""
SLOW_FLAGS = "-fconstexpr-ops-limit=1000000000000"
KILLED = """\
import sys
import ksbind
ksbind.build(sys.argv[1], cache_dir=sys.argv[2])
"""


def _compilers_in(folder: Path, program: str = "") -> list[int]:
    """Processes whose command line names folder (the compilers of a build there: the
    sh that supervises each, g++, cc1plus, as), those of ``program`` only if given."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes()
            if str(folder).encode() in cmdline and program.encode() in cmdline.split(b"\0")[0]:
                out.append(int(proc.name))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("how", ["kill -9", "Ctrl-C"])
def test_a_killed_build_leaves_no_compiler_running(tmp_path: Path, how: str) -> None:
    import signal

    cfg = project(tmp_path / "p", "python", KSC)
    (tmp_path / "p" / "m.cpp").write_text(SLOW_CPP)  # its compiler runs for a minute unless stopped
    root = tmp_path / "cache"
    env = {**os.environ, "KSBIND_PCH": "0", "PYTHONPATH": str(REPO), "KSBIND_CXXFLAGS": SLOW_FLAGS}
    # SIGINT as a terminal leaves it (as tests/test_cli.py does): a shell's background job (a CI
    # runner may be one) starts its children with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler, so the build would run on (seen in CI: it compiled to the end).
    build = subprocess.Popen([sys.executable, "-c", KILLED, str(cfg), str(root)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not _compilers_in(tmp_path, "cc1plus"):
        assert build.poll() is None and time.monotonic() < deadline, "no compiler started"
        time.sleep(0.05)
    time.sleep(0.5)  # the others start too
    build.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGINT)
    try:
        build.communicate(timeout=30)  # well under the minute its compiler would run: stopped, not waited for
    except subprocess.TimeoutExpired:
        build.kill()  # not left running into later tests (an unraisable warning there)
        _, err = build.communicate()
        pytest.fail(f"the interrupted build did not exit within 30 s; its stderr: {err.decode(errors='replace')}")
    deadline = time.monotonic() + 3
    while _compilers_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _compilers_in(tmp_path) == []
