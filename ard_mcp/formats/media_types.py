"""The media types of catalog entries (ARD v0.9 §3), and which spellings of them are one type.

v0.9 renamed `application/mcp-server+json` to `application/mcp-server-card+json` (ADR 0008) and says a
registry should not reject entries over the rename (§3.3). So a registry holds both spellings, and a
client filters with either: every comparison goes through `canonical_type`, which maps the old name to
the new one, ignores case and parameters (`; version=1.0`), but keeps `profile`, which is what makes
`text/markdown; profile="urn:air:agent-skills"` a skill rather than any Markdown file. An entry is served
with the v0.9 name (`served_type`), so a client that compares types exactly finds it too; the store keeps
the type as registered.
"""

from __future__ import annotations

import re

MCP_SERVER_CARD = "application/mcp-server-card+json"
MCP_SERVER_V05 = "application/mcp-server+json"  # v0.5's name of the same type
A2A_AGENT_CARD = "application/a2a-agent-card+json"
AGENT_CARD = "application/agent-card+json"
AI_CATALOG = "application/ai-catalog+json"
AI_REGISTRY = "application/ai-registry+json"
AGENT_SKILLS_ZIP = "application/agent-skills+zip"
AGENT_SKILLS_GZIP = "application/agent-skills+gzip"
AGENT_SKILLS_MARKDOWN = 'text/markdown; profile="urn:air:agent-skills"'

_RENAMED = {MCP_SERVER_V05: MCP_SERVER_CARD}
_JSON = re.compile(r"application/([\w.-]+\+)?json")  # application/json, application/a2a-agent-card+json
_KEPT_PARAMETERS = ("profile",)


def canonical_type(media_type: str) -> str:
    """The one spelling every equivalent spelling of `media_type` compares as."""
    base, *parameters = media_type.split(";")
    base = base.strip().lower()
    kept = []
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() in _KEPT_PARAMETERS:
            kept.append(f'{name.strip().lower()}="{value.strip().strip(chr(34))}"')
    return "; ".join([_RENAMED.get(base, base), *kept])


def served_type(media_type: str) -> str:
    """`media_type` as a v0.9 client expects it: a renamed type in its new name, its parameters kept as given."""
    base, separator, parameters = media_type.partition(";")
    renamed = _RENAMED.get(base.strip().lower())
    return renamed + separator + parameters if renamed else media_type


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON: `application/json` or an `application/...+json` type, parameters
    (`; charset=utf-8`) and case aside. What a REST write must send, and what an upstream registry must answer."""
    return bool(_JSON.fullmatch((content_type or "").split(";", 1)[0].strip().lower()))
