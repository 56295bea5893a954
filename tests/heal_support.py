"""What tests/test_cache_heal.py damages and rebuilds: a small project (ks sources given to
the real ksc, C++ of the user's) on each target, the damage done to one cached file, and
which warning each damage must give.

``python -m tests.heal_support CACHE TARGET...`` builds the project for those targets in
a process of its own (the next build, as a user would run it), checks the values, and
prints the KsbindWarnings it gave as one JSON list: what the ``--all`` sweep runs after
each damage.
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ksbind.cache.layout import LINK_STUBS_DIR, NOOP_DIR, TEMPLATES_DIR

#: Functions ksc compiles, and a unit of the user's C++ beside them (so the module has
#: ksc's unit, a user unit and the generated ones): f(3) == 10.
KS = """\
(def sq Float (x : Float) (mul x x))
(def f Float (x : Float) (add (sq x) 1.0))
"""
VALUE = 10.0
CPP = """\
#include "knossos.h"
namespace ks { ks::Float heal_unused(ks::allocator *, ks::Float x) { return 2.0f * x + 1.0f; } }
"""

#: Damage done to every cached file, and to JSON records only.
KINDS = ("empty", "truncated", "garbage", "deleted")
JSON_KINDS = ("another key", "another format")


def project(folder: Path, target: str, ksc: Path) -> Path:
    """The config of the project for one target (written once per folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "m.ks").write_text(KS)
    (folder / "m.cpp").write_text(CPP)
    cfg = folder / f"heal_{target}.yaml"
    cfg.write_text(f"name: heal_{target}\ntarget: {target}\nks: [m.ks]\ncpp: [m.cpp]\nksc: {{path: {ksc}}}\n"
                   f"output: out_{target}\n")
    return cfg


def call(module: Any, target: str) -> float:
    """f(3) through the module, whatever its target."""
    if target == "jax":
        import jax.numpy as jnp

        return float(module.f(jnp.float32(3.0)))
    return float(module.f(3.0))


def damage(path: Path, kind: str) -> None:
    """Damage one file as a disk, a power loss or a person might: in place, but for a
    shared library, which is replaced by its damaged copy (one this process has loaded
    cannot be changed in place without crashing it, with or without ksbind)."""
    data = path.read_bytes()
    if kind == "deleted":
        path.unlink()
        return
    if kind == "empty":
        out = b""
    elif kind == "truncated":
        out = data[: len(data) // 2]
    elif kind == "garbage":  # every byte changed, the size kept (only the content tells)
        out = bytes(b ^ 0x5A for b in data) if data else b"\x00garbage"
    else:
        record = json.loads(data)
        if kind == "another key":
            record["key"] = "0" * 64
        else:
            record["format"] = 99
        out = json.dumps(record).encode()
    if path.suffix == ".so":
        tmp = path.with_name(path.name + ".damaged")
        tmp.write_bytes(out)
        os.replace(tmp, path)
    else:
        path.write_bytes(out)


def is_json_record(path: Path) -> bool:
    return path.name in ("manifest.json", "deps.json", "ksc.json")


def expected_warning(root: Path, path: Path, kind: str) -> str | None:
    """What the warning about this damage must name (the damaged entry's folder, or
    the file), or None when none is due: a file no record lists (a lock, a python or ks module's
    stub, a copy written again on every build) is put back without a word, as is a
    unit copy that was deleted (copies are made when missing)."""
    parts = path.relative_to(root).parts
    if parts[0] in ("objects", "pch") and len(parts) == 4 and not parts[1].startswith("."):
        return str(path.parent)  # a stored object or precompiled header (deps.json lists its files)
    if parts[0].startswith("ksc-") and len(parts) == 2:
        return str(path.parent)  # ksc's output (ksc.json lists its files)
    if parts[0] == "units" and parts[1] != "init" and not path.name.startswith("ksbind_bindings"):
        return None if kind == "deleted" else str(path)  # named by its content: other content is damage
    if parts[0] in (NOOP_DIR, TEMPLATES_DIR):
        return None  # no-op build records, compiled templates: a miss, written again when next needed
    if parts[0] == LINK_STUBS_DIR and len(parts) == 3:
        # the torch link stub (its stub.json records it); the record deleted: made again unsaid
        return None if path.name == "stub.json" and kind == "deleted" else str(path.parent)
    if len(parts) == 2 and not parts[0].startswith((".", "units", "objects", "pch", "load_ks")) \
            and not path.name.endswith(".lock") and (not path.name.endswith(".pyi") or _listed(path)):
        return str(path.parent)  # a module entry (manifest.json lists its files)
    return None


def _listed(path: Path) -> bool:
    """Whether the entry's manifest lists the file: a torch or jax module's NAME.pyi is
    part of its entry; the python and ks targets' stub is written again on every build."""
    manifest = path.parent / "manifest.json"
    try:
        return path.name in json.loads(manifest.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return False


def cached_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".trash-" not in str(p))


def build_all(root: Path, targets: list[str], ksc: Path, folder: Path) -> list[str]:
    """Build the project for each target into the cache ``root``, check f and g; the
    KsbindWarnings given, in order."""
    import ksbind
    from ksbind.errors import KsbindWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for target in targets:
            module = ksbind.build(project(folder, target, ksc), cache_dir=root, quiet=True)
            assert call(module, target) == VALUE, target
    return [str(w.message) for w in caught if issubclass(w.category, KsbindWarning)]


if __name__ == "__main__":
    cache, *names = sys.argv[1:]
    ksc_path = Path(os.environ["HEAL_KSC"])
    print(json.dumps(build_all(Path(cache), names, ksc_path, Path(os.environ["HEAL_PROJECT"]))))
