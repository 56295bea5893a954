"""Building two modules of one toolchain in two processes, and reading from the
second's compile commands which precompiled header its units used: shared by
tests/test_pch_reuse.py (g++) and tests/test_clang.py."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RELU3 = REPO / "examples" / "relu3"

CONFIG = """\
name: {name}
target: {target}
ks: [{relu3}/relu3.ks]
cpp: [{relu3}/relu3.cpp]
bindings:
  - {{name: {binding}, function: "[vrelu3 (Tensor 1 Float)]", vjp: {binding}_vjp}}
output: {out}
"""

CALL = {
    "ks": "__import__('numpy').asarray(m.{b}(m.Tensor_1_Float(__import__('numpy').array([0.5, 2.0], "
          "dtype='float32')))).tolist()",
    "python": "m.{b}([0.5, 2.0])",
    "torch": "m.{b}(__import__('torch').tensor([0.5, 2.0])).tolist()",
    "jax": "m.{b}(__import__('numpy').array([0.5, 2.0], dtype='float32')).tolist()",
}


@dataclass
class Built:
    values: list[float]
    commands: list[list[str]]   # the compiler commands of the units this build compiled
    log: str                    # everything the build logged (KSBIND_VERBOSE=2)


def build_in_new_process(tmp: Path, cache: Path, target: str, name: str, env: dict[str, str]) -> Built:
    """Build one relu3 module (its own name and binding name, so no object of
    another module's generated code fits it) in a fresh process and call it."""
    binding = f"v_{name}"
    config = tmp / f"{name}.yaml"
    config.write_text(CONFIG.format(name=name, target=target, relu3=RELU3, binding=binding, out=tmp / "out" / name))
    code = (f"import ksbind, json; m = ksbind.build({str(config)!r}); "
            f"print('VALUES', json.dumps([float(x) for x in {CALL[target].format(b=binding)}]))")
    full = {**os.environ, "KSBIND_CACHE_DIR": str(cache), "KSBIND_VERBOSE": "2", **env}
    proc = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=900,
                          cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-4000:]
    import json

    values = next(line for line in proc.stdout.splitlines() if line.startswith("VALUES "))
    commands = [shlex.split(line.split("$ ", 1)[1]) for line in proc.stderr.splitlines()
                if "$ " in line and " -c " in line and " -o " in line]
    return Built(json.loads(values.removeprefix("VALUES ")), commands, proc.stderr)


def wait_for_background_pch(cache: Path, timeout: float = 900) -> None:
    """Until no process builds a precompiled header in this cache (pch/KEY/building)."""
    deadline = time.monotonic() + timeout
    while list(cache.glob("pch/*/building")):
        assert time.monotonic() < deadline, "the background precompiled header build did not finish"
        time.sleep(0.2)


def included_headers(built: Built) -> dict[str, str]:
    """The compiled unit (file name) -> the header it was given with -include."""
    out = {}
    for cmd in built.commands:
        if "-include" in cmd:
            out[Path(cmd[cmd.index("-c") + 1]).name] = cmd[cmd.index("-include") + 1]
    return out


def used_precompiled(command: list[str], suffix: str) -> bool:
    """Whether the compiler loads a precompiled header for this unit: its compile
    re-run, syntax only, with -H (g++ marks the .gch it loaded with '!') or
    -print-stats (clang reports AST file statistics only when it loaded one)."""
    cmd = [a for a in command if a not in ("-MD",)]
    i = cmd.index("-o")
    del cmd[i:i + 2]
    if "-MF" in cmd:
        j = cmd.index("-MF")
        del cmd[j:j + 2]
    if suffix == ".gch":
        proc = subprocess.run([*cmd, "-fsyntax-only", "-H", "-Winvalid-pch"], capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return bool(re.search(r"^! .*\.gch$", proc.stderr, re.MULTILINE))
    proc = subprocess.run([*cmd, "-fsyntax-only", "-Xclang", "-print-stats"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return "AST File Statistics" in proc.stderr  # printed only when a precompiled header was loaded
