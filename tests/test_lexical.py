"""The lexical signal's terms, made the same way for entries and queries (no model, no Chroma)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ard_mcp.formats.catalog import parse_entry
from ard_mcp.index.example_texts import extract_examples
from ard_mcp.index.lexical import (
    MAX_QUERY_TERMS,
    Vocabulary,
    coverage,
    fts_document,
    idf,
    match_expression,
    named_keywords,
    query_terms,
    stem,
    terms,
    words,
)
from ard_mcp.index.records import AgentTerms, TermText


def test_identifiers_split_the_way_people_write_them_and_stay_whole_too() -> None:
    assert terms("get_weather") == ["get", "weath", "get", "weath"]
    assert {"geo", "cod", "geocod"} <= set(terms("GeoCoder"))
    assert terms("markdownToPdf")[:3] == ["markdown", "to", "pdf"]


@pytest.mark.parametrize(
    ("word", "base"), [("converts", "convert"), ("parties", "party"), ("mapping", "mapp"), ("translations", "transl"), ("is", "is")]
)
def test_the_stemmer_is_light_and_predictable(word: str, base: str) -> None:
    assert stem(word) == base


def test_query_terms_drop_stop_words_numbers_and_repeats_and_cut_cjk_into_bigrams() -> None:
    assert query_terms("Please find me the weather, the WEATHER forecast for 2026") == ["weath", "forecast"]
    assert query_terms("東京都の天気") == ["東京", "京都", "都の", "の天", "天気"]
    assert len(query_terms(" ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(200)))) == MAX_QUERY_TERMS


def test_words_are_counted_as_written_and_cjk_runs_as_the_bigrams_the_index_matches() -> None:
    """What a query's length (a confidence feature) counts: every word once per occurrence, stop words too."""
    assert words("Find me the weather, the WEATHER forecast for 2026!") == [
        "Find",
        "me",
        "the",
        "weather",
        "the",
        "WEATHER",
        "forecast",
        "for",
        "2026",
    ]
    assert words("東京都の天気 API") == ["東京", "京都", "都の", "の天", "天気", "API"]
    assert words("snake_case and kebab-case") == ["snake", "case", "and", "kebab", "case"]
    assert words("  ") == []
    assert terms("東京都の天気 apis") == [*words("東京都の天気"), "api"] * 2  # the humanized copy, then the text; stems


def test_match_expression_quotes_every_term_so_none_is_read_as_an_operator() -> None:
    assert match_expression(["near", "not", "or"]) == '"near" OR "not" OR "or"'
    assert match_expression([]) is None


def test_coverage_is_the_idf_weighted_share_of_query_terms_present() -> None:
    weights = {"rare": 3.0, "common": 1.0}
    assert coverage(["rare", "common"], {"rare"}, weights) == pytest.approx(0.75)
    assert coverage(["rare", "common"], set(), weights) == 0.0
    assert coverage([], {"rare"}, weights) == 0.0
    assert idf(1, 100) > idf(50, 100) > 0
    assert idf(0, 10) == pytest.approx(math.log(1 + 10.5 / 0.5))
    assert named_keywords([1]) == pytest.approx(1 / 3) and named_keywords([1, 2, 3, 4]) == 1.0


def test_an_entry_is_indexed_under_its_name_tags_description_and_examples() -> None:
    entry = parse_entry(
        {
            "identifier": "urn:air:example.com:tools:pdf-forge",
            "displayName": "PDF Forge",
            "type": "application/mcp-server-card+json",
            "description": "Converts documents.",
            "tags": ["documents", "Office Suite"],
            "data": {"tools": [{"name": "merge_pdfs", "description": "Combine PDF files."}]},
        }
    )
    document = fts_document(entry, extract_examples(entry))
    assert set(document.name.split()) == {"pdf", "forge"}  # the display name and the identifier's last part
    assert document.keywords == "document document | office suite office suite"  # one |-separated group per tag
    assert document.description == "convert document convert document"
    assert {"merge", "combine", "fil"} <= set(document.examples.split())
    assert "|" not in document.vocabulary()
    assert [group._text.split() for group in document.terms().keywords] == [["document"] * 2, ["office", "suite"] * 2]  # noqa: SLF001


@given(st.lists(st.text(alphabet="ab é\t.", max_size=6), max_size=12))
def test_every_term_of_a_term_text_is_what_the_regex_finds(parts: list[str]) -> None:
    """`TermText.every` (what `Vocabulary.of` asks) splits at the spaces: the same set as a finder of every term
    finds, doubled or stray spaces and other whitespace included."""
    text = TermText(" ".join(parts))
    every_term = re.compile(" ([^ ]+)(?= )")
    assert text.every() == text.present(every_term) == set(every_term.findall(text._text))  # noqa: SLF001


_TERM = st.sampled_from(["merg", "pdf", "file", "invoic", "weather", "x", "convert", "|"])


@given(st.lists(_TERM, max_size=12), st.lists(st.lists(_TERM, max_size=4), max_size=6), st.lists(_TERM, max_size=8))
def test_a_vocabulary_of_the_querys_terms_answers_as_the_whole_one(
    vocabulary: list[str], groups: list[list[str]], query: list[str]
) -> None:
    """What ranking asks of a candidate's vocabulary (which query terms it has, which keyword groups a query names)
    is answered the same by the query's terms alone (`Vocabulary.asked`, made where the whole one is not kept, from
    the texts an `AgentTerms` is made of) as by the whole vocabulary."""
    texts = (" ".join(vocabulary), " | ".join(" ".join(g) for g in groups))
    whole, [only] = Vocabulary.of(AgentTerms(*texts)), Vocabulary.asked(query, [texts])
    assert {t for t in query if t in whole.terms} == set(only.terms)
    assert whole.named(query) == only.named(query)
    assert len(only.keywords) == len(whole.keywords)
