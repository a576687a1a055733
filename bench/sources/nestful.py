"""NESTFUL (github.com/IBM/NESTFUL): its function specifications as a catalog, its instructions with nested
sequences of calls as queries. Held out: nothing is tuned or trained on it (`suite.HELD_OUT_SOURCES`).

* Three subsets, each a spec file and a data file under `data/`: `executable` (39 RapidAPI endpoints,
  85 instructions), `glaive` (64 functions from Glaive function-calling data, 169 instructions) and `sgd`
  (30 Schema-Guided Dialogue intents, 46 instructions). No name is in two subsets, so they make one catalog
  of 133 tools, and each subset's instructions meet the other two subsets' functions as distractors.
* Catalog: one entry per function (`urn:air:nestful.example.org:tool:<slug>`), typed
  `application/openapi+json` like Seal-Tools' tools: each is one described call with parameters. Its
  parameters (`query_parameters` and `path_parameters`, `parameters`, or SGD's `arguments` with their
  allowed and default values) become the one tool's JSON Schema; an executable endpoint's RapidAPI page is
  `metadata.homepage`. The glaive spec lists five functions twice, identically; the first is kept.
* Queries: every instruction (`input`); `relevant` = every distinct function its gold sequence calls
  (`var_result`, the sequence's final assembly of outputs, is not a function). Ten glaive instructions call a
  function the spec lacks (`create_task`, `search_book`, ...) and are left out, as in the other builders.
  Kind: the subset; category `single-tool` or `multi-tool` (all but one call two or more functions).
* Licence: the repository's Apache-2.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .common import REST_TYPE, Dataset, Snapshot, catalog_entry, identifier, labelled_query, licence_name, object_schema, tool, unique_slugs

NAME = "nestful"
REPO = "IBM/NESTFUL"
PUBLISHER = "nestful.example.org"
#: (kind, spec, instructions)
SUBSETS = (
    ("executable", "data/executable/executable-spec.json", "data/executable/executable-data.json"),
    ("glaive", "data/non-executable/non-executable-glaive-spec.json", "data/non-executable/non-executable-glaive-data.json"),
    ("sgd", "data/non-executable/non-executable-sgd-spec.json", "data/non-executable/non-executable-sgd-data.json"),
)
RESULT = "var_result"


def _parameters(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Name → spec of every input the record documents, whichever of the subsets' spellings it uses; SGD's
    `allowed_values` and `default_value` as `enum` and `default`."""
    out: dict[str, dict[str, Any]] = {}
    for key in ("path_parameters", "query_parameters", "parameters", "arguments"):
        for name, raw in (record.get(key) or {}).items():
            if not isinstance(raw, Mapping):
                continue
            spec = dict(raw)
            if spec.get("allowed_values"):
                spec["enum"] = spec["allowed_values"]
            if spec.get("default_value") not in (None, ""):
                spec["default"] = spec["default_value"]
            out[str(name)] = spec
    return out


def _entry(record: Mapping[str, Any], ident: str) -> dict[str, Any]:
    parameters = _parameters(record)
    schema = object_schema(parameters, [name for name, spec in parameters.items() if spec.get("required") is True])
    link = record.get("url")
    return catalog_entry(
        ident=ident,
        name=record["name"],
        media_type=REST_TYPE,
        description=record.get("description") or "",
        tags=[],
        data={**record, "tools": [tool(record["name"], record.get("description") or "", schema)]},
        source=NAME,
        homepage=link if isinstance(link, str) and link.startswith("https://") else None,
    )


def build(git_dir: Path, commit: str = "HEAD") -> Dataset:
    snapshot = Snapshot(git_dir, commit)
    records: dict[str, dict[str, Any]] = {}  # name → its first spec record, over all subsets
    for _, spec_path, _ in SUBSETS:
        for record in snapshot.json(spec_path):
            if isinstance(record.get("name"), str):
                records.setdefault(record["name"], record)
    ids = {name: identifier(PUBLISHER, "tool", s) for name, s in zip(records, unique_slugs(records, split_camel=True), strict=True)}
    entries = [_entry(record, ids[name]) for name, record in records.items()]

    queries = []
    for kind, _, data_path in SUBSETS:
        for n, instance in enumerate(snapshot.json(data_path)):
            called = list(dict.fromkeys(call["name"] for call in instance.get("output") or [] if call.get("name") != RESULT))
            if not called or any(name not in ids for name in called):
                continue  # a function the spec lacks: no fair label
            category = "single-tool" if len(called) == 1 else "multi-tool"
            queries.append(labelled_query(f"nf-{kind}-{n}", instance["input"], [ids[name] for name in called], kind, category))

    licence = snapshot.text("LICENSE")
    return Dataset(NAME, "NESTFUL functions", REPO, snapshot.commit, licence_name(licence), licence, entries, queries)
