"""A worker pool for the delta-rs checks that never hangs the suite.

delta-rs runs in ``spawn``-ed worker processes (its runtime does not survive a fork). A worker that hangs
inside delta-rs (seen once in CI: its async runtime waiting on itself during a read) used to hang the whole
suite: ``.result(timeout=...)`` raised, and leaving ``with ProcessPoolExecutor(...)`` then waited for the
worker forever. :func:`spawn_pool` shuts the pool down without waiting and kills a worker that has not
exited 30 s later, so such a test fails (with the timeout) instead.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def spawn_pool(max_workers: int = 1) -> Iterator[cf.ProcessPoolExecutor]:
    """A ``spawn`` process pool whose workers are killed on exit if they do not stop by themselves."""
    pool = cf.ProcessPoolExecutor(max_workers=max_workers, mp_context=mp.get_context("spawn"))
    try:
        yield pool
    finally:
        workers = list((getattr(pool, "_processes", None) or {}).values())  # the stdlib keeps no public list
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
                worker.join(timeout=10)
