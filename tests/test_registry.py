"""The core's promises: what is stored, what is re-embedded, what is left behind, and what is refused."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ard_mcp.config import Config, bundled_model_dir, default_model_dir
from ard_mcp.errors import DataDirInUse, InvalidArgument, ModelMismatch
from ard_mcp.formats.manifests import manifest_entries
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from tests.conftest import INVOICES, PDF, SAMPLE, SKILL, TRANSLATE, WEATHER, entry, results

pytestmark = pytest.mark.slow  # the model, Chroma or a server


def counts(registry: Registry) -> dict[str, int]:
    """Rows for every table that holds a trace of an agent, plus the vector index."""
    store = registry.store
    out = {t: store._tuples(f"SELECT count(*) FROM {t}")[0][0] for t in ("agents", "agent_values", "examples")}  # noqa: SLF001
    postgres = type(store).__name__ == "PostgresStore"
    full_text = "SELECT count(DISTINCT agent_id) FROM postings" if postgres else "SELECT count(*) FROM agents_fts"
    out["full_text"] = store._tuples(full_text)[0][0]  # noqa: SLF001 - agents in the store's full-text index
    out["chroma"] = registry.vectors.count()
    return out


@pytest.fixture
def embedded(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the model is asked to embed from here on."""
    seen: list[str] = []
    original = registry.embedder.embed

    def spy(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return original(texts)

    monkeypatch.setattr(registry.embedder, "embed", spy)
    return seen


def test_unchanged_entries_cost_no_embedding(loaded: Registry, embedded: list[str]) -> None:
    report = loaded.indexer.register_many((str(i), e) for i, e in enumerate(SAMPLE))
    assert (report.added, report.updated, report.unchanged) == (0, 0, len(SAMPLE))
    assert embedded == []


def test_update_reembeds_only_changed_texts_and_leaves_no_old_examples(loaded: Registry, embedded: list[str]) -> None:
    tools = [WEATHER["data"]["tools"][0], {"name": "get_alerts", "description": "Severe weather warnings issued for a region."}]
    changed = entry(
        WEATHER, data={"name": "weather", "tools": tools}, capabilities=["get_forecast", "get_alerts"], updatedAt="2026-06-01T00:00:00Z"
    )
    assert loaded.indexer.register(changed).status == "updated"
    assert embedded == ["get alerts: Severe weather warnings issued for a region."]
    rows = loaded.store.examples_of([loaded.store.get(WEATHER["identifier"]).id])  # type: ignore[union-attr]
    texts = {r.text for r in rows}
    assert not any("right now" in t for t in texts)  # the dropped tool's example is gone
    assert any(t.startswith("get alerts") for t in texts)
    assert counts(loaded)["chroma"] == counts(loaded)["examples"]


def test_deregistration_removes_every_trace(loaded: Registry) -> None:
    before = counts(loaded)
    for item in SAMPLE:
        loaded.indexer.deregister(item["identifier"])
    assert counts(loaded) == dict.fromkeys(before, 0)
    assert loaded.explore(None, None, [_facet("tags")]).facets["tags"].buckets == []


def _facet(field: str) -> Any:
    from ard_mcp.formats.messages import FacetRequest

    return FacetRequest(field=field)


def test_unknown_fields_are_kept_exactly(registry: Registry) -> None:
    extended = entry(PDF, **{"x-pricing": {"plan": "free", "limits": [1, 2]}, "license": "MIT"})
    registry.indexer.register(extended)
    assert registry.get(PDF["identifier"]).wire() == extended


def test_nested_catalog_is_walked_and_rejections_name_field_and_rule(registry: Registry) -> None:
    manifest = {
        "specVersion": "1.0",
        "entries": [
            WEATHER,
            {
                "identifier": "urn:air:example.com:bundle:office",
                "displayName": "Office bundle",
                "type": "application/ai-catalog+json",
                "data": {"specVersion": "1.0", "entries": [SKILL, entry(PDF, identifier="pdf-forge")]},
            },
            entry(INVOICES, data={"x": 1}),
        ],
    }
    report = registry.indexer.register_many(manifest_entries(manifest))
    assert report.added == 3
    assert report.rejected == [
        "entries[1].data.entries[1].identifier: must be urn:air:<publisher-domain>:...:<name> (urn:ai: is accepted too)",
        "entries[2]: exactly one of url and data must be present (ARD §3.4 value-or-reference)",
    ]
    assert registry.get(SKILL["identifier"]).displayName == "pptx-creator"


def test_bad_manifest_is_refused_whole() -> None:
    with pytest.raises(InvalidArgument, match="entries: is required"):
        list(manifest_entries({"specVersion": "1.0", "agents": []}))
    with pytest.raises(InvalidArgument, match="manifest: must be a JSON object"):
        list(manifest_entries(["not", "a", "manifest"]))


def test_filters_follow_ard_semantics(loaded: Registry) -> None:
    def ids(flt: dict[str, Any]) -> set[str]:
        allowed = loaded.store.filter_agents(loaded_filter(flt))
        return {a.identifier for a in loaded.store.agents_by_id(allowed or []).values()}

    from ard_mcp.search.filters import parse_filter as loaded_filter

    assert ids({"tags": "documents"}) == {PDF["identifier"], SKILL["identifier"]}  # any element of an array
    many = ["documents", *(f"tag-{i}" for i in range(40_000))]  # more values than SQLite takes in one statement
    stored = loaded.store.filter_agents({"tags": many})  # the store batches them (callers may send 100: see test_hostile_input)
    assert {a.identifier for a in loaded.store.agents_by_id(stored or []).values()} == {PDF["identifier"], SKILL["identifier"]}
    assert ids({"type": ["application/ai-skill", "application/mcp-server-card+json"]}) == {
        SKILL["identifier"],
        PDF["identifier"],
        WEATHER["identifier"],
    }
    assert ids({"tags": ["documents"], "type": ["application/ai-skill"]}) == {SKILL["identifier"]}  # AND across keys
    assert ids({"publisher": "EXAMPLE.com"}) == {WEATHER["identifier"]}
    assert ids({"metadata.free": True}) == {WEATHER["identifier"]}
    assert ids({"trustManifest.attestations.type": "SOC2-Type2"}) == {INVOICES["identifier"]}
    assert ids({"capabilities": "translate_text"}) == set()
    with pytest.raises(InvalidArgument, match=r"filter\.tags: must list at least one value"):
        loaded_filter({"tags": []})


def test_both_names_of_the_mcp_media_type_are_one_type(registry: Registry) -> None:
    """v0.9 renamed application/mcp-server+json (ADR 0008): a filter, a facet or a listing by either name
    finds entries registered under both; each is served with the new name (its parameters kept) and stored
    with the name it was registered with."""
    spellings = {
        "old": "application/mcp-server+json",
        "new": "application/mcp-server-card+json",
        "versioned": "Application/MCP-Server+JSON; version=1.0",
    }
    for name, media_type in spellings.items():
        registry.indexer.register(entry(PDF, identifier=f"urn:air:docs.example.org:convert:{name}", type=media_type))
    registry.indexer.register(SKILL)
    every = {f"urn:air:docs.example.org:convert:{name}" for name in spellings}
    for media_type in spellings.values():
        assert {e.identifier for e in registry.list({"type": media_type}).items} == every
        assert {e.identifier for e in registry.list(f"type = '{media_type.split(';')[0]}'").items} == every
    facets = registry.explore(None, None, [_facet("type")]).facets["type"].buckets
    assert [(b.value, b.count) for b in facets] == [("application/mcp-server-card+json", 3), ("application/ai-skill", 1)]
    found = registry.search(SearchQuery.of("merge two pdf files", {"type": "application/mcp-server+json"}, page_size=5)).response().results
    assert {r.identifier for r in found} == every and {r.type for r in found} == set(spellings.values())
    # served in the v0.9 spelling, so a client comparing types exactly finds it; stored as the publisher sent it
    old = registry.get("urn:air:docs.example.org:convert:old")
    assert old.wire()["type"] == "application/mcp-server-card+json" and old.stored()["type"] == "application/mcp-server+json"
    served = {"application/mcp-server-card+json", "application/mcp-server-card+json; version=1.0"}
    assert {r.model_dump(mode="json")["type"] for r in found} == served
    assert {e["type"] for e in registry.list({"type": "application/mcp-server-card+json"}).model_dump(mode="json")["items"]} == served


def test_a_second_registry_on_the_same_directory_is_refused(registry: Registry, data_dir: Path) -> None:
    with pytest.raises(DataDirInUse, match="in use by another ard-mcp process"):
        Registry(Config(data_dir))


def _model_copy(tmp_path: Path, **changes: Any) -> Path:
    target = tmp_path / "model"
    shutil.copytree(default_model_dir(), target)
    spec = json.loads((target / "model.json").read_text())
    spec.update(changes)
    (target / "model.json").write_text(json.dumps(spec))
    return target


def test_an_index_built_with_another_model_is_refused(loaded: Registry, data_dir: Path, tmp_path: Path) -> None:
    loaded.close()
    other = _model_copy(tmp_path, id="someone/other-model")
    with pytest.raises(ModelMismatch, match=rf"built with model '{re.escape(loaded.model_spec.id)}'.*reindex"):
        Registry(replace(loaded.config, model_dir=other))
    rebuilt = Registry(replace(loaded.config, model_dir=other), rebuilding=True)
    try:
        assert rebuilt.reindex() == counts(rebuilt)["examples"] > 0
        assert results(rebuilt, "weather in Oslo tomorrow")[0].identifier == WEATHER["identifier"]
    finally:
        rebuilt.close()
    reopened = Registry(replace(loaded.config, model_dir=other))  # the index now belongs to the new model
    reopened.close()
    Registry(replace(loaded.config, model_dir=other), rebuilding=True).close()
    with pytest.raises(ModelMismatch):
        Registry(loaded.config)


def test_model_files_are_checked_against_their_sha256(tmp_path: Path) -> None:
    from ard_mcp.index.embedding import Embedder, ModelSpec

    real = ModelSpec.load(default_model_dir()).sha256["model.onnx"]
    bad = _model_copy(tmp_path, files={"model.onnx": "0" * 64, "tokenizer.json": "0" * 64})
    with pytest.raises(ModelMismatch, match=f"model.onnx has sha256 {real}, but model.json names 0{{64}}"):
        Embedder(ModelSpec.load(bad))


def test_a_model_directory_carries_its_own_ranking(loaded: Registry, tmp_path: Path) -> None:
    query = "weather in Oslo tomorrow"
    before = results(loaded, query)
    loaded.close()
    tuning = loaded.tuning
    fitted = {"bias": tuning.bias - 3.0, "weights": list(tuning.weights), "confidence_weights": [0.5, 1.0, 0.25, 0.1, -1.0], "cutoff": 40}
    fitted["floor"] = 3
    registry = Registry(replace(loaded.config, model_dir=_model_copy(tmp_path, ranking=fitted)))
    try:
        assert (registry.tuning.bias, registry.tuning.confidence_weights, registry.tuning.cutoff, registry.tuning.floor) == (
            tuning.bias - 3.0,
            (0.5, 1.0, 0.25, 0.1, -1.0),
            40,
            3,
        )
        after = results(registry, query)
        assert after[0].identifier == before[0].identifier == WEATHER["identifier"]  # the same order ...
        assert after[0].score < before[0].score  # ... under a lower bias
    finally:
        registry.close()


@pytest.mark.parametrize(
    ("fitted", "loaded_as"),
    [([0.5, 1.0, -1.0], (0.5, 1.0, 0.0, 0.0, -1.0)), ([0.5, 1.0, 0.25, -1.0], (0.5, 1.0, 0.25, 0.0, -1.0))],
    ids=["before the gap", "before the length"],
)
def test_confidence_weights_fitted_before_later_features_still_load(
    loaded: Registry, tmp_path: Path, fitted: list[float], loaded_as: tuple[float, ...]
) -> None:
    """A model directory fitted with fewer confidence features keeps its confidence: the ones it lacks weigh 0."""
    from ard_mcp.search.confidence import confidence, confidence_features

    loaded.close()
    registry = Registry(replace(loaded.config, model_dir=_model_copy(tmp_path, ranking={"confidence_weights": fitted})))
    try:
        assert registry.tuning.confidence_weights == loaded_as
        found = registry.ranker.candidates("weather forecast for Oslo tomorrow", None)
        assert found is not None
        features = confidence_features(registry.ranker.relevance(found.signals), found.signals, found.flagged, found.text)
        expected = 100 / (1 + np.exp(-(np.dot(fitted[:-1], features[: len(fitted) - 1]) + fitted[-1])))
        assert confidence(registry.tuning, features) == round(expected)  # the confidence the old fit gives, unchanged
    finally:
        registry.close()


@pytest.mark.parametrize(
    ("ranking", "message"),
    [
        ({"weights": [1, 2]}, "weights must be a list of 6 numbers"),
        ({"confidence_weights": [1, 2]}, "confidence_weights must be a list of 5 numbers"),
        ({"confidence_weights": [1, 2, 3, 4, 5, 6]}, "confidence_weights must be a list of 5 numbers"),
        ({"cutoff": 101}, "cutoff must be a whole number from 0 to 100"),
        ({"bias": "high"}, "bias must be a number"),
        ({"field_weights": [1, 1, 1, 1]}, r"unknown ranking parameters \['field_weights'\]"),
    ],
)
def test_a_model_directory_with_bad_ranking_parameters_is_refused(
    data_dir: Path, tmp_path: Path, ranking: dict[str, Any], message: str
) -> None:
    with pytest.raises(ModelMismatch, match=f"model.json: ranking {message}|model.json: {message}"):
        Registry(Config(data_dir, model_dir=_model_copy(tmp_path, ranking=ranking)))
    Registry(Config(data_dir)).close()  # the refusal released the data directory


def test_interrupted_vector_writes_are_repaired_on_open(loaded: Registry, data_dir: Path) -> None:
    agent = loaded.store.get(TRANSLATE["identifier"])
    assert agent is not None
    lost = [(r.id, r.agent_id) for r in loaded.store.examples_of([agent.id])]
    loaded.vectors.delete(lost)  # as if the process died between the SQLite commit and the Chroma write
    loaded.store._autocommit("UPDATE agents SET vectors_pending = 1 WHERE id = ?", (agent.id,))  # noqa: SLF001
    loaded.close()
    reopened = Registry(loaded.config)
    try:
        assert results(reopened, "say this sentence in Japanese")[0].identifier == TRANSLATE["identifier"]
        assert reopened.store.pending_agents() == []
    finally:
        reopened.close()


def _segment_dirs(data_dir: Path) -> list[Path]:
    return [d for d in (data_dir / "chroma").iterdir() if d.is_dir()]


def test_reindex_leaves_one_vector_index_on_disk(loaded: Registry, data_dir: Path) -> None:
    """Chroma keeps a deleted collection's segment files; reindexing twice must not keep three copies."""
    loaded.vectors.count()  # a new index opens Chroma when first needed (`VectorIndex.defers`): now
    assert len(_segment_dirs(data_dir)) == 1
    expected = counts(loaded)["examples"]
    assert loaded.reindex() == expected and loaded.reindex() == expected
    assert len(_segment_dirs(data_dir)) == 1
    loaded.close()
    reopened = Registry(loaded.config)
    try:
        assert reopened.vectors.count() == expected
        assert results(reopened, "merge two pdf files")[0].identifier == PDF["identifier"]
    finally:
        reopened.close()


def test_an_older_index_gets_the_current_search_breadth(loaded: Registry, data_dir: Path) -> None:
    from ard_mcp.index.vectors import HNSW

    loaded.vectors._chroma().modify(configuration={"hnsw": {"ef_search": 100}})  # noqa: SLF001 - as an earlier version made it
    loaded.close()
    reopened = Registry(loaded.config)
    try:
        assert reopened.vectors._chroma().configuration["hnsw"]["ef_search"] == HNSW["ef_search"]  # noqa: SLF001
        assert results(reopened, "merge two pdf files")[0].identifier == PDF["identifier"]
    finally:
        reopened.close()


def test_reindex_rebuilds_a_lost_vector_index(loaded: Registry, data_dir: Path) -> None:
    loaded.close()
    shutil.rmtree(data_dir / "chroma")
    rebuilt = Registry(loaded.config, rebuilding=True)
    try:
        assert rebuilt.reindex() == counts(rebuilt)["examples"]
        assert results(rebuilt, "merge two pdf files")[0].identifier == PDF["identifier"]
    finally:
        rebuilt.close()


def test_filtered_search_by_widened_vector_query_agrees_with_exact_scoring(loaded: Registry) -> None:
    """Large filtered sets go through a widened HNSW query instead of scoring every allowed agent."""
    from dataclasses import replace

    from ard_mcp.search.filters import parse_filter

    allowed = loaded.store.filter_agents(parse_filter({"type": "application/mcp-server-card+json"}))
    assert allowed
    exact = [hit.agent_id for hit in loaded.ranker.rank("combine pdf documents", allowed)]
    loaded.ranker.tuning = replace(loaded.ranker.tuning, exact_below=0)
    widened = [hit.agent_id for hit in loaded.ranker.rank("combine pdf documents", allowed)]
    assert widened == exact and set(widened) <= allowed and widened


def test_a_query_is_confident_if_its_confidence_reaches_the_cutoff_and_lists_down_to_the_floor(loaded: Registry) -> None:
    from dataclasses import replace

    from ard_mcp.search.ranking import Ranker

    text = "weather forecast for Oslo tomorrow"

    def ranked(cutoff: int, floor: int, tentative: int = 5) -> tuple[list[int], bool]:
        tuning = replace(loaded.tuning, cutoff=cutoff, floor=floor, tentative=tentative)
        ranking = Ranker(loaded.store, loaded.vectors, loaded.embedder, tuning).rank(text, None)
        return [hit.score for hit in ranking.hits], ranking.confident

    everything, confident = ranked(0, 0)
    assert confident and len(everything) >= 3 and everything == sorted(everything, reverse=True)
    best, middle = everything[0], everything[len(everything) // 2]
    found = loaded.ranker.candidates(text, None)
    assert found is not None
    sure = loaded.ranker.confidence(found)
    assert 0 < sure < 100
    # the confidence misses the cutoff: not confident, and the closest few (or all down to the floor, if more) are listed
    assert ranked(sure + 1, 101, tentative=2) == (everything[:2], False)
    assert ranked(sure + 1, middle, tentative=1) == ([s for s in everything if s >= middle], False)
    assert ranked(sure, middle) == ([s for s in everything if s >= middle], True)  # confident: listed down to the floor
    assert ranked(sure, best) == ([s for s in everything if s >= best], True)


def test_a_query_is_more_confident_the_more_of_its_words_a_candidate_covers() -> None:
    """The features of a query's confidence, and that a flagged candidate adds to none."""
    from ard_mcp.search.confidence import confidence, confidence_features
    from ard_mcp.search.tuning import DEFAULT_TUNING, SIGNALS

    def logit(p: float) -> float:
        return float(np.log(p / (1 - p)))

    signals = np.zeros((3, len(SIGNALS)))
    signals[:, SIGNALS.index("lexical")] = [0.2, 0.5, 1.0]
    relevance = np.array([0.8, 0.3, 0.9])
    text = "convert these invoices to PDF"
    best, covered, gap, length = confidence_features(relevance, signals, None, text)
    assert (best, covered, gap) == (pytest.approx(logit(0.9)), 1.0, pytest.approx(logit(0.9) - logit(0.8)))
    assert length == pytest.approx(np.log(1 + 5))
    flagged = np.array([False, False, True])
    assert confidence_features(relevance, signals, flagged, text) == (
        pytest.approx(logit(0.8)),
        0.5,
        pytest.approx(logit(0.8) - logit(0.3)),
        length,
    )
    assert confidence_features(relevance[:1], signals[:1], None, text)[2] == 0.0  # one candidate: nothing to stand above
    assert confidence(DEFAULT_TUNING, (best, 1.0, gap, length)) > confidence(DEFAULT_TUNING, (best, 0.2, gap, length))
    assert confidence(DEFAULT_TUNING, (logit(0.9), 0.5, gap, length)) > confidence(DEFAULT_TUNING, (logit(0.3), 0.5, gap, length))
    # the same best relevance says more of a long task, whose fitting entry matches less of it
    assert confidence(DEFAULT_TUNING, (best, 0.5, gap, np.log(1 + 200))) > confidence(DEFAULT_TUNING, (best, 0.5, gap, length))
    # only flagged candidates: nothing to be confident about, however well they match
    assert confidence(DEFAULT_TUNING, confidence_features(relevance, signals, np.ones(3, bool), text)) < DEFAULT_TUNING.cutoff


def test_an_entry_of_one_text_is_doubted_no_more_than_one_whose_second_example_agrees(loaded: Registry) -> None:
    """The confidence reads an entry described by one text as if its second example were as close as its
    best: lacking a second text is no evidence against it. Two candidates alike but for that: the query's
    confidence is the same whichever of them it has, and higher than the raw signals would give."""
    from ard_mcp.index.records import CandidateExamples
    from ard_mcp.search.confidence import confidence, confidence_features
    from ard_mcp.search.ranking import Candidates
    from ard_mcp.search.tuning import SIGNALS

    def found(sizes: list[int], second: float) -> Candidates:
        signals = np.zeros((2, len(SIGNALS)))
        signals[0] = (0.62, second, 0.62, 0.62, 0.3, 0.0)  # the fitting entry
        signals[1] = (0.30, 0.25, 0.30, 0.28, 0.1, 0.0)  # a weak neighbour of two examples
        agents = np.repeat([1, 2], sizes)
        examples = CandidateExamples(np.arange(len(agents)), agents, np.zeros(len(agents), bool), np.zeros((len(agents), 0), np.float32))
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        return Candidates(np.array([1, 2]), signals, examples, np.zeros(len(agents)), starts, [], {}, {}, "book a table for two tonight")

    one_text = found([1, 2], 0.0)  # one example: its second similarity is 0
    agreeing = found([2, 2], 0.62)  # a second example as close as its best
    assert loaded.ranker.confidence(one_text) == loaded.ranker.confidence(agreeing)
    raw = confidence_features(loaded.ranker.relevance(one_text.signals), one_text.signals, None, one_text.text)
    assert loaded.ranker.confidence(one_text) > confidence(loaded.tuning, raw)


def test_every_example_keys_its_own_vector_in_chroma(loaded: Registry) -> None:
    """The ids a write gives an agent's examples (all inserted by one statement) key their vectors in Chroma:
    each example's vector there is the one stored with its text, after an update re-inserted them too."""
    assert loaded.indexer.register(entry(WEATHER, description=WEATHER["description"] + " Tide tables too.")).status == "updated"
    examples, _ = loaded.store.examples_and_terms(sorted(loaded.store.agent_ids()))
    found, vectors = loaded.vectors.stored_vectors(list(zip(examples.ids.tolist(), examples.agent_ids.tolist(), strict=True)))
    assert sorted(found) == sorted(examples.ids.tolist()) and len(found) > len(SAMPLE)
    chroma = dict(zip(found, vectors, strict=True))
    cosines = [
        float(chroma[int(i)] @ v / np.linalg.norm(chroma[int(i)]) / np.linalg.norm(v))
        for i, v in zip(examples.ids, examples.vectors, strict=True)
    ]
    assert min(cosines) > 0.999


def test_a_page_reads_the_evidence_texts_of_all_its_results_at_once(loaded: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """One store read for the evidence of a whole page, not one per result: on PostgreSQL each read is a round trip."""
    loaded.ranker.tuning = replace(loaded.ranker.tuning, floor=0)  # every candidate on the page
    reads: list[list[int]] = []
    read = loaded.store.example_texts

    def counted(ids: list[int]) -> dict[int, tuple[str, str, str]]:
        reads.append(list(ids))
        return read(ids)

    monkeypatch.setattr(loaded.store, "example_texts", counted)
    text = "weather forecast for Oslo tomorrow"
    page = loaded.search(SearchQuery.of(text, page_size=5)).response().results
    assert len(page) >= 3 and len(reads) == 1
    shown = [[(m.kind, m.text, m.similarity) for m in r.evidence.matchedExamples] for r in page if r.evidence is not None]
    assert len(shown) == len(page) and all(shown)

    reads.clear()  # explained one by one, each result reads its own: the same evidence
    ranking = loaded.ranker.rank(text, None)
    agents = loaded.store.agents_by_id(hit.agent_id for hit in ranking.hits[: len(page)])
    alone = [ranking.explain(hit, agents[hit.agent_id].entry) for hit in ranking.hits[: len(page)]]
    assert [[(m.kind, m.text, m.similarity) for m in r.matched_examples] for r in alone] == shown
    assert len(reads) == len(page)


def test_ingest_writes_chunk_by_chunk_and_an_interrupted_one_keeps_what_it_wrote(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ard_mcp.index.indexer as indexer_module

    monkeypatch.setattr(indexer_module, "INGEST_CHUNK", 2)
    seen: list[tuple[int, int]] = []

    def items() -> Any:
        for i, e in enumerate(SAMPLE[:3]):
            yield f"entries[{i}]", e
        raise KeyboardInterrupt  # the operator stops the ingest after the third entry

    with pytest.raises(KeyboardInterrupt):
        registry.indexer.register_many(items(), lambda done, total: seen.append((done, total)))
    assert counts(registry)["agents"] == 2  # the first chunk is written; the third entry's chunk never was
    assert seen and seen[-1][0] == seen[-1][1] and all(b >= a for a, b in zip([d for d, _ in seen], [d for d, _ in seen][1:], strict=False))

    report = registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
    assert (report.unchanged, report.added, report.updated) == (2, len(SAMPLE) - 2, 0)
    assert counts(registry)["agents"] == len(SAMPLE) == counts(registry)["full_text"]
    assert counts(registry)["chroma"] == counts(registry)["examples"]


def test_an_ingest_reads_the_stored_rows_of_a_group_of_entries_at_once(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL a read an entry made a re-ingest of an unchanged catalog four times SQLite's."""
    import ard_mcp.index.indexer as indexer_module

    registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
    monkeypatch.setattr(indexer_module, "_PLAN_GROUP", 2)
    reads: list[int] = []
    get_many = registry.store.get_many
    monkeypatch.setattr(registry.store, "get", lambda identifier: pytest.fail(f"{identifier} was read alone"))
    monkeypatch.setattr(registry.store, "get_many", lambda identifiers: reads.append(len(set(identifiers))) or get_many(identifiers))
    stale = {**SAMPLE[0], "updatedAt": "2001-01-01T00:00:00Z"}
    report = registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate([*SAMPLE, stale]))
    assert (report.unchanged, report.added, report.updated) == (len(SAMPLE), 0, 0)
    assert len(report.rejected) == 1 and "older than the stored" in report.rejected[0]
    assert reads == [2, 2, 2]  # five entries and a stale copy of the first, two a read


def test_the_index_opens_after_the_model_directory_it_was_built_with_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma rebuilds the collection's embedding function from its stored config on every open; a
    path recorded there must not make the index unreadable once that path is gone."""
    from ard_mcp.index import embedding

    moved = tmp_path / "model-copy"
    shutil.copytree(bundled_model_dir(), moved)
    data_dir = tmp_path / "data"
    first = Registry(Config(data_dir, model_dir=moved))
    try:
        first.indexer.register(PDF)
    finally:
        first.close()
    shutil.rmtree(moved)
    monkeypatch.setattr(embedding, "_embedders", {})  # as in a new process, which has loaded no model yet
    reopened = Registry(Config(data_dir))
    try:
        assert results(reopened, "merge two pdf files")[0].identifier == PDF["identifier"]
    finally:
        reopened.close()


def test_a_shipped_model_is_recorded_by_its_name_not_a_path(loaded: Registry) -> None:
    function = loaded.vectors._chroma().configuration["embedding_function"]  # noqa: SLF001
    assert function.get_config() == {"model_dir": "tools"}
    assert list(function(["merge two pdf files"])[0]) == list(loaded.embedder.embed(["merge two pdf files"])[0])


def test_vectors_of_agents_the_store_does_not_have_are_ignored(loaded: Registry) -> None:
    """A Chroma server keeps its vectors when a data directory is lost or another store points at it;
    a search then finds agents in Chroma that the store cannot describe."""
    loaded.warm_up()
    for identifier in [PDF["identifier"], *(e["identifier"] for e in SAMPLE if e["identifier"] != PDF["identifier"])]:
        loaded.store.delete(identifier)  # the store forgets them, Chroma still has their vectors
    assert loaded.vectors.count() > 0
    assert results(loaded, "merge two pdf files") == []
