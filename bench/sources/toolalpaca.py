"""ToolAlpaca (github.com/tangqiaoyu/ToolAlpaca): the public-apis list as a catalog of REST APIs, and the
real and simulated evaluation instructions as queries.

* Catalog: every record of `data/public_apis.json` (1,425; names repeat for distinct APIs, which get
  `-2`, `-3` slugs) plus any API of the two eval sets that the list lacks (CurrencyBeacon), as
  `urn:air:toolalpaca.example.org:api:<slug>`, typed `application/openapi+json`. Tags: the list's category.
* Tools: an eval API is matched to its public-apis record by name (and description when the name is
  taken twice) and gets its functions from the eval file's `Function_Description` (summary, parameters as
  JSON Schema) and `Function_Projection` (path, method). The other APIs have only their one-line
  description: that is all the source documents for them. So the 21 APIs with queries are richer
  entries than their distractors; a score can lean on that, and the caveat belongs with any number.
* Queries: each eval API's `Instructions`, `relevant` = that API, kind `real` or `simulated`. The
  instructions, golden answers and the eval files' generated `Introduction` stay out of the catalog.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .common import (
    REST_TYPE,
    Dataset,
    Snapshot,
    catalog_entry,
    identifier,
    labelled_query,
    licence_name,
    object_schema,
    tool,
    unique_slugs,
)

NAME = "toolalpaca"
REPO = "tangqiaoyu/ToolAlpaca"
PUBLISHER = "toolalpaca.example.org"
PUBLIC = "data/public_apis.json"
EVALS = (("real", "data/eval_real.json"), ("simulated", "data/eval_simulated.json"))
_PARAMETERS = re.compile(r"(?:^|\n)Parameters:")
_OUTPUT = re.compile(r"\nOutput:")
_REQUIRED = re.compile(r"^\s*Required\.\s*")


def _parameter(text: str) -> tuple[dict[str, Any], bool]:
    """`"Required. Array[string]. A list of ..."` → ({type: array, description}, required)."""
    required = False
    while _REQUIRED.match(text):
        required, text = True, _REQUIRED.sub("", text, count=1)
    depth, end = 0, len(text)
    for i, char in enumerate(text):  # the type runs to the first `.` outside Array[...] / Object{...}
        depth += (char in "[{") - (char in "]}")
        if char == "." and depth == 0:
            end = i
            break
    type_text, description = text[:end].strip(), text[end + 1 :].strip()
    kind = "array" if type_text.startswith("Array") else "object" if type_text.startswith("Object") else type_text
    return {"type": kind, "description": description}, required


def _functions(api: dict[str, Any]) -> list[dict[str, Any]]:
    """The API's tools from the eval file's function documentation ("components" is the output schemas)."""
    projection = api.get("Function_Projection") or {}
    tools = []
    for name, text in (api.get("Function_Description") or {}).items():
        if name == "components" or not isinstance(text, str):
            continue
        parts = _PARAMETERS.split(text, maxsplit=1)
        summary = parts[0].strip()
        params_text = _OUTPUT.split(parts[1], maxsplit=1)[0] if len(parts) > 1 else "{}"
        try:
            raw = json.loads(params_text)
        except json.JSONDecodeError:
            raw = {}
        specs = {k: _parameter(v) for k, v in raw.items() if isinstance(v, str)} if isinstance(raw, dict) else {}
        schema = object_schema({k: spec for k, (spec, _) in specs.items()}, [k for k, (_, needed) in specs.items() if needed])
        path, method = (projection.get(name) or [None, None])[:2]
        tools.append(tool(name, summary, schema, path=path, method=method))
    return tools


def build(git_dir: Path) -> Dataset:
    snapshot = Snapshot(git_dir)
    records: list[dict[str, Any]] = [dict(r) for r in snapshot.json(PUBLIC)["entries"]]
    evals = [(kind, api) for kind, path in EVALS for api in snapshot.json(path)]

    tools: dict[int, list[dict[str, Any]]] = {}  # record index → tools documented in an eval set
    where: list[tuple[str, dict[str, Any], int]] = []  # (kind, eval API, record index)
    for kind, api in evals:
        same_name = [i for i, r in enumerate(records) if r["API"] == api["Name"]]
        exact = [i for i in same_name if records[i]["Description"] == api.get("Description")]
        if same_name:
            index = (exact or same_name)[0]
        else:  # in an eval set but not in the list: the catalog still needs it
            records.append(
                {
                    "API": api["Name"],
                    "Description": api.get("Description") or "",
                    "Category": api.get("Category") or "",
                    "Link": api.get("Link"),
                }
            )
            index = len(records) - 1
        known = {t["name"] for t in tools.setdefault(index, [])}
        tools[index] += [t for t in _functions(api) if t["name"] not in known]
        where.append((kind, api, index))

    ids = [identifier(PUBLISHER, "api", s) for s in unique_slugs(r["API"] for r in records)]
    entries = []
    for i, record in enumerate(records):
        data = {k: v for k, v in record.items() if v is not None} | {"tools": tools.get(i, [])}
        link = record.get("Link")
        entries.append(
            catalog_entry(
                ident=ids[i],
                name=record["API"],
                media_type=REST_TYPE,
                description=record.get("Description") or "",
                tags=[record.get("Category") or ""],
                data=data,
                source=NAME,
                homepage=link if isinstance(link, str) and link.startswith(("http://", "https://")) else None,
            )
        )

    queries = []
    for kind, api, index in where:
        for n, instruction in enumerate(api.get("Instructions") or []):
            if isinstance(instruction, str) and instruction.strip():
                qid = f"ta-{kind}-{ids[index].rsplit(':', 1)[1]}-{n}"
                queries.append(labelled_query(qid, instruction, [ids[index]], kind, api.get("Category")))

    licence = snapshot.text("LICENSE")
    return Dataset(NAME, "ToolAlpaca public APIs", REPO, snapshot.commit, licence_name(licence), licence, entries, queries)
