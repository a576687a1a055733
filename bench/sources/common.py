"""What the three builders share: reading a snapshot, the entry and query shapes, slugs, parameter schemas
and the deterministic sample.

Everything here is a pure function of its input (no clock, no `random` state, no network), so the same
snapshot and seed always give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import subprocess
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Every entry carries the same timestamp, so a rebuild changes nothing an ingest would notice.
UPDATED_AT = "2026-01-01T00:00:00Z"
REST_TYPE = "application/openapi+json"
MCP_TYPE = "application/mcp-server+json"
#: Well under the product's limits (10,000 characters for a description; 256 KB for an entry).
MAX_DESCRIPTION = 4000

_HIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_JSON_TYPES = {
    "str": "string",
    "string": "string",
    "text": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "double": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
}


@dataclass(frozen=True)
class Dataset:
    """One converted benchmark: its catalog entries, its labelled queries and where they came from."""

    name: str  # the output folder and `metadata.source` of every entry
    title: str  # the catalog's `host.displayName`
    repo: str  # GitHub owner/name
    commit: str  # the snapshot's full commit sha
    licence: str  # SPDX-style name, e.g. Apache-2.0
    licence_text: str
    entries: list[dict[str, Any]]
    queries: list[dict[str, Any]]

    @property
    def source(self) -> str:
        """`github.com/<owner>/<repo> @ <sha> (<licence>)`, the line SOURCE.txt holds."""
        return f"github.com/{self.repo} @ {self.commit} ({self.licence})"

    @property
    def tool_count(self) -> int:
        """Tools over all entries: what the example-level index gets one vector for, beside each description."""
        return sum(len(entry["data"].get("tools") or []) for entry in self.entries)


class Snapshot:
    """Read-only view of a bare git directory at HEAD, or at a pinned commit where a source's data has since
    left the repository (what `fetch` brings; nothing is checked out)."""

    def __init__(self, git_dir: Path, commit: str = "HEAD") -> None:
        self.git_dir = Path(git_dir)
        self.commit = self._git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()

    def _git(self, *args: str) -> bytes:
        done = subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True)
        if done.returncode != 0:
            raise FileNotFoundError(f"git {' '.join(args)} in {self.git_dir}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def read(self, path: str) -> bytes:
        """The file's bytes at the snapshot's commit; `FileNotFoundError` if it is not in the tree or its blob is absent."""
        return self._git("show", f"{self.commit}:{path}")

    def text(self, path: str) -> str:
        return self.read(path).decode("utf-8")

    def json(self, path: str) -> Any:
        return json.loads(self.read(path))

    def jsonl(self, path: str) -> list[Any]:
        return [json.loads(line) for line in self.text(path).splitlines() if line.strip()]

    def exists(self, path: str) -> bool:
        return bool(self._git("ls-tree", "--name-only", self.commit, "--", path).strip())

    def files(self, folder: str) -> list[str]:
        """Every file path under `folder` at the snapshot's commit, sorted."""
        out = self._git("ls-tree", "-r", "--name-only", self.commit, "--", folder.rstrip("/") + "/")
        return sorted(out.decode().splitlines())


def licence_name(text: str) -> str:
    """The SPDX name of a licence file's text (only the licences these sources use)."""
    if "Apache License" in text and "Version 2.0" in text:
        return "Apache-2.0"
    if "MIT License" in text or "Permission is hereby granted, free of charge" in text:
        return "MIT"
    return "see LICENSE.txt"


def clean(text: Any, limit: int = MAX_DESCRIPTION) -> str:
    """Text the product accepts: invisible control characters dropped, surrounding space trimmed, clipped."""
    if not isinstance(text, str):
        return ""
    out = _HIDDEN.sub("", text).strip()
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "…"


def slug(text: str, split_camel: bool = False) -> str:
    """An identifier segment: `Améthyste` → `amethyste`, `Nager.Date` → `nager-date`; with `split_camel`
    (for function names) `analyzeEvidence` → `analyze-evidence`. Product names (`OpenAPI`, `BioMCP`) keep
    their words whole."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    if split_camel:
        ascii_text = _CAMEL.sub("-", ascii_text)
    return _NOT_SLUG.sub("-", ascii_text.lower()).strip("-") or "unnamed"


def unique_slugs(names: Iterable[str], split_camel: bool = False) -> list[str]:
    """One slug per name, in order; a repeated slug gets `-2`, `-3`, ... (the first keeps the plain one)."""
    taken: set[str] = set()
    out = []
    for name in names:
        base = candidate = slug(name, split_camel)
        n = 1
        while candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def identifier(publisher: str, kind: str, name_slug: str) -> str:
    """`urn:air:<publisher>:<kind>:<slug>`; every segment is already in the schema's characters."""
    return f"urn:air:{publisher}:{kind}:{name_slug}"


