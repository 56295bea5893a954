"""Writing a wheel (PEP 427/491) from a folder laid out as it installs, for
ksbind's build backend (ksbind/build_meta.py): the ``.dist-info`` folder
(METADATA from pyproject-metadata, WHEEL, entry points, licenses, RECORD
with every file's sha256) and the zip, files in a fixed order with fixed
times so the same inputs give the same archive."""
from __future__ import annotations

import base64
import hashlib
import os
import stat
import zipfile
from pathlib import Path

from ksbind._version import __version__

#: 1980-01-01, the earliest time a zip holds: the archive does not depend on the files' times.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def dist_info_name(name: str, version: str) -> str:
    """``NAME-VERSION.dist-info``, NAME normalized as wheel file names want it."""
    return f"{wheel_name_part(name)}-{version}.dist-info"


def wheel_name_part(name: str) -> str:
    from packaging.utils import canonicalize_name

    return canonicalize_name(name).replace("-", "_")


def wheel_file_text(tag: str, purelib: bool = False) -> str:
    return (f"Wheel-Version: 1.0\nGenerator: ksbind {__version__}\nRoot-Is-Purelib: {'true' if purelib else 'false'}\n"
            f"Tag: {tag}\n")


def entry_points_text(entrypoints: dict[str, dict[str, str]]) -> str:
    lines: list[str] = []
    for group, entries in entrypoints.items():
        if entries:
            lines.append(f"[{group}]")
            lines.extend(f"{k} = {v}" for k, v in entries.items())
            lines.append("")
    return "\n".join(lines)


def write_dist_info(folder: Path, metadata: bytes, tag: str, entrypoints: dict[str, dict[str, str]],
                    licenses: dict[str, bytes]) -> None:
    """Fill the .dist-info ``folder`` (RECORD is written with the wheel)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "METADATA").write_bytes(metadata)
    (folder / "WHEEL").write_text(wheel_file_text(tag), encoding="utf-8")
    text = entry_points_text(entrypoints)
    if text:
        (folder / "entry_points.txt").write_text(text, encoding="utf-8")
    for name, data in licenses.items():
        path = folder / "licenses" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def pack(staging: Path, dist_info: str, wheel_path: Path) -> Path:
    """Zip ``staging`` (which holds ``dist_info``) into ``wheel_path``, RECORD last.
    Written under a temporary name, renamed when complete."""
    files = sorted(p for p in staging.rglob("*") if p.is_file() and p.relative_to(staging).as_posix()
                   != f"{dist_info}/RECORD")
    record_name = f"{dist_info}/RECORD"
    # dist-info last, as installers expect it at the end of the archive
    files.sort(key=lambda p: (p.relative_to(staging).parts[0] == dist_info, p.relative_to(staging).as_posix()))
    tmp = wheel_path.with_name(f".{wheel_path.name}.tmp")
    records: list[str] = []
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                arcname = path.relative_to(staging).as_posix()
                data = path.read_bytes()
                info = zipfile.ZipInfo(arcname, _ZIP_TIME)
                mode = stat.S_IMODE(path.stat().st_mode)
                info.external_attr = ((0o755 if mode & 0o111 else 0o644) | stat.S_IFREG) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
                records.append(f"{arcname},{_digest(data)},{len(data)}")
            records.append(f"{record_name},,")
            info = zipfile.ZipInfo(record_name, _ZIP_TIME)
            info.external_attr = (0o644 | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, "\n".join(records) + "\n")
        os.replace(tmp, wheel_path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return wheel_path


__all__ = ["dist_info_name", "wheel_name_part", "write_dist_info", "pack", "wheel_file_text", "entry_points_text"]
