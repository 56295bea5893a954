"""sccache as the compiler launcher (``KSBIND_CCACHE=sccache``): what ksbind
does so that one machine's compiles are hits on another's (docs/building.md,
"A team's shared compile cache").

sccache's key for a C++ compile is the compiler, the arguments and the
preprocessed text, and paths are part of both: the units ksbind generates are
compiled from copies under the ksbind cache folder (``units/HASH/``), into its
staging folders, so two machines whose cache folders differ (another user's
home, another CI workspace) would never share a compile. sccache strips the
folders named in ``SCCACHE_BASEDIRS`` from paths before hashing; its server
reads that variable when it starts. So ksbind:

- adds the cache folder to ``SCCACHE_BASEDIRS`` in the environment of the
  compiles it runs (a server that one of them starts gets it);
- asks the running server once per process and cache folder which folders it
  strips (``sccache --show-stats --stats-format json``), and warns when the
  cache folder is not among them (a server started elsewhere, without it);
- compiles the generated units without the shared precompiled header (the
  ``-include`` of a header in the cache folder that exists on one machine and
  not yet on another would make their command lines differ): see
  compile.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from ksbind.errors import KsbindWarning, warn

BASEDIRS = "SCCACHE_BASEDIRS"

#: Per process: the (sccache, basedirs) pairs already checked and warned about, once.
_checked: set[tuple[str, str]] = set()
_checked_lock = threading.Lock()


def is_sccache(launch: Sequence[str]) -> bool:
    """Whether this launcher is sccache (by its program's name)."""
    return bool(launch) and os.path.basename(launch[0]).startswith("sccache")


def _covered(root: str, basedirs: Sequence[str]) -> bool:
    return any(root == b or root.startswith(b.rstrip("/") + "/") for b in basedirs if b)


def compile_env(root: Path) -> dict[str, str]:
    """The compiles' environment: SCCACHE_BASEDIRS with the cache folder in it."""
    env = dict(os.environ)
    real = os.path.realpath(root)
    dirs = [d for d in os.environ.get("SCCACHE_BASEDIRS", "").split(os.pathsep) if d]
    if not _covered(real, dirs):
        env[BASEDIRS] = os.pathsep.join([*dirs, real])
    return env


def check_server(launch: Sequence[str], root: Path, env: dict[str, str]) -> None:
    """Once per process and cache folder: warn when sccache's server does not strip
    the cache folder from paths (then its compiles are shared only with machines
    whose cache folder has the same path). Starts the server (with ``env``) when
    none runs, as the first compile would."""
    real = os.path.realpath(root)
    with _checked_lock:
        if (launch[0], real) in _checked:
            return
        _checked.add((launch[0], real))
    try:
        proc = subprocess.run([launch[0], "--show-stats", "--stats-format", "json"], env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=60)
        basedirs = json.loads(proc.stdout).get("basedirs")
    except (OSError, subprocess.TimeoutExpired, ValueError, AttributeError):
        return  # an older sccache, or none: the compile itself reports a launcher that fails
    if not isinstance(basedirs, list):
        return
    dirs = [os.path.realpath(str(d)) for d in basedirs]
    if not _covered(real, dirs):
        warn(f"sccache's server strips {dirs or 'no folders'} from paths ({BASEDIRS}), not ksbind's cache folder "
             f"{real}: its compiles are shared only with machines whose cache folder has this same path (start "
             f"the server with {BASEDIRS} naming it: sccache --stop-server, then build again)", KsbindWarning)


__all__ = ["is_sccache", "compile_env", "check_server", "BASEDIRS"]
