"""The evaluation metrics against small rankings worked out by hand.

Every expected value below is written out from the formula (gain / log2(rank + 1), ideal = gains sorted
descending at ranks 1..k) so that a wrong discount, a wrong ideal or a double-counted requirement fails.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from ard_mcp.evaluation.judgements import Judgement, load_queries
from ard_mcp.evaluation.metrics import ndcg_at, recall_at, reciprocal_rank
from ard_mcp.evaluation.report import Answer, evaluate, format_table

L3 = math.log2(3)  # discount at rank 2
L4 = 2.0  # discount at rank 3


def j(relevant: object = (), any_of: object = (), **extra: object) -> Judgement:
    raw = {
        "id": "q",
        "query": "find something",
        "relevant": list(relevant) if isinstance(relevant, tuple) else relevant,
        "relevant_any_of": [list(g) for g in any_of],
        **extra,
    }  # type: ignore[union-attr]
    return Judgement.from_json(raw, 1)


# -- nDCG -----------------------------------------------------------------------------------------


def test_ndcg_binary_perfect_and_partial() -> None:
    judgement = j(["a", "b"])
    assert ndcg_at(["a", "b"], judgement) == pytest.approx(1.0)
    assert ndcg_at(["b", "a", "x"], judgement) == pytest.approx(1.0)
    # one of two found, at rank 2: DCG = 1/log2(3); ideal = 1 + 1/log2(3)
    assert ndcg_at(["x", "a"], judgement) == pytest.approx((1 / L3) / (1 + 1 / L3))
    assert ndcg_at(["x", "a"], judgement) == pytest.approx(0.386852807)
    assert ndcg_at([], judgement) == 0.0


def test_ndcg_graded_gains() -> None:
    judgement = j({"a": 2, "b": 1})
    # b at rank 2, a at rank 3: DCG = 1/log2(3) + 2/2 ; ideal = 2/1 + 1/log2(3)
    expected = (1 / L3 + 2 / L4) / (2 + 1 / L3)
    assert ndcg_at(["x", "b", "a"], judgement) == pytest.approx(expected)
    assert ndcg_at(["x", "b", "a"], judgement) == pytest.approx(0.619906233)
    # the higher grade first is ideal; the lower grade first is not
    assert ndcg_at(["a", "b"], judgement) == pytest.approx(1.0)
    assert ndcg_at(["b", "a"], judgement) == pytest.approx((1 + 2 / L3) / (2 + 1 / L3))


def test_ndcg_cuts_at_k() -> None:
    judgement = j(["a"])
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    assert ndcg_at(ranked, judgement, 10) == 0.0
    assert ndcg_at(ranked, judgement, 11) == pytest.approx(1 / math.log2(12))
    # ideal DCG only has as many places as k
    two = j(["a", "b"])
    assert ndcg_at(["a"], two, 1) == pytest.approx(1.0)


def test_duplicate_results_count_once() -> None:
    judgement = j(["a", "b"])
    assert ndcg_at(["a", "a", "b"], judgement) == pytest.approx((1 + 1 / L4) / (1 + 1 / L3))


# -- any-of groups ---------------------------------------------------------------------------------


@pytest.mark.parametrize("member", ["b", "c"])
def test_group_satisfied_by_either_member(member: str) -> None:
    judgement = j(["a"], [["b", "c"]])
    assert ndcg_at([member, "a"], judgement) == pytest.approx(1.0)
    assert recall_at([member], judgement, 5) == pytest.approx(0.5)
    assert ndcg_at(["x", member], judgement) == pytest.approx((1 / L3) / (1 + 1 / L3))
    assert reciprocal_rank(["x", member], judgement) == pytest.approx(0.5)


def test_group_counts_once_even_when_two_members_appear() -> None:
    judgement = j(["a"], [["b", "c"]])
    # b and c both shown: still one need met, the second member adds nothing
    assert recall_at(["b", "c"], judgement, 10) == pytest.approx(0.5)
    assert ndcg_at(["b", "c"], judgement) == pytest.approx(1 / (1 + 1 / L3))


def test_relevant_id_inside_a_group_is_one_requirement() -> None:
    # as in the LiveMCPBench arXiv queries: relevant [a] and group [a, b] is one need, not two
    judgement = j(["a", "z"], [["a", "b"]])
    assert len(judgement.requirements) == 2
    assert recall_at(["b"], judgement, 10) == pytest.approx(0.5)  # b alone meets the arXiv need
    assert recall_at(["a", "b"], judgement, 10) == pytest.approx(0.5)
    assert ndcg_at(["a", "b", "z"], judgement) == pytest.approx((1 + 1 / L4) / (1 + 1 / L3))
    single = j(["a"], [["a", "b"]])
    assert ndcg_at(["b"], single) == pytest.approx(1.0)
    assert recall_at(["b"], single, 5) == pytest.approx(1.0)


def test_group_takes_its_members_grade() -> None:
    judgement = j({"a": 2, "z": 1}, [["a", "b"]])
    # group {a,b} has gain 2, z gain 1. b at rank 2, z at rank 1: DCG = 1 + 2/log2(3); ideal = 2 + 1/log2(3)
    assert ndcg_at(["z", "b"], judgement) == pytest.approx((1 + 2 / L3) / (2 + 1 / L3))


def test_one_result_in_two_groups_meets_both_but_never_beats_perfect() -> None:
    judgement = j([], [["a", "b"], ["a", "c"]])
    assert recall_at(["a"], judgement, 10) == pytest.approx(1.0)
    assert ndcg_at(["a"], judgement) == pytest.approx(1.0)  # 2 / (1 + 1/log2 3), capped
    three = j(["z"], [["a", "b"], ["a", "c"]])
    # a at rank 1 meets both groups: DCG = 2; ideal = 1 + 1/log2(3) + 1/2
    assert ndcg_at(["a"], three) == pytest.approx(2 / (1 + 1 / L3 + 1 / L4))
    assert recall_at(["a"], three, 5) == pytest.approx(2 / 3)


# -- recall and reciprocal rank --------------------------------------------------------------------


def test_recall_at_5_and_10() -> None:
    judgement = j(["a", "b", "c"])
    ranked = ["x1", "x2", "a", "x4", "x5", "x6", "b", "x8", "x9", "x10", "c"]
    assert recall_at(ranked, judgement, 5) == pytest.approx(1 / 3)
    assert recall_at(ranked, judgement, 10) == pytest.approx(2 / 3)


def test_reciprocal_rank_of_first_hit() -> None:
    judgement = j(["a", "b"])
    assert reciprocal_rank(["x", "x2", "b", "a"], judgement) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a"], judgement) == pytest.approx(1.0)
    assert reciprocal_rank(["x"], judgement) == 0.0


def test_identifiers_are_normalised_like_the_registry() -> None:
    judgement = j(["urn:air:example.org:a"])
    assert recall_at(["urn:air:example.org:a"], judgement, 5) == pytest.approx(1.0)


# -- loading ---------------------------------------------------------------------------------------


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_queries_reads_all_forms(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            json.dumps({"id": "1", "query": "a", "relevant": ["x"], "category": "Office"}),
            "",
            json.dumps({"id": "2", "query": "b", "relevant": {"x": 2, "y": 1}, "relevant_any_of": [["p", "q"]], "kind": "multi"}),
            json.dumps({"id": "3", "query": "c", "relevant": []}),
        ],
    )
    qs = load_queries(path)
    assert [q.id for q in qs] == ["1", "2", "3"]
    assert qs[0].category == "Office" and qs[1].kind == "multi"
    assert dict(qs[1].relevant) == {"x": 2.0, "y": 1.0}
    assert qs[1].relevant_any_of == (("p", "q"),)
    assert qs[2].no_answer and not qs[0].no_answer


def test_missing_query_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps({"id": "1", "query": "a", "relevant": []}), json.dumps({"id": "2", "relevant": ["x"]})])
    with pytest.raises(ValueError, match=r"line 2: missing 'query'"):
        load_queries(path)


def test_bad_relevant_type_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps({"id": "1", "query": "a"}), "", json.dumps({"id": "3", "query": "b", "relevant": "urn:air:x"})])
    with pytest.raises(ValueError, match=r"line 3: 'relevant' must be a list"):
        load_queries(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"line 1: not valid JSON"),
        ('{"query": "a", "relevant": {"x": "high"}}', r"line 1: grade of 'x'"),
        ('{"query": "a", "relevant_any_of": [[]]}', r"line 1: 'relevant_any_of'\[0\]"),
        ('{"query": "   "}', r"line 1: 'query' must be a non-empty string"),
        ('["a"]', r"line 1: expected a JSON object"),
    ],
)
def test_other_malformed_lines(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_queries(write(tmp_path, [line]))


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps({"id": "1", "query": "a"}), json.dumps({"id": "1", "query": "b"})])
    with pytest.raises(ValueError, match=r"line 2: id '1' already used on line 1"):
        load_queries(path)


# -- evaluate --------------------------------------------------------------------------------------


def fake_timer(latencies_ms: list[float]) -> Iterator[float]:
    """Two readings per query, `latency` apart, starting far apart so nothing leaks between queries."""
    for i, ms in enumerate(latencies_ms):
        yield 100.0 * i
        yield 100.0 * i + ms / 1000.0


def test_evaluate_aggregates_overall_by_category_and_by_kind() -> None:
    judgements = [
        Judgement.from_json({"id": "q1", "query": "one", "relevant": ["a"], "category": "Office", "kind": "single"}, 1),
        Judgement.from_json({"id": "q2", "query": "two", "relevant": ["a", "b"], "category": "Office", "kind": "multi"}, 2),
        Judgement.from_json({"id": "q3", "query": "three", "relevant": [], "category": "Travel", "kind": "single"}, 3),
        Judgement.from_json({"id": "q4", "query": "four", "relevant": [], "category": "Travel"}, 4),
    ]
    answers = {
        "one": ["x", "a"],  # nDCG 1/log2(3), R@5 1, RR 1/2
        "two": ["b"] + [f"x{i}" for i in range(6)] + ["a"],  # a at rank 8: R@5 1/2, R@10 1, RR 1
        "three": ["z"],  # no-answer query with a result: a false positive
        "four": [],  # no-answer query, correctly empty
    }
    calls: list[str] = []

    def search(text: str) -> list[str]:
        calls.append(text)
        return answers[text]

    ticks = fake_timer([10.0, 30.0, 20.0, 40.0])
    report = evaluate(search, judgements, timer=lambda: next(ticks))
    assert calls == ["one", "two", "three", "four"]

    ndcg1 = 1 / L3
    ndcg2 = (1 + 1 / math.log2(9)) / (1 + 1 / L3)
    o = report.overall
    assert (o.queries, o.answerable, o.no_answer, o.no_answer_fp) == (4, 2, 2, 1)
    assert o.ndcg10 == pytest.approx((ndcg1 + ndcg2) / 2)
    assert o.recall5 == pytest.approx((1 + 0.5) / 2)
    assert o.recall10 == pytest.approx(1.0)
    assert o.mrr == pytest.approx((0.5 + 1) / 2)
    assert o.fp_rate == pytest.approx(0.5)
    # latencies 10, 30, 20, 40 ms: linear-interpolated percentiles
    assert o.p50_ms == pytest.approx(25.0)
    assert o.p95_ms == pytest.approx(38.5)

    office, travel = report.by_category["Office"], report.by_category["Travel"]
    assert office.queries == 2 and office.ndcg10 == pytest.approx((ndcg1 + ndcg2) / 2) and office.fp_rate is None
    assert travel.queries == 2 and travel.answerable == 0 and travel.ndcg10 is None and travel.fp_rate == pytest.approx(0.5)
    assert travel.p50_ms == pytest.approx(30.0)

    assert set(report.by_kind) == {"single", "multi"}  # q4 has no kind and is left out of the split
    single = report.by_kind["single"]
    assert (single.queries, single.no_answer_fp) == (2, 1)
    assert single.mrr == pytest.approx(0.5)
    assert report.by_kind["multi"].recall5 == pytest.approx(0.5)

    data = report.to_dict(per_query=True)
    assert data["overall"]["ndcg@10"] == pytest.approx((ndcg1 + ndcg2) / 2)
    assert data["overall"]["noAnswer"] == {"queries": 2, "returnedResults": 1, "falsePositiveRate": 0.5}
    assert data["queries"][2]["results"] == ["z"] and data["queries"][2]["ndcg@10"] is None
    assert json.loads(json.dumps(data)) == data
    assert "queries" not in report.to_dict()

    table = format_table(report)
    assert "category=Office" in table and "kind=multi" in table and "1/2 (0.50)" in table


def test_evaluate_judges_only_the_top_k() -> None:
    judgement = Judgement.from_json({"id": "q", "query": "q", "relevant": ["a"]}, 1)
    report = evaluate(lambda _: [f"x{i}" for i in range(10)] + ["a"], [judgement])
    assert report.overall.recall10 == 0.0 and report.overall.mrr == 0.0
    assert len(report.results[0].ranked) == 10


def test_low_confidence_answers_are_neither_false_positives_nor_empty() -> None:
    """A no-answer query given only results marked low-confidence is not a false positive; an answerable query
    given them is not an empty answer but is counted apart, and an answerable query given nothing is empty."""
    judgements = [
        Judgement.from_json({"id": "n1", "query": "none-doubted", "relevant": []}, 1),
        Judgement.from_json({"id": "n2", "query": "none-sure", "relevant": []}, 2),
        Judgement.from_json({"id": "a1", "query": "some-doubted", "relevant": ["a"]}, 3),
        Judgement.from_json({"id": "a2", "query": "some-empty", "relevant": ["a"]}, 4),
        Judgement.from_json({"id": "a3", "query": "some-sure", "relevant": ["a"]}, 5),
    ]
    answers = {
        "none-doubted": Answer(["x"], confident=False),
        "none-sure": Answer(["x"]),
        "some-doubted": Answer(["a"], confident=False),
        "some-empty": Answer([], confident=True),
        "some-sure": ["a"],
    }
    o = evaluate(lambda text: answers[text], judgements).overall
    assert (o.no_answer, o.no_answer_fp, o.fp_rate) == (2, 1, 0.5)
    assert (o.answerable, o.empty, o.doubted) == (3, 1, 1)
    assert o.empty_rate == pytest.approx(1 / 3)
    assert o.recall5 == pytest.approx(2 / 3)  # a low-confidence answer still counts for quality
    assert o.to_dict()["answered"] == {
        "empty": 1,
        "emptyRate": pytest.approx(1 / 3),
        "lowConfidence": 1,
        "rightInTop3": 2,
        "rightInTop3LowConfidence": 1,
        "rightInTop3LowConfidenceRate": 0.5,
    }


def test_right_answers_marked_low_confidence_count_only_with_a_right_entry_in_the_first_three() -> None:
    """#46's measure: of the answerable queries whose first three hold a relevant entry, the share marked
    low-confidence. A doubted page whose right entry is fourth, or that has none, is not among them."""
    judgements = [Judgement.from_json({"id": f"q{i}", "query": f"q{i}", "relevant": ["a"]}, i) for i in range(4)]
    answers = {
        "q0": Answer(["x", "y", "a"], confident=False),  # right in the first three, doubted
        "q1": Answer(["x", "y", "z", "a"], confident=False),  # right but fourth
        "q2": Answer(["x"], confident=False),  # nothing right
        "q3": Answer(["a"]),  # right and vouched for
    }
    report = evaluate(lambda text: answers[text], judgements)
    o = report.overall
    assert (o.doubted, o.found3, o.doubted_right, o.doubted_right_rate) == (3, 2, 1, 0.5)
    assert [r.found3 for r in report.results] == [True, False, False, True]
    header, _, overall = format_table(report).splitlines()[:3]
    assert "right doubted" in header and overall.split()[8] == "1/2"
