"""The build cache as a thing that heals and can be managed: each entry's
manifest (sizes and sha256 of what it installed), damaged entries rebuilt with
one warning, LRU eviction under the size cap (never a half-deleted entry,
never one being built), and ``ksbind cache list|clean``.

Most tests use fake entries (any bytes installed as a "module"); the few that
need a real module copy the session's relu3 builds (tests/e2e_support.py)
into a private cache, so the only extra compile is the one a healing test
must do."""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest

from ksbind._version import __version__
from ksbind.cache import entries, manifest
from ksbind.cache.entries import CacheEntry
from ksbind.cache.keys import file_sha256
from ksbind.cache.locks import build_lock, try_lock
from ksbind.cache.maintenance import DEFAULT_MAX_BYTES, cache_max_bytes, evict, format_size, scan
from ksbind.cache.manifest import MANIFEST
from ksbind.cli import main
from ksbind.errors import BuildError, KsbindWarning
from tests.e2e_support import REPO, built, run_python

DAY = 86400.0


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new process would: nothing verified or used yet, no cap set."""
    monkeypatch.setattr(manifest, "USED_HERE", set())
    monkeypatch.setattr(entries, "_verified", {})
    monkeypatch.delenv("KSBIND_CACHE_MAX_BYTES", raising=False)


def fake_entry(root: Path, name: str, size: int = 10_000, days_unused: float = 0.0, target: str = "ks",
               extra: dict[str, str] | None = None) -> CacheEntry:
    """An entry installed the way the backends install one (lock, is_built,
    files the build puts first, install), holding random bytes as its module
    (a torch entry's: its op library, NAME_torchops.so)."""
    suffix = ".so" if target == "torch" else None
    entry = CacheEntry(root, name, hashlib.sha256(name.encode()).hexdigest(), suffix=suffix, target=target)
    built_file = root.parent / f"{name}.built"
    built_file.write_bytes(os.urandom(size))
    with entry.lock():
        assert not entry.is_built()
        entry.dir.mkdir(parents=True, exist_ok=True)
        for fname, text in (extra or {}).items():
            (entry.dir / fname).write_text(text)
        entry.install(built_file)
    manifest.USED_HERE.discard(str(entry.dir))  # as if another process had built it
    if days_unused:
        set_last_used(entry.manifest_path, days_unused)
    return entry


def set_last_used(path: Path, days_ago: float) -> None:
    t = time.time() - days_ago * DAY
    os.utime(path, (t, t))


def replace_file(path: Path, data: bytes) -> None:
    """New content under a new inode (as a killed copy would leave), so a process
    that has mapped the old file is unaffected."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".trash-", ".staging-")))


# ------------------------------------------------------------ the manifest

def test_manifest_lists_what_the_entry_installed(tmp_path: Path) -> None:
    """Every file the build put in the folder first (the torch backend's wrapper and
    its stub), the module, sizes and sha256; not the ks backend's own NAME.pyi stub
    (rewritten on every build) nor hidden temp files."""
    root = tmp_path / "cache"
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    entry = fake_entry(root, "m_torchops", target="torch",
                       extra={"m.py": "import torch\n", "m.pyi": "def f() -> None: ...\n",
                              "m_torchops.pyi": "stub\n", ".m.py.123.tmp": "half"})
    manifest = json.loads(entry.manifest_path.read_text())
    assert manifest["format"] == 1
    assert (manifest["module"], manifest["key"], manifest["target"]) == ("m_torchops", entry.key, "torch")
    assert manifest["ksbind"] == __version__
    created = datetime.datetime.fromisoformat(manifest["created"])
    assert before <= created <= datetime.datetime.now(datetime.timezone.utc)
    assert set(manifest["files"]) == {"m.py", "m.pyi", entry.module_path.name}
    for fname, info in manifest["files"].items():
        data = (entry.dir / fname).read_bytes()
        assert info == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert entry.check() == ("ok", "")
    (entry.dir / "m_torchops.pyi").write_text("a new stub\n")  # not part of the entry's record
    assert entry.is_built()


def _truncate(e: CacheEntry) -> None:
    replace_file(e.module_path, e.module_path.read_bytes()[:4000])


def _flip_a_byte(e: CacheEntry) -> None:
    """Same size, same mtime, same inode (a bad disk): found by a process that
    has not hashed the file yet."""
    st = e.module_path.stat()
    with open(e.module_path, "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xFF]))
    os.utime(e.module_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    entries._verified.clear()  # a new process


def _edit_the_wrapper(e: CacheEntry) -> None:
    with open(e.dir / "m.py", "a") as f:
        f.write("raise ImportError('damaged')\n")


def _other_key(e: CacheEntry) -> None:
    manifest = json.loads(e.manifest_path.read_text())
    manifest["key"] = "0" * 64
    e.manifest_path.write_text(json.dumps(manifest))


DAMAGE = {
    "truncated module": (_truncate, r"has 4000 bytes, its manifest says 10000"),
    "corrupted module": (_flip_a_byte, r"does not match its sha256"),
    "missing file": (lambda e: (e.dir / "m.py").unlink(), r"m\.py is missing"),
    "edited wrapper": (_edit_the_wrapper, r"m\.py has \d+ bytes"),
    "no manifest (older ksbind)": (lambda e: e.manifest_path.unlink(), r"no manifest"),
    "unreadable manifest": (lambda e: e.manifest_path.write_text("{"), r"manifest\.json is unreadable"),
    "another build's manifest": (_other_key, r"another build's"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_entry_is_not_built_and_is_cleared_with_one_warning(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "cache"
    entry = fake_entry(root, "m_ext", extra={"m.py": "import m_ext\n"})
    do, reason = DAMAGE[damage]
    do(entry)
    state, why = entry.check()
    assert state == "damaged" and re.search(reason, why), why
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert not entry.is_built()  # without the lock: just "not built"
        assert seen == []
        with entry.lock():  # as a build does next: warn once, move the entry out of the way
            assert not entry.is_built()
    assert [w.category for w in seen] == [KsbindWarning]
    message = str(seen[0].message)
    assert "\n" not in message and "damaged" in message and str(entry.dir) in message and why in message
    assert not entry.dir.exists() and leftovers(root) == []


def test_missing_or_unfinished_entries_are_rebuilt_silently(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    entry = CacheEntry(root, "m", "a" * 64)
    assert entry.check() == ("missing", "")
    entry.dir.mkdir(parents=True)
    (entry.dir / "m.pyi").write_text("stub\n")  # all a killed build (or a late stub write) leaves
    assert entry.check() == ("missing", "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with entry.lock():
            assert not entry.is_built()
    assert not entry.dir.exists()


def test_content_is_hashed_once_per_process_and_again_after_a_change(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    entry = fake_entry(tmp_path / "cache", "m", size=100_000)
    entries._verified.clear()
    hashed: list[str] = []

    def counting(path: Path | str, dir_fd: int | None = None) -> str:
        hashed.append(str(path))
        return file_sha256(path, dir_fd)

    monkeypatch.setattr(entries, "file_sha256", counting)
    assert entry.is_built() and entry.is_built() and entry.is_built()
    assert hashed == [entry.module_path.name]
    st = entry.module_path.stat()
    os.utime(entry.module_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert entry.is_built()
    assert hashed == [entry.module_path.name] * 2


def test_a_hit_records_its_use(tmp_path: Path) -> None:
    entry = fake_entry(tmp_path / "cache", "m", days_unused=3)
    assert entry.manifest_path.stat().st_mtime < time.time() - 2 * DAY
    assert entry.is_built()
    assert entry.manifest_path.stat().st_mtime > time.time() - 60
    assert str(entry.dir) in manifest.USED_HERE


@pytest.mark.parametrize("text, expected", [
    ("", DEFAULT_MAX_BYTES), ("0", DEFAULT_MAX_BYTES), ("1000", 1000), ("2G", 2 << 30),
    ("500MiB", 500 << 20), ("1.5k", 1536), ("64 KB", 64 << 10), ("7b", 7)])
def test_cache_max_bytes(text: str, expected: int) -> None:
    assert cache_max_bytes(text) == expected


@pytest.mark.parametrize("text", ["-1", "2x", "lots", "1iB", "1e9"])
def test_bad_cache_max_bytes_is_a_build_error(text: str) -> None:
    with pytest.raises(BuildError, match="KSBIND_CACHE_MAX_BYTES must be a size in bytes"):
        cache_max_bytes(text)


def test_a_bad_cap_fails_every_build_and_the_cache_command(tmp_path: Path) -> None:
    """In other processes: this one's background builds must not see the bad value."""
    env = {"KSBIND_CACHE_MAX_BYTES": "two gigs", "KSBIND_CACHE_DIR": str(tmp_path)}
    code = textwrap.dedent(f"""\
        from pathlib import Path
        from ksbind.cache.entries import CacheEntry
        from ksbind.errors import BuildError
        try:
            CacheEntry(Path({str(tmp_path)!r}), "m", "a" * 64).is_built()  # a cache hit would say so too
        except BuildError as e:
            print(e)
        """)
    out = run_python(code, env=env)
    assert out.returncode == 0 and out.stdout.startswith("KSBIND_CACHE_MAX_BYTES must be a size in bytes"), out
    cli = run_python("import sys\nfrom ksbind.cli import main\nsys.exit(main(['cache', 'list']))\n", env=env)
    assert cli.returncode == 2 and cli.stdout == ""
    assert cli.stderr.startswith("ksbind: error: KSBIND_CACHE_MAX_BYTES must be a size") and cli.stderr.count("\n") == 1


# ------------------------------------------------------------ eviction

def test_eviction_removes_least_recently_used_entries_first(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    a, b, c = (fake_entry(root, n, days_unused=d) for n, d in (("a", 5), ("b", 3), ("c", 1)))
    d = fake_entry(root, "d")
    size = {e.path.name: e.size for e in scan(root)}[a.dir.name]
    removed = evict(root, max_bytes=int(2.5 * size))
    assert [e.path for e in removed] == [a.dir, b.dir]
    assert [p.exists() for p in (a.dir, b.dir, c.dir, d.dir)] == [False, False, True, True]
    assert not a.lock_path.exists() and not b.lock_path.exists()  # the lock files go with their entries
    assert leftovers(root) == []
    # Never evicted: entries this process used, entries used in the last minutes.
    assert c.is_built()
    set_last_used(c.manifest_path, 1)
    assert evict(root, max_bytes=0) == []
    assert c.dir.exists() and d.dir.exists()
    manifest.USED_HERE.clear()
    assert [e.path for e in evict(root, max_bytes=0)] == [c.dir]  # d: used just now
    assert [e.path for e in evict(root, max_bytes=0, min_idle=0)] == [d.dir]


INSTALL_UNDER_A_CAP = """\
import os, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from ksbind.cache.entries import CacheEntry
from tests.test_cache import fake_entry
root = Path({root!r})
old = [fake_entry(root, f"old{{i}}", days_unused=10 + i) for i in range(3)]
os.environ["KSBIND_CACHE_MAX_BYTES"] = "25000"
new = fake_entry(root, "new")  # ~10 kB: the two oldest must go
print([e.dir.exists() for e in old])
os.environ["KSBIND_CACHE_MAX_BYTES"] = "1"
big = CacheEntry(root, "big", "b" * 64)
(root.parent / "big.so").write_bytes(os.urandom(50_000))
with big.lock():
    big.install(root.parent / "big.so")
print(big.is_built(), new.dir.exists(), old[0].dir.exists())
"""


def test_install_enforces_the_cap_from_the_environment(tmp_path: Path) -> None:
    """After each install, least recently used entries go until the rest fit under
    KSBIND_CACHE_MAX_BYTES; never what was just installed (even alone over the cap),
    nor an entry used in the last minutes. (In another process: this one's
    background builds must not see the tiny cap.)"""
    out = run_python(INSTALL_UNDER_A_CAP.format(repo=str(REPO), root=str(tmp_path / "cache")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[True, False, False]", "True True False"]


def test_an_entry_being_built_is_never_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KSBIND_CACHE_DIR", str(root))
    entry = fake_entry(root, "busy", days_unused=30)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from ksbind.cache.locks import build_lock
        with build_lock(Path({str(entry.lock_path)!r})):
            print("locked", flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert evict(root, max_bytes=0, min_idle=0) == []
        assert main(["cache", "clean", "--all"]) == 0
        out = capsys.readouterr().out
        assert f"kept {entry.dir.name} (busy): it is being built" in out
        assert entry.is_built()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert [e.path for e in evict(root, max_bytes=0, min_idle=0)] == [] and entry.dir.exists()
    manifest.USED_HERE.clear()  # the is_built above marked it used here
    assert [e.path for e in evict(root, max_bytes=0, min_idle=0)] == [entry.dir]


READER = """\
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from ksbind.cache.entries import CacheEntry
entry = CacheEntry(Path({root!r}), "m", {key!r})
stop = Path({stop!r})
states = {{}}
while not stop.exists():
    state, why = entry.check()
    states[state] = states.get(state, 0) + 1
    if state == "damaged":
        print("DAMAGED", why, flush=True)
print(states, flush=True)
"""


def test_a_reader_sees_the_whole_entry_or_none_while_it_is_evicted(tmp_path: Path) -> None:
    """Eviction renames an entry away in one step: a process checking it meanwhile
    finds it complete or missing, never half deleted."""
    root = tmp_path / "cache"
    entry = fake_entry(root, "m", size=3_000_000, extra={"m.py": "x = 1\n" * 1000})
    copies = []
    for i in range(40):
        copy = root / f".prepared-{i}"
        shutil.copytree(entry.dir, copy)
        copies.append(copy)
    shutil.rmtree(entry.dir)  # before the reader starts: rmtree is not atomic
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER.format(repo=str(REPO), root=str(root), key=entry.key,
                                                                   stop=str(stop))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # the reader is up
        for copy in copies:
            os.rename(copy, entry.dir)
            time.sleep(0.02)
            assert [e.path for e in evict(root, max_bytes=0, min_idle=0)] == [entry.dir]
            time.sleep(0.01)
    finally:
        stop.touch()
        out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert "DAMAGED" not in out, out
    states = eval(out.strip().splitlines()[-1])
    assert states.get("ok", 0) > 0 and states.get("missing", 0) > 0, states
    assert leftovers(root) == []


def test_a_deleted_lock_file_is_locked_afresh(tmp_path: Path) -> None:
    """Eviction deletes an entry's lock file while holding it; a build that was
    waiting on it must then lock the path anew, or two builds could run at once."""
    lock = tmp_path / ".m.lock"
    got: list[str] = []
    with build_lock(lock):
        waiter_has_it = threading.Event()
        release = threading.Event()

        def waiter() -> None:
            with build_lock(lock, timeout=30):
                got.append("waiter")
                waiter_has_it.set()
                release.wait(30)

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)  # the waiter opened the old file and waits on it
        lock.unlink()
    assert waiter_has_it.wait(10)
    with try_lock(lock) as held:
        assert not held  # the waiter holds the lock file the path names now
    release.set()
    t.join()
    assert got == ["waiter"]


# ------------------------------------------------------------ ksbind cache list|clean

def test_cache_list_and_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KSBIND_CACHE_DIR", str(root))
    old = fake_entry(root, "old_ext", days_unused=10)
    new = fake_entry(root, "new_torch_torchops", size=20_000, target="torch", extra={"new_torch.py": "x = 1\n"})
    ksc = root / "ksc-relu3-0123456789abcdef"
    ksc.mkdir()
    for name in ("ksc.json", "relu3.kso", "relu3.cpp"):
        (ksc / name).write_text("{}\n" if name == "ksc.json" else "text\n")
        set_last_used(ksc / name, 11)
    source = root / "load_ks" / "fedcba9876543210" / "ks_fedcba9876543210.ks"
    source.parent.mkdir(parents=True)
    source.write_text("(def f Float (x : Float) x)\n")
    set_last_used(source, 12)
    (root / ".gone-0123456789abcdef.lock").write_text("123\n")  # a failed build's lock
    staging = root / ".staging-x-abc"
    staging.mkdir()
    (staging / "0_a.o").write_bytes(b"\0" * 100)
    set_last_used(staging / "0_a.o", 1)
    set_last_used(staging, 1)
    (root / ".trash-y-1-2").mkdir()

    assert main(["cache", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["MODULE", "KEY", "KIND", "SIZE", "LAST", "USED"]
    rows = [line.split() for line in lines[1:-1]]
    assert [r[:3] for r in rows] == [["new_torch_torchops", new.key[:16], "torch"], ["old_ext", old.key[:16], "ks"],
                                     ["relu3", "0123456789abcdef", "ksc"],
                                     ["ks_fedcba9876543210", "fedcba9876543210", "load_ks"]]  # latest use first
    new_size = format_size(sum(f.stat().st_size for f in new.dir.iterdir()))
    assert " ".join(rows[0][3:5]) == new_size  # the module, the wrapper and the manifest
    assert lines[-1].startswith("4 entries, ") and lines[-1].endswith(f" in {root} (cap 2.0 GiB)")
    for row, days in zip(lines[2:-1], (10, 11, 12)):
        assert time.strftime("%Y-%m-%d", time.localtime(time.time() - days * DAY)) in row

    assert main(["cache", "clean", "--older-than", "5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(line.split()[1] for line in out[:-1]) == sorted([old.dir.name, ksc.name, "fedcba9876543210"])
    assert all(line.startswith("removed ") and "last used" in line for line in out[:-1])
    assert out[-1].startswith("freed ") and out[-1].endswith(f"(3 entries removed) in {root}")
    assert sorted(p.name for p in root.iterdir()) == sorted([new.dir.name, f".{new.dir.name}.lock"])

    assert main(["cache", "clean", "--all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"removed {new.dir.name} (new_torch_torchops, {new_size}, last used ")
    assert out[-1].endswith(f"(1 entry removed) in {root}")
    assert list(root.iterdir()) == []
    assert main(["cache", "list"]) == 0
    assert capsys.readouterr().out == f"0 entries, 0 B in {root} (cap 2.0 GiB)\n"


def test_cache_clean_without_options_applies_the_cap(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    old = fake_entry(root, "old", days_unused=2)
    new = fake_entry(root, "new")
    cli = run_python("import sys\nfrom ksbind.cli import main\nsys.exit(main(['cache', 'clean']))\n",
                     env={"KSBIND_CACHE_MAX_BYTES": "1", "KSBIND_CACHE_DIR": str(root)})
    assert cli.returncode == 0, cli.stderr
    out = cli.stdout.splitlines()
    assert out[0].startswith(f"removed {old.dir.name} (old, ")
    assert out[1].endswith("(1 entry removed) in " + str(root))
    assert out[2].startswith("still ") and "used in the last 10 minutes" in out[2]
    assert new.dir.exists() and not old.dir.exists()


@pytest.mark.parametrize("argv", [["cache", "clean", "--older-than", "-1"], ["cache", "clean", "--older-than", "x"],
                                  ["cache", "clean", "--all", "--older-than", "1"], ["cache"]])
def test_cache_command_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


# ------------------------------------------------------------ with real modules

BUILD = """\
import sys, numpy as np
sys.path.insert(0, {repo!r})
from ksbind import load_config
from ksbind.pipeline import build_spec
from tests.e2e_support import with_runtime
spec = with_runtime(load_config({config!r})[0], "bundled")
m = build_spec(spec, cache_dir={cache!r})
print(m.__file__)
print(float(np.asarray(m.vrelu3(np.array([2.0], dtype=np.float32)))[0]))
"""

EVICTOR = """\
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from ksbind.cache.maintenance import evict
root, stop, removed = Path({root!r}), Path({stop!r}), []
while not stop.exists():
    removed += [e.path.name for e in evict(root)]
    time.sleep(0.01)
print(sorted(removed))
"""


def private_copy(entry_dir: Path, cache: Path) -> CacheEntry:
    """A copy of a session cache entry in a cache of the test's own (never the session's files)."""
    shutil.copytree(entry_dir, cache / entry_dir.name)
    manifest = json.loads((cache / entry_dir.name / MANIFEST).read_text())
    # The module's file names its suffix: an extension's, or a torch op library's .so.
    [module_file] = [f for f in manifest["files"] if f.startswith(manifest["module"] + ".")
                     and not f.endswith((".py", ".pyi"))]
    entry = CacheEntry(cache, manifest["module"], manifest["key"], suffix=module_file[len(manifest["module"]):])
    os.utime(entry.manifest_path)  # used now, as the session's entry was
    assert entry.check() == ("ok", "")
    return entry


def start_evictor(cache: Path, stop: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """A process evicting from cache (under env's cap) until the file stop appears."""
    return subprocess.Popen([sys.executable, "-c", EVICTOR.format(repo=str(REPO), root=str(cache), stop=str(stop))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_two_builders_heal_a_damaged_entry_while_eviction_runs(tmp_path: Path) -> None:
    """A truncated module (a killed copy, a full disk): two processes build it at
    once while a third evicts with a 1-byte cap. One rebuilds it (one compile,
    one warning), the other waits and reuses it; old entries are evicted, the
    rebuilt one is not; `ksbind cache list` shows it and `clean --all` then
    leaves an empty cache."""
    relu3 = built("relu3.yaml")  # the session's build: copied, never touched
    cache = tmp_path / "cache"
    entry = private_copy(Path(str(relu3.__file__)).parent, cache)
    _truncate(entry)
    olds = [fake_entry(cache, f"old{i}", size=100_000, days_unused=30) for i in range(3)]
    stop = tmp_path / "stop"
    env = {**os.environ, "KSBIND_CACHE_MAX_BYTES": "1"}
    evictor = start_evictor(cache, stop, env)
    code = BUILD.format(repo=str(REPO), config=str(REPO / "configs" / "relu3.yaml"), cache=str(cache))
    builders = [subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        outs = [p.communicate(timeout=600) for p in builders]
    finally:
        stop.touch()
        _, evictor_err = evictor.communicate(timeout=60)
    assert evictor.returncode == 0, evictor_err
    for p, (stdout, stderr) in zip(builders, outs):
        assert p.returncode == 0, stderr
        assert stdout.splitlines()[0] == str(entry.module_path)
        assert float(stdout.splitlines()[1]) == pytest.approx(2 - 2 / 3)
    stderrs = [stderr for _, stderr in outs]
    assert sum("compiling" in e for e in stderrs) == 1, stderrs  # one rebuilt it, the other reused it
    warned = [line for e in stderrs for line in e.splitlines() if "KsbindWarning" in line]
    assert len(warned) == 1 and "is damaged" in warned[0] and "has 4000 bytes" in warned[0], stderrs
    assert entry.check() == ("ok", "")
    assert not any(e.dir.exists() for e in olds)
    assert leftovers(cache) == []

    env = {**os.environ, "KSBIND_CACHE_DIR": str(cache)}
    listed = subprocess.run([sys.executable, "-m", "ksbind", "cache", "list"], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()[1:-1]
    assert [r.split()[:3] for r in rows] == [["relu3_ext", entry.key[:16], "ks"]]
    cleaned = subprocess.run([sys.executable, "-m", "ksbind", "cache", "clean", "--all"], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    assert cleaned.stdout.splitlines()[0].startswith(f"removed {entry.dir.name} (relu3_ext, ")
    assert list(cache.iterdir()) == []


def test_cache_hits_in_other_processes_while_eviction_runs(tmp_path: Path) -> None:
    """Processes importing a cached module while another evicts with a 1-byte cap:
    every import works without compiling (an entry in use is recent, so kept),
    and only the old entries go."""
    relu3 = built("relu3.yaml")
    cache = tmp_path / "cache"
    entry = private_copy(Path(str(relu3.__file__)).parent, cache)
    olds = [fake_entry(cache, f"old{i}", size=100_000, days_unused=30) for i in range(3)]
    stop = tmp_path / "stop"
    env = {**os.environ, "KSBIND_CACHE_MAX_BYTES": "1"}
    evictor = start_evictor(cache, stop, env)
    code = BUILD.format(repo=str(REPO), config=str(REPO / "configs" / "relu3.yaml"), cache=str(cache))
    try:
        for _ in range(2):
            procs = [subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(2)]
            for p in procs:
                stdout, stderr = p.communicate(timeout=300)
                assert p.returncode == 0, stderr
                assert "compiling" not in stderr and "KsbindWarning" not in stderr, stderr
                assert float(stdout.splitlines()[1]) == pytest.approx(2 - 2 / 3)
    finally:
        stop.touch()
        evicted, evictor_err = evictor.communicate(timeout=60)
    assert evictor.returncode == 0, evictor_err
    assert eval(evicted) == sorted(e.dir.name for e in olds)
    assert entry.check() == ("ok", "")


TORCH_BUILD = """\
import sys
sys.path.insert(0, {repo!r})
from ksbind import load_config
from ksbind.targets.torch import build as build_torch
from ksbind.pipeline import build_spec
from tests.e2e_support import with_runtime

def no_compiling(*args, **kwargs):
    print("COMPILE", flush=True)
    raise SystemExit(3)

build_torch._compile = no_compiling
spec = with_runtime(load_config({config!r})[0], "bundled")
m = build_spec(spec, cache_dir={cache!r})
import torch
print(m.__file__)
print(float(m.relu3(torch.tensor([2.0]))[0]))
"""


def test_torch_entries_are_verified_too(tmp_path: Path) -> None:
    """The torch backend's entry records its wrapper NAME.py and stub NAME.pyi with
    the op library; an edited wrapper makes it rebuild (here: reach its compile)."""
    pytest.importorskip("torch")
    wrapper = Path(str(built("relu3_torch.yaml").__file__))
    manifest = json.loads((wrapper.parent / MANIFEST).read_text())
    assert set(manifest["files"]) == {"relu3_torch.py", "relu3_torch.pyi", "relu3_torch_torchops.so"}
    assert (manifest["module"], manifest["target"]) == ("relu3_torch_torchops", "torch")
    cache = tmp_path / "cache"
    entry = private_copy(wrapper.parent, cache)
    code = TORCH_BUILD.format(repo=str(REPO), config=str(REPO / "configs" / "relu3_torch.yaml"), cache=str(cache))
    hit = run_python(code, cwd=tmp_path)
    assert hit.returncode == 0, hit.stderr
    assert "COMPILE" not in hit.stdout and hit.stdout.splitlines()[0] == str(entry.dir / "relu3_torch.py")
    assert float(hit.stdout.splitlines()[1]) == pytest.approx(2 - 2 / 3)
    with open(entry.dir / "relu3_torch.py", "a") as f:
        f.write("raise ImportError('a damaged wrapper')\n")
    damaged = run_python(code, cwd=tmp_path)
    assert damaged.returncode == 3 and damaged.stdout.strip() == "COMPILE", damaged.stderr
    assert "relu3_torch_torchops: the cached build" in damaged.stderr and "relu3_torch.py has" in damaged.stderr
    assert not entry.dir.exists()  # moved out of the way for the rebuild


def test_a_quiet_build_does_not_announce_waiting_for_a_lock(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """build_spec(quiet=True) sets the build session's quiet: waiting for
    a lock logs nothing (the tests build modules on background threads while
    other tests capture logs); a loud wait says so once, on ksbind.cache."""
    import logging
    import threading

    from ksbind import session

    lock = tmp_path / "x.lock"

    def wait_for_lock(quiet: bool) -> None:
        with session.changed(quiet=quiet), build_lock(lock, 30, what="x"):
            pass

    caplog.set_level(logging.INFO, logger="ksbind")
    for quiet, expected in [(True, ""), (False, "x: waiting for another build")]:
        caplog.clear()
        with build_lock(lock, 30, what="x"):
            waiter = threading.Thread(target=wait_for_lock, args=(quiet,))
            waiter.start()
            waiter.join(0.5)
            assert waiter.is_alive()  # it is waiting
        waiter.join(30)
        records = [(r.name, r.getMessage()) for r in caplog.records]
        if expected:
            assert len(records) == 1 and records[0][0] == "ksbind.cache" and expected in records[0][1], records
        else:
            assert records == [], records
