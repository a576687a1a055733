"""How long, how much and how often one fetch may take (light to import: the crawler's and the trust checks'
settings carry it, and the server must start fast)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FetchLimits:
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    deadline: float = 30.0  # the whole fetch, redirects included
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5
    per_host: int = 2
    delay: float = 0.25  # between the starts of two requests to one host
