"""APIBench (github.com/ShishirPatil/gorilla, folder data/): Gorilla's model-hub API documentation as a catalog,
its evaluation instructions as queries. Held out: nothing is tuned or trained on it (`suite.HELD_OUT_SOURCES`).

* Catalog: the API records of `data/api/huggingface_api.jsonl` (936 records), `tensorflowhub_api.jsonl`
  (696) and `torchhub_api.jsonl` (94), one entry per model (870, 58 and 94: 1,022 entries),
  `urn:air:apibench.example.org:api:<hub>-<model>`, typed `application/openapi+json`. The model is what a user
  picks, named as a person would: the Hugging Face model id (`api_name`), the tfhub.dev path of the call (its
  `api_name` is often just `model_id`), or the Torch Hub repository and model (`intel-isl/MiDaS DPT_Large`).
  Per model, not per `api_call`: TensorFlow Hub documents one model through several calls
  (`hub.load(url)`, `hub.KerasLayer(url)`, the same in double quotes), and 586 of its 688 evaluation
  instructions are labelled with a model that has more than one; an entry per call would make two or three
  identical entries of which the label names one. Each distinct call is one of the entry's tools (the first
  record of the call: the file repeats calls with reworded descriptions, 220 records of the universal sentence
  encoder), with the record's argument names as parameters; the entry's description, tags (domain,
  framework, functionality) and `data` are its first record's. The three hubs are one catalog, as a registry
  would hold them.
* Queries: the instruction (`###Instruction:` up to `###Output`, some written with a space after `###`) of
  each record of `data/apibench/huggingface_eval.json` (911), `tensorflow_eval.json` (688) and
  `torchhub_eval.json` (186); `relevant` = the model of its `api_call` (every call of the eval records is a
  catalog record's too, except 77 Hugging Face ones the catalog lacks, which are left out). Kind: the hub; category: the record's domain.
  The training files (`*_train.json`) are not read (two of them are over the snapshot's size limit).
* Caveat for any figure: the labels name one model, and a hub holds many that do the same task (33 Hugging
  Face sentence-similarity models, a dozen ImageNet classifiers on each hub). Another model that fits is
  counted wrong, so nDCG@10 and "right in the top 3" understate what a user gets; the confidence figures
  (a right answer doubted, a wrong first answer vouched for) are the ones to read.
* Licence: the repository's Apache-2.0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .common import REST_TYPE, Dataset, Snapshot, catalog_entry, identifier, labelled_query, licence_name, object_schema, tool, unique_slugs

NAME = "apibench"
REPO = "ShishirPatil/gorilla"
PUBLISHER = "apibench.example.org"
#: (kind, API records, evaluation records)
HUBS = (
    ("huggingface", "data/api/huggingface_api.jsonl", "data/apibench/huggingface_eval.json"),
    ("tensorflowhub", "data/api/tensorflowhub_api.jsonl", "data/apibench/tensorflow_eval.json"),
    ("torchhub", "data/api/torchhub_api.jsonl", "data/apibench/torchhub_eval.json"),
)
_INSTRUCTION = re.compile(r"###\s*Instruction:\s*(.*?)\s*(?:###\s*Output|$)", re.S)
_INPUT = re.compile(r"###\s*Input:")
_TFHUB = re.compile(r"tfhub\.dev/([^'\"\s)]+)")
_QUOTED = re.compile(r"'([^']*)'")
_MODEL = re.compile(r"model\s*=\s*'([^']+)'")


def display_name(kind: str, record: Mapping[str, Any]) -> str:
    """What a person would call the API: the tfhub.dev path (its `api_name` is often just `model_id`), the
    Torch Hub repository and model (`intel-isl/MiDaS DPT_Large`), or the Hugging Face model id."""
    call, name = str(record.get("api_call") or ""), str(record.get("api_name") or "")
    if kind == "tensorflowhub" and (url := _TFHUB.search(call)):
        return url.group(1)
    if kind == "torchhub":
        quoted = _QUOTED.findall(call)
        model = _MODEL.search(call)
        parts = [*quoted[:1], model.group(1) if model else quoted[1] if len(quoted) > 1 else ""]
        return " ".join(p for p in parts if p) or name
    return name or call


def _schema(arguments: Any) -> dict[str, Any]:
    """The record's argument names as parameters; their values are examples (`(224, 224, 3)`), not types."""
    names: list[Any] = []
    if isinstance(arguments, Mapping):
        names = list(arguments)
    elif isinstance(arguments, list):
        names = [a for a in arguments if isinstance(a, str)]
    return object_schema({str(n): {} for n in names})


def _entry(kind: str, records: list[dict[str, Any]], ident: str) -> dict[str, Any]:
    """One model: its first record's description, tags and fields, and one tool per call (`records`, one a call)."""
    first = records[0]
    name = display_name(kind, first)
    tools = [tool(name, str(r.get("description") or ""), _schema(r.get("api_arguments")), api_call=r.get("api_call")) for r in records]
    return catalog_entry(
        ident=ident,
        name=name,
        media_type=REST_TYPE,
        description=str(first.get("description") or ""),
        tags=[str(first.get(key) or "") for key in ("domain", "framework", "functionality")],
        data={**first, "hub": kind, "tools": tools},
        source=NAME,
    )


def instruction(code: str) -> str:
    """The user's instruction of an evaluation record (its `code` holds it, then the expected output); the data
    some instructions come with (`###Input: ...`, a text to classify) stays, as `Input: ...`."""
    found = _INSTRUCTION.search(code)
    return _INPUT.sub("Input:", found.group(1)).strip() if found else ""


def build(git_dir: Path, commit: str = "HEAD") -> Dataset:
    snapshot = Snapshot(git_dir, commit)
    models: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (hub, model) → the first record of each of its calls
    model_of: dict[tuple[str, str], tuple[str, str]] = {}  # (hub, api_call) → (hub, model)
    for kind, api_path, _ in HUBS:
        for record in snapshot.jsonl(api_path):
            call = record.get("api_call")
            if isinstance(call, str) and (kind, call) not in model_of:
                model = (kind, display_name(kind, record))
                model_of[kind, call] = model
                models.setdefault(model, []).append(record)
    slugs = unique_slugs(f"{kind} {model}" for kind, model in models)
    ids = {key: identifier(PUBLISHER, "api", s) for key, s in zip(models, slugs, strict=True)}
    entries = [_entry(key[0], records, ids[key]) for key, records in models.items()]

    queries = []
    for kind, _, eval_path in HUBS:
        for n, record in enumerate(snapshot.jsonl(eval_path)):
            labelled = model_of.get((kind, str(record.get("api_call") or "")))
            text = instruction(str(record.get("code") or ""))
            if labelled is None or not text:
                continue  # an API the catalog lacks: no fair label
            domain = (record.get("api_data") or {}).get("domain")
            queries.append(labelled_query(f"ab-{kind}-{n}", text, [ids[labelled]], kind, domain if isinstance(domain, str) else None))

    licence = snapshot.text("LICENSE")
    return Dataset(NAME, "APIBench model-hub APIs", REPO, snapshot.commit, licence_name(licence), licence, entries, queries)
