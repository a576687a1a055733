"""What of an entry gets its own vector: the example-level index (Xu profile §example index).

One example per representative query, per tool of an inline MCP server, per skill of an inline A2A card,
per example task of Xu Agent Metadata, per operation (and example input) of AIDIP metadata, per capability
no tool describes, and one for name + description. An agent is then scored by its best
matching examples, so one precise tool description is not averaged away by ten unrelated ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import AIDIP_TYPE, XU_TYPE

MAX_EXAMPLES = 96
MAX_TEXT = 1000

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-./:]+")


@dataclass(frozen=True)
class Example:
    """One indexed text of an agent. `kind` says where it came from; `label` names it for evidence."""

    kind: str  # "description" | "query" | "tool" | "skill" | "capability"
    label: str
    text: str


def humanize(name: str) -> str:
    """`get_weather` → `get weather`, `WeatherTool` → `Weather Tool`: what a person would type."""
    return " ".join(_CAMEL.sub(" ", _SEPARATORS.sub(" ", name)).split())


def _clip(text: str) -> str:
    return " ".join(text.split())[:MAX_TEXT]


def _named_items(items: Any) -> list[tuple[str, str, list[str]]]:
    """(name, description, examples) of each dict in an MCP `tools` or A2A `skills` list."""
    out = []
    if isinstance(items, list):
        for item in items:
            if not isinstance(item, dict):
                continue
            name = item.get("name") or item.get("id") or ""
            description = item.get("description") or ""
            examples = item.get("examples")
            examples = examples if isinstance(examples, list) else []
            if isinstance(name, str) and isinstance(description, str) and (name or description):
                out.append((name, description, [e for e in examples if isinstance(e, str)]))
    return out


def _input_text(value: Any, key: str = "") -> list[str]:
    """The string leaves of an example input, labelled by their keys: what the caller would ask for."""
    if isinstance(value, str):
        return [f"{humanize(key)}: {value}" if key else value]
    if isinstance(value, dict):
        return [text for k, v in value.items() for text in _input_text(v, str(k))]
    if isinstance(value, list):
        return [text for v in value for text in _input_text(v, key)]
    return []


def _format_examples(entry: CatalogEntry, data: dict[str, Any]) -> list[Example]:
    """Xu example tasks (labelled by their ids) and AIDIP operations with their example inputs."""
    found: list[Example] = []
    if entry.type == XU_TYPE:
        for item in data.get("examples") or []:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                label = item["id"] if isinstance(item.get("id"), str) and item["id"] else item["text"][:80]
                found.append(Example("query", label, _clip(item["text"])))
    elif entry.type == AIDIP_TYPE:
        for name, description, _ in _named_items(data.get("operations")):
            found.append(
                Example("tool", name or description[:80], _clip(f"{humanize(name)}: {description}" if description else humanize(name)))
            )
        for operation in data.get("operations") or []:
            if isinstance(operation, dict) and isinstance(operation.get("examples"), list):
                for example in operation["examples"]:
                    text = "; ".join(_input_text(example.get("input") if isinstance(example, dict) else None))
                    if text:
                        found.append(Example("query", f"{operation.get('name') or 'operation'} example", _clip(text)))
    return found


def extract_examples(entry: CatalogEntry) -> list[Example]:
    """The entry's examples, de-duplicated by text, at most `MAX_EXAMPLES`."""
    found: list[Example] = []
    summary = entry.displayName if not entry.description else f"{entry.displayName}: {entry.description}"
    found.append(Example("description", entry.displayName, _clip(summary)))
    for query in entry.representativeQueries or []:
        found.append(Example("query", query[:80], _clip(query)))

    data = entry.data or {}
    described: set[str] = set()
    for kind, key in (("tool", "tools"), ("skill", "skills")):
        for name, description, skill_examples in _named_items(data.get(key)):
            described.add(name.lower())
            text = f"{humanize(name)}: {description}" if description else humanize(name)
            found.append(Example(kind, name or description[:80], _clip(text)))
            for task in skill_examples:
                found.append(Example("query", task[:80], _clip(task)))
    found += _format_examples(entry, data)
    for capability in entry.capabilities or []:
        if capability.lower() not in described:
            found.append(Example("capability", capability, _clip(humanize(capability))))

    unique: dict[str, Example] = {}
    for example in found:
        if example.text and example.text.lower() not in unique:
            unique[example.text.lower()] = example
    return list(unique.values())[:MAX_EXAMPLES]
