"""The training pipeline's data steps (bench/train_pairs.py, and the row choice of bench/train_encoder.py): what
a model is trained on decides whether its leave-one-source-out figures are honest, so these run in CI even
though the training itself (PyTorch, hours on 2 cores) does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from ard_mcp.evaluation.judgements import Judgement
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.index.embedding import load_embedder
from tests.conftest import INVOICES, PDF, REPO, TRANSLATE, WEATHER

sys.path.insert(0, str(REPO / "bench"))

from fit_fusion import judged_rows, near_best
from sources import api_bank
from suite import Collected
from train_encoder import select
from train_pairs import SELF_PAIRS, Catalog, Miner, catalog_rows, query_rows


def _row(source: str, n: int) -> dict[str, str]:
    return {"source": source, "query": f"task {n}", "positive": f"text {n}", "negative": ""}


def test_a_held_out_source_leaves_out_its_queries_and_its_catalog_and_each_source_is_capped() -> None:
    rows = [_row(s, n) for s in ("metatool", "catalog:metatool", "seal-tools", "catalog:seal-tools") for n in range(50)]
    chosen = select(rows, ["metatool"], per_source=20)
    assert {r["source"] for r in chosen} == {"seal-tools", "catalog:seal-tools"}
    assert sum(r["source"] == "seal-tools" for r in chosen) == 20
    assert select(list(reversed(rows)), ["metatool"], per_source=20) == chosen  # by hash, not by input order


def _catalog(*entries: dict[str, Any]) -> Catalog:
    by_id = {normalize_identifier(e["identifier"]): e for e in entries}
    return Catalog.of(by_id, dict.fromkeys(by_id, "sample"))


def test_catalog_pairs_leave_out_texts_that_repeat_the_summary() -> None:
    one_tool = {
        "identifier": "urn:air:tools.example:tool:get-match-info",
        "displayName": "getMatchInfo",
        "type": "application/openapi+json",
        "description": "Retrieve information about a football match",
        "data": {"tools": [{"name": "getMatchInfo", "description": "Retrieve information about a football match"}]},
    }
    rows = list(catalog_rows(_catalog(one_tool, WEATHER)))
    assert rows and all(r["source"] == "catalog:sample" for r in rows)
    assert not [r for r in rows if "football" in r["query"]]  # its only tool is its summary again
    weather = [r for r in rows if r["positive"].startswith("Weather Forecast Server")]
    assert 0 < len(weather) <= SELF_PAIRS and len({r["query"] for r in weather}) == len(weather)


@pytest.mark.slow
def test_query_rows_pair_a_task_with_its_entrys_texts_and_a_lexical_neighbour_as_negative() -> None:
    catalog = _catalog(WEATHER, INVOICES, PDF, TRANSLATE)
    weather = normalize_identifier(WEATHER["identifier"])
    task = Judgement(id="q1", query="forecast the weather and rain in a city", relevant={weather: 1.0})
    rows = list(query_rows("sample", [task], catalog, Miner(load_embedder()), seed=0))
    assert rows and {r["source"] for r in rows} == {"sample"}
    assert rows[0]["positive"] == catalog.examples[weather][0]  # the name + description first
    assert all(r["positive"] in catalog.examples[weather] for r in rows)
    others = {text for ident, texts in catalog.examples.items() if ident != weather for text in texts}
    assert all(r["negative"] in others for r in rows)  # never a text of the relevant entry


def _api_record(name: str, description: str, parameter: str, kind: str, about: str) -> str:
    """A tool searcher's answer as API-Bank writes it: a Python-like literal, quotes inside texts unescaped."""
    inputs = f"{{'{parameter}': {{'type': {kind}, 'description': '{about}'}}}}"
    return f"{{'name': '{name}', 'description': '{description}', 'input_parameters': {inputs}, 'output_parameters': {{}}}}"


def _dialogue(request: str, *found: str) -> dict[str, str]:
    steps = "".join(f"API-Request: [ToolSearcher(keywords='k')]->{api}\n" for api in found)
    return {"instruction": "", "input": f"{{}}\nUser: {request}TIME: 2030-01-01 09:00:00\n{steps}Generate API Request: "}


