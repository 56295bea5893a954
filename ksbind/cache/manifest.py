"""The record each module entry keeps of what it holds: ``manifest.json``, its
format, and reading it (written last by ``CacheEntry.install``, read by
``CacheEntry.check`` and by ``ksbind cache list``)."""
from __future__ import annotations

from typing import Any

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


def manifest_files(manifest: Any) -> dict[str, tuple[int, str]]:
    """A manifest's files as {name: (size, sha256)}; KeyError/TypeError/ValueError if malformed."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError("not a ksbind manifest")
    out: dict[str, tuple[int, str]] = {}
    for name, info in manifest["files"].items():
        size, digest = info["size"], info["sha256"]
        if not isinstance(name, str) or "/" in name or name.startswith(".") or not isinstance(size, int) \
                or not isinstance(digest, str):
            raise ValueError(f"bad file record {name!r}")
        out[name] = (size, digest)
    return out


__all__ = ["MANIFEST", "MANIFEST_FORMAT", "manifest_files"]
