"""``ksbind.build``: a no-op build renders nothing.

``ksbind.build(config)`` of a module none of whose inputs changed since its
last build returns that build without importing the pipeline, Jinja2 or YAML:
it reads the module's no-op record (``CACHE/noop/HASH.json``, one per config
file, module name, template folders and cache folder), checks that every
input it lists is unchanged (ksbind/inputs.py says what a record holds), that
the generated files are still in place and that the cache entry is intact
(the check every build makes), and imports the module from the entry as the
build did. Anything else (no record, any difference, a process that already
loaded another build of the name) builds as before (ksbind/pipeline.py), and
that build, when it succeeds, writes the record anew. A build given a
``ModuleSpec`` has no config file to key a record by: it always builds.

``KSBIND_NOOP=0`` turns the records off (every build renders and checks the
cache as before). docs/building.md#no-op-builds has the details and figures.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ksbind import inputs
from ksbind.cache.layout import NOOP_DIR, cache_root

if TYPE_CHECKING:
    from ksbind.spec import ModuleSpec


def enabled() -> bool:
    return os.environ.get("KSBIND_NOOP", "").strip() != "0"


def lookup(config: str | os.PathLike[str], name: str | None, templates: Sequence[str], root: Path) -> list[Any]:
    """What a record is found by (and must hold, checked on reading it)."""
    return [os.path.abspath(config), name, [os.fspath(t) for t in templates], os.path.abspath(root)]


def record_path(root: Path, key: list[Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return root / NOOP_DIR / f"{digest}.json"


def build(config_or_spec: str | os.PathLike[str] | ModuleSpec, *, name: str | None = None,
          templates: Sequence[str] = (), cache_dir: str | os.PathLike[str] | None = None,
          quiet: bool = False) -> ModuleType:
    """Generate, compile (or reuse the cached build) and import one module.

    ``config_or_spec`` is a config path or a ModuleSpec. A config holding
    several modules needs ``name`` to say which one. Progress is logged to the
    ``ksbind`` logger (one line per compiled unit; KSBIND_VERBOSE, docs/building.md);
    ``quiet=True`` drops this call's progress (warnings and errors remain).
    A module none of whose inputs changed since it was last built from this
    config is imported from the cache without rendering (docs/building.md#no-op-builds).
    """
    if not isinstance(config_or_spec, (str, os.PathLike)) or not enabled():
        from ksbind.pipeline import full_build

        return full_build(config_or_spec, name=name, templates=templates, cache_dir=cache_dir, quiet=quiet)
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    key = lookup(config_or_spec, name, templates, root)
    where = record_path(root, key)
    module, why = reuse(where, key)
    if module is not None:
        return module
    from ksbind import log
    from ksbind.pipeline import full_build

    log.setup()
    if not quiet:
        log.get_logger("cache").debug("%s: building, not reusing the last build: %s", os.fspath(config_or_spec), why)
    with inputs.recording() as recorder:
        module = full_build(config_or_spec, name=name, templates=templates, cache_dir=cache_dir, quiet=quiet)
    _write(where, recorder, key)
    return module


def reuse(where: Path, key: list[Any]) -> tuple[ModuleType | None, str]:
    """The module a record describes, when nothing it lists changed; else None and why."""
    try:
        record = json.loads(where.read_bytes())
    except FileNotFoundError:
        return None, "no record of an earlier build"
    except (OSError, ValueError) as e:
        return None, f"its record {where} is unreadable ({e})"
    try:
        if record.get("format") != inputs.FORMAT or record.get("lookup") != key:
            return None, "its record is another ksbind's or another build's"
        why = inputs.changed(record)
        if why is not None:
            return None, why
        return _load(record["module"])
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        return None, f"its record {where} is malformed ({type(e).__name__})"


#: Per process, by stat identity: entry files this process hashed (ksbind.cache.manifest.check_entry).
_verified: dict[str, tuple[int, int, int, str]] = {}


def _load(module: dict[str, Any]) -> tuple[ModuleType | None, str]:
    from ksbind.backend import loader
    from ksbind.cache import manifest

    name, key = str(module["name"]), str(module["key"])
    if loader.needs_version(name, key):
        return None, f"this process loaded another build of {name}"
    e = module["entry"]
    entry_dir = Path(e["dir"])
    # The check every build makes of an entry (CacheEntry.check), without the rest of the cache's code.
    state, _ = manifest.check_entry(entry_dir, str(e["name"]), str(e["key"]), str(e["module_file"]), _verified)
    if state != "ok":  # missing, or damaged: the build says so and rebuilds it
        return None, f"its cache entry {entry_dir} is {state}"
    manifest.note_used(entry_dir)  # as CacheEntry.mark_used: eviction here leaves it alone, and
    with contextlib.suppress(OSError):  # the manifest's mtime is its last use (a read-only cache still works)
        os.utime(entry_dir / manifest.MANIFEST)
    loaded: ModuleType | None = None
    for kind, *args in module["steps"]:
        if kind == "import":
            import importlib

            loaded = importlib.import_module(str(args[0]))
        elif kind == "extension":
            loaded = loader.import_from_path(str(args[0]), Path(args[1]))
        elif kind == "wrapper":
            loaded = loader.import_wrapper(str(args[0]), Path(args[1]))
        else:
            return None, f"its record names an unknown step {kind!r}"
    if loaded is None:
        return None, "its record names no module"
    loader.note_loaded(name, key)
    sys.modules[name] = loaded  # as a build leaves it: `import NAME` gets this module
    return loaded, ""


def _write(where: Path, recorder: inputs.Recorder, key: list[Any]) -> None:
    """The record of the build just made, or none (an old one removed) when it cannot be reused."""
    from ksbind import log
    from ksbind.fileio import write_atomic

    try:
        if recorder.refused is not None or recorder.module is None:
            log.get_logger("cache").debug("%s: no no-op record: %s", key[0], recorder.refused or "no module")
            where.unlink(missing_ok=True)
            return
        write_atomic(where, inputs.dumps(recorder.record(key)))
    except OSError as e:  # a read-only cache still builds; the next build only renders again
        log.get_logger("cache").debug("%s: no no-op record written: %s", key[0], e)


__all__ = ["build", "reuse", "lookup", "record_path", "enabled"]
