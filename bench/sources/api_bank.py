"""API-Bank (github.com/AlibabaResearch/DAMO-ConvAI, folder api-bank): its level-3 training dialogues as
tasks, and the APIs its tool searcher returned for them as a catalog. Training data only (`train_pairs.py`);
`quality.py` does not score it.

* Snapshot: `git clone --bare https://github.com/AlibabaResearch/DAMO-ConvAI /work/.mirror/AlibabaResearch+DAMO-ConvAI/repo`
  (or `fetch`). The data left the repository for the Hugging Face hub in a09c97b, so the builder reads the
  commit before it (`COMMIT`), not HEAD. Licence: api-bank/LICENSE (Apache-2.0; the repository's own is MIT).
* In `training-data/lv3-api-train.json` and `lv3-train.json` each record is a dialogue up to one step: the
  user's request, then `ToolSearcher(keywords=...)` calls, each followed by the API record it found (name,
  description, input and output parameters, written as a Python literal, not always a valid one: quotes
  inside the text and bare `str` types, so the fields are read with patterns).
* Catalog: one entry per distinct API record (a name can stand for different APIs in different dialogues,
  such as a cost calculator for a retreat and for a rental; each is its own entry, `-2` slugs),
  `urn:air:api-bank.example.org:api:<slug>`, typed `application/openapi+json`, with the API as its one tool.
* Queries: each distinct request (the `TIME:` suffix dropped), `relevant` = every API found in its dialogue;
  kind `single-api` or `multi-api`.
"""

from __future__ import annotations

import re
from pathlib import Path

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

NAME = "api-bank"
REPO = "AlibabaResearch/DAMO-ConvAI"
#: The parent of a09c97b ("move dataset to hf hub"), the last commit holding the training data.
COMMIT = "5d5a2d40b2e6b6998a06961cc43ad0a8c069b153"
PUBLISHER = "api-bank.example.org"
FILES = ("api-bank/training-data/lv3-api-train.json", "api-bank/training-data/lv3-train.json")
_REQUEST = re.compile(r"\nUser: (.*?)(?:TIME: [^\n]*)?\n")
_FOUND = re.compile(r"ToolSearcher\(keywords=[^\n]*?\)\]->(\{'name'[^\n]*)")
_NAME = re.compile(r"'name': '([^']+)'")
_DESCRIPTION = re.compile(r"'description': '(.*?)', 'input_parameters'", re.S)
_INPUTS = re.compile(r"'input_parameters': \{(.*?)\}, 'output_parameters'", re.S)
_PARAMETER = re.compile(r"'(\w+)': \{'type': '?([\w\[\], .]+?)'?, 'description': '(.*?)'\}", re.S)

Api = tuple[str, str, tuple[tuple[str, str, str], ...]]  # name, description, (parameter, type, description)


def _api(found: str) -> Api | None:
    name, description = _NAME.search(found), _DESCRIPTION.search(found)
    if name is None or description is None:
        return None
    inputs = _INPUTS.search(found)
    parameters = tuple(_PARAMETER.findall(inputs.group(1))) if inputs else ()
    return name.group(1), description.group(1), parameters


def build(git_dir: Path, commit: str = COMMIT) -> Dataset:
    snapshot = Snapshot(git_dir, commit)
    found: dict[str, list[Api]] = {}  # request → the APIs its dialogue found, in order
    for path in FILES:
        for record in snapshot.json(path):
            request = _REQUEST.search(record["input"])
            if request is None:
                continue
            apis = found.setdefault(request.group(1).strip(), [])
            for api in filter(None, map(_api, _FOUND.findall(record["input"]))):
                if api not in apis:
                    apis.append(api)
    catalog = list(dict.fromkeys(api for apis in found.values() for api in apis))
    slugs = unique_slugs((api[0] for api in catalog), split_camel=True)
    ids = {api: identifier(PUBLISHER, "api", s) for api, s in zip(catalog, slugs, strict=True)}
    entries = [
        catalog_entry(
            ident=ids[api],
            name=api[0],
            media_type=REST_TYPE,
            description=api[1],
            tags=[],
            data={"tools": [tool(api[0], api[1], object_schema({p: {"type": t, "description": d} for p, t, d in api[2]}))]},
            source=NAME,
        )
        for api in catalog
    ]
    queries = [
        labelled_query(f"ab-{n}", request, [ids[a] for a in apis], "single-api" if len(apis) == 1 else "multi-api")
        for n, (request, apis) in enumerate(found.items())
        if apis
    ]
    licence = snapshot.text("api-bank/LICENSE")
    return Dataset(NAME, "API-Bank level-3 APIs", REPO, snapshot.commit, licence_name(licence), licence, entries, queries)
