"""The evidence this registry shows for another registry's result: its own findings, the upstream's numbers.

An upstream's evidence is its word about its own ranking. Its numbers (score components) and its confidence
are kept as what that registry said; every text in it (matched examples, words, tags) reaches a host model
like entry text, so it is cleaned and screened the same way (`untrusted`); what only this registry can say
is this registry's: the trust finding, the warnings, when it received the entry. Its `sources` are kept as
provenance (which registries that upstream merged), never as `source`: that is always the upstream asked.
A result that came without readable evidence is never a confident one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from ard_mcp.federation.hops import MAX_VIA
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.identifiers import is_identifier
from ard_mcp.formats.messages import Evidence, Freshness, MatchedExample, ScoreComponents, TrustFinding
from ard_mcp.formats.untrusted import Finding, strip_invisible, text_findings

MAX_WORD = 64  # a matched word longer than this is not one: it is text


def _clean(text: str) -> str:
    return strip_invisible(text)[0]


def _word(value: Any) -> str | None:
    """A matched word as one word (letters and digits, short), invisible characters removed; None for anything
    else: a "word" such as `<|im_start|>` is text aimed at a model, not a word of the query."""
    if not isinstance(value, str):
        return None
    word = _clean(value).strip()
    return word if 0 < len(word) <= MAX_WORD and all(c.isalnum() or c in "-_.'" for c in word) else None


def _source(value: Any) -> str | None:
    """A registry named in `sources`: an http(s) URL or an ARD identifier, nothing else."""
    if not isinstance(value, str) or len(value) > 2048 or _clean(value) != value:
        return None
    if is_identifier(value):
        return value
    return value if urlsplit(value).scheme in ("http", "https") and urlsplit(value).hostname else None


def upstream_evidence(raw: Any) -> Evidence | None:
    """The upstream's evidence if it reads as ARD evidence, else None (and the result counts as unexplained)."""
    if not isinstance(raw, Mapping):
        return None
    try:
        return Evidence.model_validate(raw)
    except ValidationError:
        return None


def screened_examples(theirs: Evidence | None) -> tuple[list[MatchedExample], list[Finding]]:
    """The upstream's matched examples with invisible characters removed, and what of their text is aimed at a model."""
    examples: list[MatchedExample] = []
    findings: list[Finding] = []
    for i, example in enumerate(theirs.matchedExamples if theirs else []):
        label, text = _clean(example.label), _clean(example.text)
        findings += text_findings(f"evidence.matchedExamples[{i}].label", label)
        findings += text_findings(f"evidence.matchedExamples[{i}].text", text)
        examples.append(example.model_copy(update={"label": label, "text": text}))
    return examples, findings


def remote_evidence(
    entry: CatalogEntry,
    theirs: Evidence | None,
    examples: list[MatchedExample],
    findings: Sequence[Finding],
    trust: TrustFinding,
    received: str,
) -> Evidence:
    """This registry's evidence for a remote result: `examples` already screened, `findings` over the entry's
    text and the evidence's, `trust` this registry's check, `received` when the answer came."""
    keywords = {k.casefold() for k in [*(entry.tags or []), *(entry.capabilities or [])]}
    tags = [t for t in (_clean(t) for t in (theirs.matchedTags if theirs else [])) if t.casefold() in keywords]
    words = [w for w in (_word(w) for w in (theirs.matchedWords if theirs else [])) if w]
    sources = [s for s in (_source(s) for s in (theirs.sources or [] if theirs else [])) if s][:MAX_VIA]
    zero = ScoreComponents.model_validate(dict.fromkeys(ScoreComponents.model_fields, 0.0))
    return Evidence(
        matchedExamples=examples,
        matchedTags=tags,
        matchedWords=words,
        scoreComponents=theirs.scoreComponents if theirs else zero,
        freshness=Freshness(metadataUpdatedAt=entry.updatedAt, indexedAt=received),
        confidence="high" if theirs is not None and theirs.confidence == "high" and not findings else "low",
        trust=trust,
        sources=list(dict.fromkeys(sources)) or None,
        warnings=[f.message() for f in findings] or None,
    )
