"""Inter-process locks on cache entries: ``build_lock`` (waits) and ``try_lock``
(does not).

A lock is ``fcntl.flock`` on a lock file: the kernel drops it when the holder
dies, so a killed build never leaves a lock that hangs the next one (the file
may stay; it is only a name to lock, and may be deleted by its holder: see
build_lock).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ksbind import session
from ksbind.cache.manifest import still_named
from ksbind.errors import BuildError, Location
from ksbind.log import get_logger

DEFAULT_LOCK_TIMEOUT = 900.0

_log = get_logger("cache")


@contextlib.contextmanager
def build_lock(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT, what: str = "") -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``path`` (created if missing).

    Waits up to ``timeout`` seconds (then BuildError), logging one line
    (``ksbind.cache``, INFO) while another process holds it. The kernel releases a flock when its
    holder exits or is killed, so no lock ever outlives its build.

    The holder may delete the lock file (eviction and ``ksbind cache clean``
    do, with the entry): a waiter that then gets the lock on the deleted file
    sees that the path no longer names it and locks the path afresh.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    announced = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as e:
                    if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                if not announced:
                    # The session's quiet, set by ``build_spec(quiet=True)`` for the build's own thread and
                    # the compile threads it starts: a quiet build logs no progress, not even this wait.
                    if _log.isEnabledFor(logging.INFO) and not session.current().quiet:
                        _log.info("%s: waiting for another build%s", what or path.name, _read_holder(fd))
                    announced = True
                if time.monotonic() - start > timeout:
                    raise BuildError(f"timed out after {timeout:.0f} s waiting for the build lock",
                                     Location(str(path)))
                time.sleep(0.05)
            if not still_named(fd, path):  # deleted (and maybe recreated) by its last holder
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            return
        finally:
            os.close(fd)


@contextlib.contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """The lock of build_lock, without waiting: yields whether it was taken
    (False: another process, or another lock in this one, holds it)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            yield False
            return
        try:
            yield still_named(fd, path)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


__all__ = ["build_lock", "try_lock", "still_named", "DEFAULT_LOCK_TIMEOUT"]
