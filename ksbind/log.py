"""ksbind's progress, through the standard ``logging`` module.

Loggers: ``ksbind`` and one child per stage: ``ksbind.ksc`` (ksc runs),
``ksbind.compile`` (compiling and linking: one INFO line per unit, the build's
start and end; DEBUG: the command lines), ``ksbind.cache`` (waiting for a lock,
cache hits). An application that configures logging gets these records like
any library's. One that configures nothing still sees progress: the first
build (or the CLI) installs ksbind's own handler, which writes short
``ksbind: ...`` lines to the current ``sys.stderr`` (a terminal, or a
notebook's stderr), and only while neither the root logger nor ``ksbind``
has a handler of the application's.

Verbosity (the same for ``ksbind.build`` and ``ksbind.load_ks``, default 1):
``KSBIND_VERBOSE=0`` warnings only, ``1`` progress (INFO), ``2`` also the
compiler's command lines (DEBUG); the CLI's ``-q``/``-v`` mean 0 and 2. A
call's ``quiet=True`` silences that call's INFO and DEBUG records (its
threads included: the build session's ``quiet``, ksbind/session.py, is in the
context they inherit), whatever the handler.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from ksbind import session

LOGGER_NAME = "ksbind"
#: The stages' loggers (``ksbind.ksc`` is written by ksbind/ksc/driver.py and planner.py).
STAGES = ("ksc", "compile", "cache")

#: KSBIND_VERBOSE's values: the ``ksbind`` logger's level.
LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}
DEFAULT_VERBOSITY = 1



class _QuietFilter(logging.Filter):
    """Drops a quiet call's records below WARNING."""

    def filter(self, record: logging.LogRecord) -> bool:
        # The build session's quiet (ksbind/session.py): set by ``build(quiet=True)`` and
        # ``load_ks(quiet=True)`` for the call's own thread and the threads it starts.
        return record.levelno >= logging.WARNING or not session.current().quiet


class _StderrHandler(logging.Handler):
    """ksbind's default handler: ``ksbind: MESSAGE`` on whatever ``sys.stderr``
    is at the time (pytest and notebooks replace it). It stands aside once
    the application has configured a handler of its own on the root logger
    (which the record reaches anyway)."""

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return
        try:
            text = record.getMessage()
            if record.levelno >= logging.WARNING:
                text = f"{record.levelname.lower()}: {text}"
            stream = sys.stderr
            if stream is None:  # pythonw: no console
                return
            stream.write(f"ksbind: {text}\n")
            stream.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


_quiet_filter = _QuietFilter()
_handler = _StderrHandler()
#: Per process, as logging's own configuration is: the verbosity a caller chose (the CLI's -q/-v):
#: later setup() calls keep it over KSBIND_VERBOSE.
_chosen: list[int] = []


def get_logger(stage: str | None = None) -> logging.Logger:
    """``ksbind`` or its child ``ksbind.STAGE``, with the quiet filter."""
    logger = logging.getLogger(LOGGER_NAME if stage is None else f"{LOGGER_NAME}.{stage}")
    if _quiet_filter not in logger.filters:
        logger.addFilter(_quiet_filter)
    return logger


for _stage in (None, *STAGES):  # ksbind.ksc too, which ksc/driver.py and planner.py get with logging.getLogger
    get_logger(_stage)


def env_verbosity() -> int | None:
    """KSBIND_VERBOSE as 0, 1 or 2 (larger numbers mean 2); None when unset or not a number."""
    text = os.environ.get("KSBIND_VERBOSE", "").strip()
    if not text.lstrip("-").isdigit():
        return None
    return max(0, min(2, int(text)))


def setup(verbosity: int | None = None) -> None:
    """Make ksbind's progress visible: called by every build and by the CLI.

    ``verbosity`` (the CLI's -q/-v), else KSBIND_VERBOSE, sets the ``ksbind``
    logger's level; with neither, an application's own level is left alone.
    When the application configured no handler (root's or ksbind's), ksbind's
    stderr handler is added and the level defaults to INFO.
    """
    logger = logging.getLogger(LOGGER_NAME)
    if verbosity is not None:
        _chosen[:] = [verbosity]
    chosen = _chosen[0] if _chosen else env_verbosity()
    if chosen is not None:
        logger.setLevel(LEVELS[max(0, min(2, chosen))])
    configured = logging.getLogger().handlers or [h for h in logger.handlers if h is not _handler]
    if configured:
        if _handler in logger.handlers:  # added before the application configured logging: hand over
            logger.removeHandler(_handler)
            if chosen is None:
                logger.setLevel(logging.NOTSET)
        return
    if _handler in logger.handlers:
        return
    logger.addHandler(_handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(LEVELS[DEFAULT_VERBOSITY])


@contextlib.contextmanager
def verbosity(level: int | None) -> Iterator[None]:
    """setup(level) for a block (the CLI's command), then the ``ksbind`` logger's level as it was."""
    logger = logging.getLogger(LOGGER_NAME)
    saved_level, saved_chosen = logger.level, list(_chosen)
    setup(level)
    try:
        yield
    finally:
        _chosen[:] = saved_chosen
        logger.setLevel(saved_level)
        if saved_level == logging.NOTSET and _handler in logger.handlers:  # installed by this block
            logger.setLevel(LEVELS[DEFAULT_VERBOSITY])


def debug_enabled() -> bool:
    """Whether ksbind logs DEBUG records now (KSBIND_VERBOSE=2, -v): then tracebacks keep ksbind's frames too."""
    return logging.getLogger(LOGGER_NAME).isEnabledFor(logging.DEBUG) or env_verbosity() == 2


__all__ = ["get_logger", "setup", "verbosity", "env_verbosity", "debug_enabled", "LEVELS", "DEFAULT_VERBOSITY",
           "LOGGER_NAME", "STAGES"]
