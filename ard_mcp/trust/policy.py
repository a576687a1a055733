"""What a registry does with what its trust checks find (light to import: the server's settings name it)."""

from __future__ import annotations

from typing import Literal

TrustPolicy = Literal["show", "demote", "refuse-invalid"]
"""show: every entry is served with its trust status (filter `trust.status` to choose); demote: `invalid`
and `self-asserted` entries are ranked lower (`tuning.Tuning.trust_demotion`); refuse-invalid: an entry
whose trust manifest fails its check (a mismatched identity, a bad signature) is refused at registration
and left out of a crawl, with the reason."""
TRUST_POLICIES: tuple[str, ...] = ("show", "demote", "refuse-invalid")
DEMOTED = ("invalid", "self-asserted")  # what `demote` ranks lower
