"""Loop prevention between federating registries: each request says how many registries it has passed and which.

A registry that forwards a search adds itself to `ARD-Federation-Via` and one to `ARD-Federation-Hops`. One
that finds itself in the list, or a count at the limit, answers from its own index only, so A → B → A
stops at the second A and a cycle of any length stops within `max_hops`. Headers, not body fields: the ARD
request body is the spec's (a strict registry refuses a field it does not define), and every federated
request is ours to shape.

A peer that drops the headers (one that federates by sending a fresh request of its own) hides the path, and
a loop through it once cost one registry 22 searches for one client search, ended only by timeouts and the
breaker. What such a peer still forwards is the query text, so a registry also remembers the texts it is
asking upstreams about (`InFlight`): the same text arriving while its own federated search for it is under
way is its own request coming back, and is answered locally. One client search then costs each registry
at most one federated search. The price: two clients asking the very same text at the same moment, the
second is answered locally, with a warning saying so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

HOPS_HEADER = "ARD-Federation-Hops"
VIA_HEADER = "ARD-Federation-Via"
WARNING_HEADER = "ARD-Federation-Warning"  # on a response: an upstream that failed or was late (the ARD body has no place for it)
MAX_VIA = 32  # a longer list is cut: it cannot be a real path, and the header must stay small


@dataclass(frozen=True)
class Path:
    hops: int = 0
    via: tuple[str, ...] = ()

    @classmethod
    def of(cls, headers: Mapping[str, str]) -> Path:
        """The path a request arrived with; a malformed count counts as the limit, so it is answered locally."""
        raw = headers.get(HOPS_HEADER.lower()) or headers.get(HOPS_HEADER) or "0"
        try:
            hops = max(0, int(raw))
        except ValueError:
            hops = 1 << 16
        via_text = headers.get(VIA_HEADER.lower()) or headers.get(VIA_HEADER) or ""
        via = tuple(_same(v) for v in via_text.split(",") if v.strip())[:MAX_VIA]
        return cls(hops, via)

    def stops_at(self, identity: str, max_hops: int) -> str | None:
        """Why a registry must not forward this request further, or None when it may."""
        if identity and _same(identity) in self.via:
            return f"this registry ({identity}) is already on the request's path: answered locally"
        if self.hops >= max_hops:
            return f"the request has passed {self.hops} registries (limit {max_hops}): answered locally"
        return None

    def forwarded_by(self, identity: str) -> dict[str, str]:
        """The headers of the request this registry sends on."""
        return {HOPS_HEADER: str(self.hops + 1), VIA_HEADER: ", ".join([*self.via, _same(identity)][-MAX_VIA:])}


@dataclass
class InFlight:
    """The query texts of the federated searches this registry is running (one event loop: no lock needed)."""

    _texts: Counter[str] = field(default_factory=Counter)

    @contextmanager
    def asking(self, text: str) -> Iterator[None]:
        key = _text_key(text)
        self._texts[key] += 1
        try:
            yield
        finally:
            self._texts[key] -= 1
            if not self._texts[key]:
                del self._texts[key]

    def returning(self, text: str) -> str | None:
        """Why a search for `text` must be answered locally (it looks like this registry's own request coming
        back through a peer that dropped the federation headers), or None."""
        if _text_key(text) in self._texts:
            return "a federated search for this text is already under way here (a peer may have sent it back): answered locally"
        return None


def _text_key(text: str) -> str:
    """One spelling of a query text, as a peer may re-space it."""
    return " ".join(text.split())


def _same(identity: str) -> str:
    """One spelling of a registry's identity: `https://r.example/` and `https://r.example` are one registry."""
    return identity.strip().rstrip("/")