def test_api_bank_tasks_and_apis_come_from_the_dialogues_even_where_the_literal_is_not_python(tmp_path: Path) -> None:
    ferry = _api_record("FerryTimetable", "API for the next sailings of a ferry line.", "port", "'str'", "The port of departure.")
    # an apostrophe inside the text and a bare type: not a Python literal, still one API with its parameter
    fare = _api_record("FareCalculator", "API for a passenger's fare.", "age", "int", "The passenger's age.")
    parcel = _api_record("FareCalculator", "API for the fare of a parcel.", "weight", "float", "Its weight.")
    leave = "When does the ferry leave Oban?"
    files = {
        "api-bank/training-data/lv3-api-train.json": [_dialogue(leave, ferry), _dialogue(leave, ferry, fare)],
        "api-bank/training-data/lv3-train.json": [_dialogue("Send a parcel to Mull.", parcel), {"instruction": "", "input": "none"}],
        "api-bank/LICENSE": "Apache License\nVersion 2.0, January 2004\n",
    }
    work = tmp_path / "work"
    for path, content in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "data"]):
        subprocess.run([*git, *command], check=True)

    dataset = api_bank.build(work / ".git", "HEAD")
    by_slug = {e["identifier"].rsplit(":", 1)[1]: e for e in dataset.entries}
    assert sorted(by_slug) == ["fare-calculator", "fare-calculator-2", "ferry-timetable"]  # one name, two APIs
    schema = by_slug["fare-calculator"]["data"]["tools"][0]["inputSchema"]
    assert schema["properties"] == {"age": {"type": "integer", "description": "The passenger's age."}}
    queries = {q["query"]: q for q in dataset.queries}
    assert set(queries) == {leave, "Send a parcel to Mull."}
    assert queries[leave]["kind"] == "multi-api"
    assert [r.rsplit(":", 1)[1] for r in queries[leave]["relevant"]] == ["ferry-timetable", "fare-calculator"]
    assert queries["Send a parcel to Mull."]["relevant"] == [by_slug["fare-calculator-2"]["identifier"]]
    assert dataset.licence == "Apache-2.0"


def test_the_cutoff_is_the_best_separation_or_with_slack_the_lowest_near_it() -> None:
    """fit_fusion's step 5: the argmax for a general encoder, the lenient end of the plateau for one trained on the
    fitted sources (whose right answers score higher there than on a catalog it never saw); step 3 takes the
    highest floor near the best nDCG the same way."""
    separation = {20: 2.50, 25: 2.52, 30: 2.53, 35: 2.40, 40: 2.53}
    assert min(near_best(separation, 0.0)) == 30  # the best; of two equal, the lower
    assert min(near_best(separation, 0.02)) == 25
    assert min(near_best(separation, 0.05)) == 20
    assert max(near_best(separation, 0.02)) == 40


def test_the_ranking_fit_leaves_out_entries_no_query_of_the_source_labels() -> None:
    """An index holds more than a benchmark labels (another source's entries, a seed list of one-sentence
    servers): fitted on as wrong, they taught the ranking that an entry of one text is never right."""
    a, b, c = (f"urn:air:{name}.example:agent:{name}" for name in "abc")
    signals = np.array([[0.9, 0.0], [0.5, 0.4], [0.7, 0.7]])  # of a, b and c, for each query

    def item(query: str, right: str) -> Collected:
        found = SimpleNamespace(signals=signals)  # all that judged_rows reads of the candidates
        return Collected(Judgement(query, query, relevant={right: 1.0}), found, [a, b, c])  # type: ignore[arg-type]

    rows = judged_rows("source", [item("q1", a), item("q2", b)])
    assert [(name, s.tolist(), labels.tolist()) for name, s, labels in rows] == [
        ("source", [[0.9, 0.0], [0.5, 0.4]], [1.0, 0.0]),  # b, right for q2, is a judged wrong answer to q1
        ("source", [[0.9, 0.0], [0.5, 0.4]], [0.0, 1.0]),
    ]  # c, which no query labels, is in neither
