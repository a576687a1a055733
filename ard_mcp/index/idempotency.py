"""Idempotency keys (IETF httpapi draft "The Idempotency-Key HTTP Header Field"): a client that sends a write
with a key may send it again after a lost answer, and gets the first answer back instead of a second write.

The keys live in the store (`idempotency_keys`), not in memory, so a retry sent to another process sharing
a PostgreSQL store, or to this one after a restart, is still recognised. A key belongs to a scope (the
caller's credential), so one caller can neither replay nor block another's request. Each key remembers a
fingerprint of the request it was first used with; the same key with another request is refused (422).
While the first request runs its key is held: a second one with the key is refused (409) rather than run
beside it. Keys are kept `KEEP_SECONDS` after first use, then forgotten; a key held longer than
`LEASE_SECONDS` without an answer belonged to a process that died, and is free again.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from ard_mcp.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from ard_mcp.index.store.base import Store

log = logging.getLogger(__name__)

KEEP_SECONDS = 24 * 3600  # how long a key is remembered after its first use (the draft leaves it to the resource)
LEASE_SECONDS = 300  # a key held this long without an answer was held by a process that died; longer than any write takes
_PURGE_EVERY = 600  # seconds between sweeps of expired keys (each claim also frees its own key once expired)


@dataclass(frozen=True)
class KeptAnswer:
    """An answer as it was given: status, headers (the HTTP framing ones left out) and body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass(frozen=True)
class Claim:
    """A key taken for one request (`replay` None: run it, then `answer` or `release`), or the kept answer
    of the request that used it first (`replay`)."""

    scope: str
    key: str
    owner: str
    replay: KeptAnswer | None = None


class IdempotencyKeys:
    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._purged = 0.0

    def claim(self, scope: str, key: str, fingerprint: str, now: float | None = None) -> Claim:
        """Take `key` for a request whose `fingerprint` identifies it; or the first request's answer to replay.
        Raises `IdempotencyKeyReused` (422) for another request's key, `IdempotencyKeyInUse` (409) while the
        first request with it is still being answered."""
        now = self._clock() if now is None else now
        if now - self._purged > _PURGE_EVERY:
            self._store.forget_keys(now - KEEP_SECONDS)
            self._purged = now
        owner = uuid.uuid4().hex
        held = self._store.claim_key(scope, key, fingerprint, owner, now, now - KEEP_SECONDS, now - LEASE_SECONDS)
        if held is None:
            return Claim(scope, key, owner)
        if held.fingerprint != fingerprint:
            raise IdempotencyKeyReused(
                f"Idempotency-Key {key!r} was already used with a different request (another body, route or query) "
                f"in the last {KEEP_SECONDS // 3600} hours; use a new key for a new request"
            )
        if held.status is None:
            raise IdempotencyKeyInUse(
                f"Idempotency-Key {key!r}: the first request with this key is still being answered; retry it later to get its answer"
            )
        headers = [(str(name), str(value)) for name, value in json.loads(held.headers or "[]")]
        return Claim(scope, key, owner, KeptAnswer(held.status, headers, zlib.decompress(held.body or zlib.compress(b""))))

    def answer(self, claim: Claim, answer: KeptAnswer) -> None:
        """Keep the answer of the request that holds `claim`, to replay to its retries."""
        headers = json.dumps(answer.headers)
        self._store.answer_key(claim.scope, claim.key, claim.owner, answer.status, headers, zlib.compress(answer.body))

    def release(self, claim: Claim) -> None:
        """Free the key: the request was not answered with anything to replay (nothing was saved)."""
        self._store.release_key(claim.scope, claim.key, claim.owner)
