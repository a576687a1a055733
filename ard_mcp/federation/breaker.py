"""A circuit breaker per upstream: one that keeps failing is not asked (nor waited for) until it cools down.

Without it every federated search would spend the full per-upstream timeout on a registry that is down.
After `failures` consecutive failures the circuit opens for `cooldown` seconds; then one request may try
(half-open): success closes it, failure opens it again.
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

    def allows(self, key: str) -> bool:
        state = self._states.get(key)
        return state is None or state.open_until <= time.monotonic()

    def succeeded(self, key: str) -> None:
        self._states.pop(key, None)

    def failed(self, key: str) -> None:
        state = self._states.setdefault(key, _State())
        state.failures += 1
        if state.failures >= self.failures:
            state.open_until = time.monotonic() + self.cooldown
