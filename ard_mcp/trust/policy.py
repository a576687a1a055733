"""What a registry does with what its trust checks find (light to import: the server's settings name it)."""

from __future__ import annotations

from typing import Literal

from ard_mcp.config import THIRD_PARTY_DEMOTED

TrustPolicy = Literal["show", "demote", "refuse-invalid", "publisher-only"]
"""show: every entry is served with its trust status (filter `trust.status` to choose), and third-party claims
(`trust.origin`) rank below comparable publisher-served entries, with a warning in their evidence; demote:
`invalid` and `self-asserted` entries are ranked lower too (`tuning.Tuning.trust_demotion`); refuse-invalid:
an entry whose trust manifest fails its check (a mismatched identity, a bad signature) is refused at
registration and left out of a crawl, with the reason; publisher-only: third-party claims are left out of
a crawl as well."""
TRUST_POLICIES: tuple[str, ...] = ("show", "demote", "refuse-invalid", "publisher-only")
DEMOTED = ("invalid", "self-asserted", *THIRD_PARTY_DEMOTED)  # what `demote` ranks lower


def demoted_by(policy: str) -> tuple[str, ...]:
    return DEMOTED if policy == "demote" else THIRD_PARTY_DEMOTED


def refused_by(policy: str) -> tuple[str, ...]:
    """The trust statuses an entry is refused for under `policy`."""
    return {"refuse-invalid": ("invalid",), "publisher-only": ("invalid", "third-party")}.get(policy, ())
