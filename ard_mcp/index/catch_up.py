"""Keeping the vector index in step with the store through an outage of the vector index (a Chroma server
down or restarting), so that a write is acknowledged if and only if it is saved.

A write is saved when the store commits it; the store is the source of truth and Chroma a derived copy
that can always be rebuilt from it. So once the store has committed, the vector index failing cannot undo
the write, and answering 503 would tell a client that a saved write failed (issue #57 found 6 of 6 such
writes saved anyway). Instead the write is answered as saved, and what the vector index lacks stays queued
in the store until it answers again: the written agents keep the `vectors_pending` mark the store's write
set in the same transaction, and the records a write removed are kept in `vector_deletions`. Both are sent
before this process's next write or search, and every `RETRY_SECONDS` by a background thread meanwhile,
so other processes sharing the store and the Chroma server see the writes within seconds of its return.
A process that starts sends whatever another one left queued (`catch_up` when the index opens).

A new embedded index puts Chroma off (`VectorIndex.defers`): a write that only adds goes to the index's
in-process copy, which answers searches, and is sent to Chroma `PUT_OFF_SECONDS` later (or before the next
write it cannot put off, or when the registry closes), its agents kept pending in the store until then, so a
process killed first leaves them for the next start to send, as after an outage. A new registry's first
answer so waits for none of Chroma's import, opening and writing of the bundled snapshot (~0.9 s of CPU on
the 2-core machine).

Removals go first, and a removal whose (example id, agent id) the store holds again is dropped unsent:
SQLite may give a new example the id of one removed (the highest id is reused), and the removal queued for
the old record must not delete the new one's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np

from ard_mcp.errors import VectorIndexUnavailable
from ard_mcp.index.records import Mark
from ard_mcp.index.store.base import Store
from ard_mcp.index.vectors import VectorIndex

log = logging.getLogger(__name__)

RETRY_SECONDS = 2.0  # between attempts to send queued vector changes while the vector index does not answer
PUT_OFF_SECONDS = 2.0  # a write a new index put off is sent this long after the first of them (the first searches are over)
_AGENTS_A_BATCH = 1000  # pending agents whose vectors one step reads from the store and sends
_DELETIONS_A_BATCH = 4000

Pairs = Sequence[tuple[int, int]]  # (example id, agent id)


def send_queued(store: Store, index: VectorIndex) -> int:
    """Send the vector index every queued removal and the vectors of every agent still marked pending (an
    interrupted write, or one made while the index was unreachable); returns the agents restored."""
    while queued := store.queued_vector_deletions(_DELETIONS_A_BATCH):
        index.delete([(e, a) for e, a, live in queued if not live])
        store.forget_vector_deletions([(e, a) for e, a, _ in queued])
    pending = store.pending_marks()
    for start in range(0, len(pending), _AGENTS_A_BATCH):
        marks = pending[start : start + _AGENTS_A_BATCH]
        rows = store.examples_of([agent for agent, _ in marks])  # these writes' examples, or a later write's (which keeps its mark)
        if rows:
            index.add([(r.id, r.agent_id) for r in rows], np.stack([r.vector for r in rows]))
        store.mark_vectors_done(marks)
    return len(pending)


class VectorSync:
    """The vector index's side of every write, after the store has committed it. `lock` is the registry's
    write lock: queued changes are sent between writes, never during one."""

    def __init__(self, store: Store, index: VectorIndex, lock: threading.RLock) -> None:
        self._store = store
        self._index = index
        self._lock = lock
        self._behind = False  # this process queued changes the vector index has not received
        self._stopped = threading.Event()
        self._retrier: threading.Thread | None = None
        self._retrier_lock = threading.Lock()  # a retrier finishing never misses a change queued as it finishes
        self._put_off: list[tuple[Pairs, np.ndarray, Sequence[Mark]]] = []  # additions in the copy only (`VectorIndex.defers`)
        index.when_opened(self.send_put_off)  # whatever opens Chroma first finds it with every write put off

    @property
    def behind(self) -> bool:
        return self._behind

    def replace(self, removed: Pairs, added: Pairs, vectors: np.ndarray, marks: Sequence[Mark]) -> None:
        """Send a committed write's changes; on success the store stops calling its agents pending. On a
        failure they stay pending and the removals are queued: the write stands, and is sent later. A new
        index may put off a write that only adds (module docstring): an added record's mark stays in the store
        until it is sent, but a removal put off would live in this process alone, and a kill before it is sent
        would leave Chroma a vector of an example the store no longer has."""
        if not removed and self._index.defers(len(added)):
            self._index.remember(added, vectors)
            if not self._put_off:
                timer = threading.Timer(PUT_OFF_SECONDS, self.send_put_off)
                timer.daemon = True
                timer.start()
            self._put_off.append((list(added), np.array(vectors), list(marks)))  # the caller reuses its lists
            return
        self._send(removed, added, vectors, marks)  # opening Chroma first sends what was put off (`when_opened`)

    def send_put_off(self) -> None:
        """Send Chroma the writes a new index put off (opening it), in order."""
        with self._lock:
            put_off, self._put_off = self._put_off, []
            for write in put_off:  # opening Chroma for the first one calls this again, with nothing left
                self._send([], *write)

    def _send(self, removed: Pairs, added: Pairs, vectors: np.ndarray, marks: Sequence[Mark]) -> None:
        try:
            if removed or added:
                self._index.replace(removed, added, vectors)
        except Exception as exc:  # the store committed: whatever failed, the write is saved and gets sent later
            self._queue(removed, exc)
            return
        try:
            if marks:
                self._store.mark_vectors_done(marks)
        except Exception as exc:  # the marks stay: the vectors are sent again (the same ones) once the store answers
            self._queue([], exc)

    def delete(self, removed: Pairs) -> None:
        """Remove a committed deletion's records, or queue them."""
        self.replace(removed, [], np.zeros((0, 0), np.float32), [])

    def _queue(self, removed: Pairs, exc: Exception) -> None:
        if not self._behind:
            said = log.warning if isinstance(exc, VectorIndexUnavailable) else log.error  # an unreachable server is expected
            said("a saved write did not reach the vector index (%s); it is queued and sent when both answer again", exc)
        self._behind = True
        if removed:
            try:
                self._store.queue_vector_deletions(removed)
            except Exception as failed:  # the store went too: the records stay, and searches skip agents the store lacks
                log.warning("could not queue %d vector record(s) for removal: %s", len(removed), failed)
        self._start_retrying()

    def catch_up(self) -> bool:
        """Send what is queued, if this process queued anything; whether the vector index has it all now."""
        if not self._behind:
            return True
        with self._lock:
            if not self._behind or self._stopped.is_set():
                return not self._behind
            try:
                restored = send_queued(self._store, self._index)
            except Exception as exc:
                log.debug("the vector index is still behind: %s", exc)
                return False
            self._behind = False
        log.warning("the vector index answers again and has every saved write (%d agent(s) sent)", restored)
        return True

    def stop(self) -> None:
        """No more retries (the registry closes, or a reindex replaces the vector index); what was put off is sent
        first (a failure leaves it pending in the store for the next start)."""
        self.send_put_off()
        self._stopped.set()

    def _start_retrying(self) -> None:
        with self._retrier_lock:
            if self._retrier is None:
                self._retrier = threading.Thread(target=self._retry, name="ard-mcp-vector-catch-up", daemon=True)
                self._retrier.start()

    def _retry(self) -> None:
        while not self._stopped.wait(RETRY_SECONDS):
            if self.catch_up():
                with self._retrier_lock:
                    if not self._behind:
                        self._retrier = None
                        return
