"""numpy's BLAS held to one thread in a process that searches.

A search's matrix products are small (a few hundred candidate examples times the query's vectors), yet
large enough for OpenBLAS to split them over every core; its worker threads then spin, waiting for more
work, long after each product. On two cores that spinning took 8 of a search's 18 ms of CPU (the
candidates' rescoring measured at 18.1 ms of process CPU per search with two BLAS threads, 10.5 ms with
one, the answers identical) and took the core the query's embedding needed. One thread is set at run time
(numpy may be imported long before the registry opens) with threadpoolctl, which finds the BLAS numpy
loaded whatever its build (OpenBLAS, MKL, BLIS); `OPENBLAS_NUM_THREADS` or `OMP_NUM_THREADS` set by an
operator before start still wins: it is left as it is.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)
_done = threading.Lock()
_state: list[bool] = []
_OPERATORS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> bool:
    """Run numpy's BLAS on one thread from now on (once per process); whether this set it."""
    with _done:
        if _state:
            return _state[0]
        done = False
        if not any(name in os.environ for name in _OPERATORS):
            import numpy  # noqa: F401  (loads the library threadpoolctl looks for)
            from threadpoolctl import threadpool_limits

            done = bool(threadpool_limits(limits=1, user_api="blas").get_original_num_threads())
        log.debug("numpy's BLAS on one thread: %s", done)
        _state.append(done)
        return done
