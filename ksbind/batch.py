"""Many modules built at once (``ksbind build configs/*.yaml``, pipeline.build_configs).

Modules are built concurrently, in threads: a module's build is mostly
waiting for compilers, and every compiler and linker process of this Python
process takes one of the KSBIND_JOBS slots (ksbind/backend/runner.py), so the
cores stay busy across modules while the total number of compilers never
exceeds the limit. Modules of the same name are built one after another, in
their order (the second gets a versioned name when its code differs:
ksbind/backend/loader.py decides that from what was loaded before).

Progress: one INFO line on the ``ksbind`` logger per module finished,
``[k/N] NAME done in 1.2 s`` (built, or found in the cache), or ``[k/N] NAME
failed (CONFIG:LINE)``. A
failing module does not stop the others; once all are done, the failures are
raised together as one ``BatchBuildError`` naming each module's config and
line. Each thread runs in a copy of the caller's context (the build session,
ksbind/session.py, is in the context, which threads do not inherit by themselves).
"""
from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import ModuleType

from ksbind import session
from ksbind.backend.runner import jobs, resume_runners, stop_every_runner
from ksbind.errors import BatchBuildError, KsbindError, ModuleFailure
from ksbind.log import get_logger
from ksbind.spec import ModuleSpec

log = get_logger()


def build_many(specs: Sequence[ModuleSpec], build_one: Callable[[ModuleSpec], ModuleType]) -> list[ModuleType]:
    """``build_one(spec)`` for every spec, concurrently; the modules in the specs' order.

    Raises BatchBuildError (after every other module finished) when any
    module's build raised a KsbindError; an error of any other kind (a bug)
    is raised as itself, also after the others finished.
    """
    if len(specs) <= 1:  # nothing to overlap, and errors stay exactly as a single build's
        return [build_one(s) for s in specs]
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(specs):
        groups.setdefault(s.name, []).append(i)
    total = len(specs)
    results: dict[int, ModuleType] = {}
    failures: dict[int, ModuleFailure] = {}
    other: list[BaseException] = []
    done = [0]
    done_lock = threading.Lock()
    stopping: list[bool] = []  # non-empty once Ctrl-C came: start no further module

    def finished(i: int, started: float, error: KsbindError | None) -> None:
        with done_lock:
            done[0] += 1
            k = done[0]
        s = specs[i]
        if error is None:
            log.info("[%d/%d] %s done in %.1f s", k, total, s.name, time.monotonic() - started)
        else:
            log.info("[%d/%d] %s failed (%s)", k, total, s.name, s.location or s.config_path)

    def build_group(indices: list[int]) -> None:
        for i in indices:
            if stopping:
                return
            started = time.monotonic()
            try:
                results[i] = build_one(specs[i])
            except KsbindError as e:
                failures[i] = ModuleFailure(specs[i].name, str(specs[i].location or specs[i].config_path), e)
                finished(i, started, e)
                continue
            except Exception as e:  # a bug: reported as itself once the others are done
                other.append(e)
                failures[i] = ModuleFailure(specs[i].name, str(specs[i].location or specs[i].config_path),
                                            KsbindError(f"{type(e).__name__}: {e}"))
                finished(i, started, failures[i].error)
                continue
            finished(i, started, None)

    # Twice as many modules in flight as compiler slots: one module's Python work
    # (rendering, hashing, linking's wait, importing) overlaps the others' compiles.
    workers = max(1, min(len(groups), 2 * jobs()))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ksbind-module")
    futures: list[Future[None]] = []
    # The modules' shared precompiled headers are built first and waited for
    # (the session's pch_first: ksbind/backend/compile.py): every later module of the batch uses them.
    context = contextvars.copy_context()
    context.run(session.enter, pch_first=True)
    try:
        futures = [pool.submit(context.copy().run, build_group, g) for g in groups.values()]
        pending = set(futures)
        while pending:  # woken now and then, so Ctrl-C reaches this thread promptly
            _, pending = wait(pending, timeout=0.2)
        for f in futures:
            f.result()
    except BaseException:  # Ctrl-C: no new module starts, every running compiler stops
        stopping.append(True)
        for f in futures:
            f.cancel()
        stop_every_runner()
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            resume_runners()
        raise
    pool.shutdown(wait=True)
    if other:
        raise other[0]
    if failures:
        built = [(specs[i].name, results[i]) for i in sorted(results)]
        raise BatchBuildError([failures[i] for i in sorted(failures)], total, built)
    return [results[i] for i in range(total)]


__all__ = ["build_many"]
