"""Rate limits over HTTP: per client address and per credential, separately for reads (searches, listings,
MCP read tools) and writes (registrations, deletions, MCP write tools), and for failed authentication.

Token buckets: each key refills at its rate per minute and holds ten seconds' worth as a burst, so a
client may send a short burst and then its rate, never more. A request over a limit is answered 429 with
`Retry-After` (the seconds until the bucket holds a request again). Failed authentication counts per
address, before any token is checked: guessing tokens costs one request per `--auth-failure-rate`.

Loopback clients are not limited unless `loopback` is set: they are this machine's own processes (and the
test suite), and a reverse proxy in front should limit instead (uvicorn's FORWARDED_ALLOW_IPS, read from the
environment, makes the address the proxy reports the one counted: docs/deploying.md). The buckets live in
this process's memory.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ard_mcp.errors import RateLimited

BURST_SECONDS = 10.0
_PRUNE_ABOVE = 10_000  # keys kept before idle (full) buckets are dropped


@dataclass(frozen=True)
class RateLimits:
    """Requests per minute; 0 turns a limit off."""

    reads: int = 600
    writes: int = 120
    invocations: int = 60  # calls of agents through the registry (`POST /agents/{id}/invoke`, call_agent, get_agent_tools)
    auth_failures: int = 10
    loopback: bool = False  # limit loopback clients too


DEFAULT_RATE_LIMITS = RateLimits()


@dataclass
class _Bucket:
    tokens: float
    updated: float
    rate: float  # per second
    capacity: float

    def refill(self, now: float) -> _Bucket:
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        return self


@dataclass
class Limiter:
    limits: RateLimits
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict)

    def applies_to(self, address: str, loopback: bool) -> bool:
        return bool(address) and (self.limits.loopback or not loopback)

    def take(self, kind: str, keys: tuple[str, ...]) -> None:
        """Take one request from each key's bucket of `kind` ("reads", "writes", "auth_failures"), or raise
        `RateLimited` naming the wait; nothing is taken unless every bucket has room."""
        for bucket in self._with_room(kind, keys):
            bucket.tokens -= 1.0

    def check(self, kind: str, key: str) -> None:
        """Raise `RateLimited` if `key` has no room in its `kind` bucket, without taking any."""
        self._with_room(kind, (key,))

    def _with_room(self, kind: str, keys: tuple[str, ...]) -> list[_Bucket]:
        """The keys' buckets of `kind` (none when the limit is off); `RateLimited` if one has no room."""
        per_minute: int = getattr(self.limits, kind)
        if per_minute <= 0:
            return []
        buckets = [self._bucket(kind, key, per_minute) for key in keys]
        short = [b for b in buckets if b.tokens < 1.0]
        if short:
            wait = max(math.ceil((1.0 - b.tokens) / b.rate) for b in short)
            raise RateLimited(f"too many {kind.replace('_', ' ')} from this client: at most {per_minute} a minute", wait)
        return buckets

    def _bucket(self, kind: str, key: str, per_minute: int) -> _Bucket:
        now = self.clock()
        bucket = self._buckets.get((kind, key))
        if bucket is not None:
            return bucket.refill(now)
        if len(self._buckets) > _PRUNE_ABOVE:  # forget refilled buckets: a client coming back starts full, as it would anyway
            for old in [k for k, b in self._buckets.items() if b.refill(now).tokens >= b.capacity]:
                del self._buckets[old]
        capacity = max(1.0, per_minute * BURST_SECONDS / 60.0)
        bucket = self._buckets[(kind, key)] = _Bucket(capacity, now, per_minute / 60.0, capacity)
        return bucket