def json_type(name: Any) -> str | None:
    """The JSON Schema type of a source's type name (`str`, `int`, `float`, `string`, ...), if it has one."""
    return _JSON_TYPES.get(name.strip().lower()) if isinstance(name, str) else None


def property_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One parameter as JSON Schema: its type (when known), description, enum and default."""
    out: dict[str, Any] = {}
    kind = json_type(spec.get("type"))
    if kind:
        out["type"] = kind
    if isinstance(spec.get("description"), str) and spec["description"].strip():
        out["description"] = clean(spec["description"])
    for key in ("enum", "default", "items"):
        if key in spec and spec[key] is not None:
            out[key] = spec[key]
    return out


def object_schema(properties: Mapping[str, Mapping[str, Any]], required: Iterable[str] = ()) -> dict[str, Any]:
    """`{"type": "object", "properties": ..., "required": [...]}` for a name → parameter mapping; required
    names that are not parameters are dropped."""
    props = {str(name): property_schema(spec) for name, spec in properties.items() if isinstance(spec, Mapping)}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    needed = [name for name in dict.fromkeys(required) if name in props]
    if needed:
        schema["required"] = needed
    return schema


def tool(name: str, description: str, input_schema: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """An MCP-style tool record, what `ard_mcp.index.example_texts` indexes as one example."""
    out: dict[str, Any] = {
        "name": name,
        "description": clean(description),
        "inputSchema": dict(input_schema) if input_schema else {"type": "object", "properties": {}},
    }
    out.update({key: value for key, value in extra.items() if value is not None})
    return out


def catalog_entry(
    *,
    ident: str,
    name: str,
    media_type: str,
    description: str,
    tags: Iterable[str],
    data: Mapping[str, Any],
    source: str,
    homepage: str | None = None,
) -> dict[str, Any]:
    """An ARD catalog entry. `capabilities` are the names of `data.tools`, so every tool is both a
    capability and an indexed example; nothing here comes from a benchmark's instructions."""
    tools = data.get("tools") or []
    entry: dict[str, Any] = {
        "identifier": ident,
        "displayName": clean(name, 256),
        "type": media_type,
        "description": clean(description),
        "tags": list(dict.fromkeys(clean(t, 256) for t in tags if clean(t, 256))),
        "capabilities": list(dict.fromkeys(clean(t["name"], 256) for t in tools if clean(t["name"], 256)))[:256],
        "data": dict(data),
        "metadata": {"source": source} | ({"homepage": homepage} if homepage else {}),
        "updatedAt": UPDATED_AT,
    }
    return {key: value for key, value in entry.items() if value not in ("", [], None)}


def labelled_query(qid: str, text: str, relevant: Iterable[str], kind: str, category: str | None = None) -> dict[str, Any]:
    """One line of queries.dev.jsonl (shared/data/README.md's format) with its `kind`; `relevant` deduplicated."""
    out: dict[str, Any] = {"id": qid, "query": clean(text, 10_000), "relevant": list(dict.fromkeys(relevant)), "kind": kind}
    if category:
        out["category"] = category
    return out


def _rank(seed: int, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()


def _quotas(sizes: Mapping[str, int], limit: int) -> dict[str, int]:
    """Seats per kind: proportional to its size (largest remainder), at least one each while seats last."""
    total = sum(sizes.values())
    share = {kind: limit * n / total for kind, n in sizes.items()}
    quota = {kind: min(n, max(1, math.floor(share[kind]))) for kind, n in sizes.items()}
    by_remainder = sorted(sizes, key=lambda k: (-(share[k] - math.floor(share[k])), k))
    while sum(quota.values()) < limit:
        grew = False
        for kind in by_remainder:
            if sum(quota.values()) < limit and quota[kind] < sizes[kind]:
                quota[kind] += 1
                grew = True
        if not grew:
            break
    while sum(quota.values()) > limit:  # more kinds than seats: the biggest give theirs back first
        largest = max(quota, key=lambda k: (quota[k], k))
        quota[largest] -= 1
    return quota


def stratified_sample(queries: Sequence[dict[str, Any]], limit: int, seed: int) -> list[dict[str, Any]]:
    """At most `limit` queries, each `kind` in proportion to its size and every kind represented.

    Within a kind, queries are taken in the order of sha256(`<seed>:<id>`): stable across Python versions
    and platforms (unlike `random`), and adding a query elsewhere does not reshuffle the rest. The sample
    keeps the source's order."""
    if len(queries) <= limit:
        return list(queries)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for query in queries:
        by_kind[query["kind"]].append(query)
    quota = _quotas({kind: len(items) for kind, items in by_kind.items()}, limit)
    chosen = {q["id"] for kind, items in by_kind.items() for q in sorted(items, key=lambda q: _rank(seed, q["id"]))[: quota[kind]]}
    return [q for q in queries if q["id"] in chosen]
