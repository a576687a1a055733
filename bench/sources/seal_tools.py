"""Seal-Tools (github.com/fairyshine/Seal-Tools): 4,076 self-instructed REST-style tools, each its own entry.

* Catalog: `Seal-Tools_Dataset/tool.jsonl`, one entry per tool (`urn:air:seal-tools.example.org:tool:<slug>`),
  typed `application/openapi+json` since each is a described HTTP-style API. The tool's `field`
  ("Chemical Engineering/Forensic engineering") gives the tags, and the record itself, with its
  parameters as JSON Schema, is the entry's one `data.tools` item.
* Queries: `Seal-Tools_Dataset/dev.jsonl` (700 instances; train.jsonl is not in the snapshot; the two test
  splits, `TEST_INSTANCES`, are read only by `bench/train_pairs.py`, for training pairs). `relevant` is every
  distinct tool the instance calls. The kind is `single-tool` or `multi-tool` by the number of *distinct*
  tools called (a "difficult" instance that calls one tool three times is a single-tool retrieval problem);
  the source's easy/difficult label is kept as `category`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .common import REST_TYPE, Dataset, Snapshot, catalog_entry, identifier, labelled_query, licence_name, object_schema, tool, unique_slugs

NAME = "seal-tools"
REPO = "fairyshine/Seal-Tools"
PUBLISHER = "seal-tools.example.org"
TOOLS = "Seal-Tools_Dataset/tool.jsonl"
INSTANCES = ("Seal-Tools_Dataset/dev.jsonl",)
TEST_INSTANCES = ("Seal-Tools_Dataset/test_in_domain.jsonl", "Seal-Tools_Dataset/test_out_domain.jsonl")


def _entry(record: dict[str, Any], ident: str) -> dict[str, Any]:
    name = record["api_name"]
    schema = object_schema(record.get("parameters") or {}, record.get("required") or [])
    field = record.get("field") or ""
    return catalog_entry(
        ident=ident,
        name=name,
        media_type=REST_TYPE,
        description=record.get("api_description") or "",
        tags=[part.strip() for part in field.split("/")],
        data={**record, "tools": [tool(name, record.get("api_description") or "", schema)]},
        source=NAME,
    )


def build(git_dir: Path, instance_files: tuple[str, ...] = INSTANCES) -> Dataset:
    snapshot = Snapshot(git_dir)
    records = snapshot.jsonl(TOOLS)
    ids = {
        record["api_name"]: identifier(PUBLISHER, "tool", s)
        for record, s in zip(records, unique_slugs((r["api_name"] for r in records), split_camel=True), strict=True)
    }
    entries = [_entry(record, ids[record["api_name"]]) for record in records]

    queries = []
    for instance in (item for path in instance_files for item in snapshot.jsonl(path)):
        called = list(dict.fromkeys(call["api"] for call in instance.get("calling") or []))
        if not called or any(api not in ids for api in called):
            continue  # a tool the catalog does not hold: no fair label
        kind = "single-tool" if len(called) == 1 else "multi-tool"
        category = "difficult" if "difficult" in instance["id"] else "easy"
        queries.append(labelled_query(f"seal-{instance['id']}", instance["query"], [ids[api] for api in called], kind, category))

    licence = snapshot.text("LICENSE")
    return Dataset(NAME, "Seal-Tools tools", REPO, snapshot.commit, licence_name(licence), licence, entries, queries)
