"""numpy's BLAS (OpenBLAS in the numpy wheels) held to one thread in a process that searches.

A search's matrix products are small (a few hundred candidate examples times the query's vectors), yet
large enough for OpenBLAS to split them over every core; its worker threads then spin, waiting for more
work, long after each product. On two cores that spinning took 8 of a search's 18 ms of CPU (the
candidates' rescoring measured at 18.1 ms of process CPU per search with two BLAS threads, 10.5 ms with
one, the answers identical) and took the core the query's embedding needed. One thread is set at run
time (numpy may be imported long before the registry opens), through the library's own setter, so
`OPENBLAS_NUM_THREADS` set by an operator before start still wins: it is read first and left as it is.
Another BLAS (a numpy built against MKL or Accelerate) is left alone.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading

log = logging.getLogger(__name__)
_SETTERS = (  # the plain library's name, and the numpy wheels' (scipy-openblas, 64-bit integers or not)
    "openblas_set_num_threads",
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
)
_done = threading.Lock()
_state: list[bool] = []


def _openblas_paths() -> list[str]:
    """The OpenBLAS libraries this process has loaded (Linux: its memory map)."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return sorted({line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1].lower() and "/" in line})
    except OSError:
        return []


def one_blas_thread() -> bool:
    """Run numpy's OpenBLAS on one thread from now on (once per process); whether it was set."""
    with _done:
        if _state:
            return _state[0]
        import numpy  # noqa: F401  (loads the library this looks for)

        done = False
        if "OPENBLAS_NUM_THREADS" not in os.environ:
            for path in _openblas_paths():
                try:
                    library = ctypes.CDLL(path)
                except OSError:
                    continue
                for name in _SETTERS:
                    setter = getattr(library, name, None)
                    if setter is not None:
                        setter.argtypes = [ctypes.c_int]
                        setter(1)
                        done = True
                        break
        log.debug("numpy's BLAS on one thread: %s", done)
        _state.append(done)
        return done
