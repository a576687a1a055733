"""Words a person reads at a glance in place of the machine strings an entry and its evidence carry: a media
type as "MCP server", a score signal as "second-best example", a publisher on a shared host as its owner.

The registry's wire answers keep the exact strings (a client filters and compares with them); only the page
shows the words, and it keeps each exact string in a tooltip (`title`), so nothing is hidden from a reader who
needs it. A type the page has no word for is shown as it is."""

from __future__ import annotations

from ard_mcp.formats import media_types
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import AIDIP_TYPE, XU_TYPE
from ard_mcp.formats.messages import MatchedExample, ScoreComponents

# Keyed by `canonical_type`, so v0.5's `application/mcp-server+json` reads as the same MCP server.
TYPE_LABELS = {
    media_types.MCP_SERVER_CARD: "MCP server",
    media_types.A2A_AGENT_CARD: "A2A agent",
    media_types.AGENT_CARD: "A2A agent",
    media_types.AI_CATALOG: "AI catalog",
    media_types.AI_REGISTRY: "AI registry",
    "application/ai-registry": "AI registry",
    media_types.AGENT_SKILLS_ZIP: "skill",
    media_types.AGENT_SKILLS_GZIP: "skill",
    media_types.AGENT_SKILLS_MARKDOWN: "skill",
    "application/ai-skill": "skill",
    XU_TYPE: "agent (Xu)",
    AIDIP_TYPE: "agent (AIDIP)",
    "application/openapi+json": "web API (OpenAPI)",
}
# Each score signal (`ScoreComponents`) as words; its field description is the tooltip.
SIGNAL_LABELS = {
    "example": "best example",
    "secondExample": "second-best example",
    "context": "name and description",
    "allExamples": "all examples together",
    "lexical": "words in common",
    "tag": "tags named",
}
# Shared hosts whose identifiers carry the owner next (`urn:air:github.com:OWNER:REPO`): "by github.com" says
# nothing when most of a catalog lives there.
OWNER_HOSTS = frozenset({"github.com"})


def type_label(media_type: str) -> str:
    """`media_type` as a person calls it ("MCP server"), or the type itself when the page has no word for it."""
    return TYPE_LABELS.get(media_types.canonical_type(media_type), media_type)


def signal_label(name: str) -> str:
    return SIGNAL_LABELS.get(name, name)


def signal_help(name: str) -> str:
    """What the signal measures: its wire field's own description."""
    field = ScoreComponents.model_fields.get(name)
    return (field.description if field else None) or name


def publisher_label(entry: CatalogEntry) -> str:
    """The publisher as the page names it: the identifier's domain, and on a shared host the owner after it
    ("github.com/OWNER"), which the identifier carries but the `publisher` filter key does not."""
    publisher = entry.publisher
    parts = entry.identifier.split(":")
    if publisher in OWNER_HOSTS and len(parts) >= 5 and parts[3]:
        return f"{publisher}/{parts[3]}"
    return publisher


def _plain(text: str) -> str:
    """Letters and digits only, lowercased: `get_forecast` and "Get forecast" compare equal."""
    return "".join(c for c in text.lower() if c.isalnum())


def example_label(example: MatchedExample) -> str | None:
    """The name to put before a matched example's text, or None when the text already says it: a query's label
    is the start of the query itself, a tool's text starts with its humanized name, a description's label is the
    entry's name. Shown twice it read "query What are...?: What are...?"."""
    if example.kind == "description":
        return None
    label, text = _plain(example.label), _plain(example.text)
    return None if not label or text.startswith(label) else example.label
