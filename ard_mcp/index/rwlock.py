"""A read-write lock: many readers at once, a writer alone, waiting writers served before new readers.

Embedded Chroma (1.5) fails a query that runs while records are deleted or upserted ("Error executing
plan: Internal error: Error finding id"): 3 of 1,700 queries racing a writer on this machine, and one
`POST /search` answered 500 under 30 concurrent clients. Queries take the read side, writes the write
side, so a query never overlaps a write and queries still run side by side.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._condition:
            while self._writing or self._writers_waiting:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                if not self._readers:
                    self._condition.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._condition:
            self._writers_waiting += 1
            while self._writing or self._readers:
                self._condition.wait()
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._condition:
                self._writing = False
                self._condition.notify_all()
