"""A2A agent cards registered as they are: the v0.3 shape (`url`, `preferredTransport`,
`additionalInterfaces`) and the v1.0 shape (`supportedInterfaces`), as `a2a-sdk` serves them at
`/.well-known/agent-card.json`.

A card is stored as an `application/a2a-agent-card+json` catalog entry whose `data` is the card: each
skill is indexed as an example, with its example tasks (see `ard_mcp.index.example_texts`), skill names
become `capabilities`, skill tags `tags`, and the first example tasks `representativeQueries`, so the
served entry tells another registry what the agent is for. A card has no id: the identifier is anchored
to the host of its first interface (`urn:air:<host>:<name>`), so the same card always lands on one entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import MAX_QUERIES, MIN_QUERIES, WireModel, parse_as
from ard_mcp.formats.entry_facts import PUBLISHER_KEY, card_interfaces
from ard_mcp.formats.identifiers import derive_identifier
from ard_mcp.formats.media_types import A2A_AGENT_CARD

_CARD_HINTS = ("skills", "protocolVersion", "preferredTransport", "defaultInputModes")


def is_agent_card(document: Mapping[str, Any]) -> bool:
    """A v1.0 card names its interfaces; a v0.3 card has a `url` beside fields only cards have (its
    `capabilities` is an object, AIDIP's a list; AIDIP names its URL `endpoint`)."""
    if "supportedInterfaces" in document:
        return True
    if "url" not in document or "name" not in document or "endpoint" in document:
        return False
    return isinstance(document.get("capabilities"), Mapping) or any(k in document for k in _CARD_HINTS)


class _Lenient(WireModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class AgentSkill(_Lenient):
    id: str | None = None
    name: str | None = None
    description: str | None = None
    tags: list[str] | None = None
    examples: list[str] | None = None


class AgentProvider(_Lenient):
    organization: str | None = None
    url: str | None = None


class AgentCard(_Lenient):
    """The fields of a card this registry reads; the rest are kept in the stored card as sent."""

    name: str = Field(min_length=1)
    description: str | None = None
    version: str | None = None
    provider: AgentProvider | None = None
    skills: list[AgentSkill] = Field(default_factory=list)


def to_entry(document: Mapping[str, Any], default_id: str | None = None) -> dict[str, Any]:
    """An ARD catalog entry (raw, for `Indexer.register`) from an A2A agent card."""
    card = parse_as(AgentCard, document, "card")
    urls = [i["url"] for i in card_interfaces(document)]
    if not urls:
        raise InvalidArgument("card: an agent card needs url (A2A v0.3) or supportedInterfaces (v1.0) with at least one url")
    entry: dict[str, Any] = {
        "identifier": derive_identifier(default_id or card.name, urls, "card.name"),
        "displayName": card.name,
        "type": A2A_AGENT_CARD,
        "data": dict(document),
    }
    names = [s.name or s.id for s in card.skills if s.name or s.id]
    tags = [t for s in card.skills for t in s.tags or []]
    queries = [q for s in card.skills for q in s.examples or [] if q.strip()]
    for ard, value in (
        ("description", card.description),
        ("version", card.version),
        ("capabilities", list(dict.fromkeys(names))),
        ("tags", list(dict.fromkeys(tags))),
        ("representativeQueries", list(dict.fromkeys(queries))[:MAX_QUERIES]),
    ):
        if value and (ard != "representativeQueries" or len(value) >= MIN_QUERIES):
            entry[ard] = value
    if card.provider and card.provider.organization:
        entry["metadata"] = {PUBLISHER_KEY: card.provider.organization}
    return entry
