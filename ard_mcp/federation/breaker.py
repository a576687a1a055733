"""A circuit breaker per upstream: one that keeps failing is not asked (nor waited for) until it cools down.

Without it every federated search would spend the full per-upstream timeout on a registry that is down.
After `failures` consecutive failures the circuit opens for `cooldown` seconds; then one request may try
(half-open): success closes it, failure opens it again. Each upstream's last answer time is kept for the
operator's web page, which shows which upstreams answer and how fast.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class _State:
    failures: int = 0
    open_until: float = 0.0


@dataclass
class Breakers:
    failures: int = 3
    cooldown: float = 30.0
    _states: dict[str, _State] = field(default_factory=dict)
    latency: dict[str, float] = field(default_factory=dict)  # seconds of each upstream's last answer

    def allows(self, key: str) -> bool:
        state = self._states.get(key)
        return state is None or state.open_until <= time.monotonic()

    def succeeded(self, key: str, seconds: float | None = None) -> None:
        self._states.pop(key, None)
        if seconds is not None:
            self.latency[key] = seconds

    def known(self) -> list[str]:
        """Every upstream asked so far."""
        return sorted(self._states.keys() | self.latency.keys())

    def state(self, key: str) -> tuple[str, int]:
        """`closed`, `open` (not asked until it cools down) or `half-open` (the next request tries), and
        the consecutive failures so far."""
        state = self._states.get(key)
        if state is None:
            return "closed", 0
        if state.open_until > time.monotonic():
            return "open", state.failures
        return ("half-open" if state.open_until else "closed"), state.failures

    def failed(self, key: str) -> None:
        state = self._states.setdefault(key, _State())
        state.failures += 1
        if state.failures >= self.failures:
            state.open_until = time.monotonic() + self.cooldown
