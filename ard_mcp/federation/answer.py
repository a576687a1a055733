"""Reading an upstream registry's search answer: leniently, and never more of it than a page.

What ard-mcp serves is strict (`ArdSearchResponse` allows exactly the fields ard.openapi.yaml names); what it
reads from another registry is not held to that: a peer that adds `query` and `totalResults` beside
`results` still answered the search, so the extra top-level fields are ignored with a note naming them,
where a strict read once dropped the whole answer ("2 validation errors") without a word in the log.

The answer is read only as far as it is used. A registry asked for 10 results that sends 10,000 gets the
first 10 decoded and the rest left unread: the body is scanned token by token and decoding stops at the
page size, where `json.loads` would have built every one of them (the byte cap still bounds the whole
answer). A body that is not JSON by its content type (an HTML error page behind a proxy, say) is refused
before any of it is read. Every value is read by the one bounded reader (`bounded_json`), so a row nested
10,000 deep or holding an unpaired surrogate is one row left out with a note, never a failed search. The
rows come back raw: `screening` decides what of them this registry serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ard_mcp.formats.bounded_json import JsonText, UnreadableJson
from ard_mcp.formats.media_types import is_json

KNOWN_FIELDS = ("results", "referrals", "pageToken")  # the ARD SearchResponse's top-level fields


class NotAnAnswer(ValueError):
    """What came back cannot be read as a search answer at all (the message says why)."""


@dataclass
class Answer:
    """The first `limit` raw result rows of an answer, and notes on what was ignored or left unread."""

    rows: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_answer(data: bytes, content_type: str | None, limit: int, max_bytes: int) -> Answer:
    """The rows of an ARD search answer, at most `limit` of them decoded; `NotAnAnswer` if it is not one."""
    if not is_json(content_type):
        raise NotAnAnswer(f"answered {content_type or 'no content type'}, not JSON")
    try:
        return _answer(JsonText(data, max_bytes=max_bytes), limit)
    except UnreadableJson as exc:
        raise NotAnAnswer(f"not an ARD search response ({exc})") from None


def _answer(text: JsonText, limit: int) -> Answer:
    """Read one JSON object's fields, decoding `results` up to the page and every other field's value
    (`referrals` and `pageToken` are not used: federation answers the first page)."""
    found = Answer()
    unknown: list[str] = []
    seen_results = False
    if text.peek() != "{":
        raise NotAnAnswer("not an ARD search response (not a JSON object)")
    for key in text.members(1):
        if key == "results":
            seen_results = True
            _rows(text, found, limit)
            if text.left_unread:
                break  # over the page: the rest is left unread
        else:
            text.value(2)
            if key not in KNOWN_FIELDS:
                unknown.append(key)
    if not seen_results:
        raise NotAnAnswer("not an ARD search response (no results field)")
    if unknown:
        found.notes.append(f"ignored top-level fields an ARD search response does not have: {', '.join(unknown[:10])}")
    return found


def _rows(text: JsonText, found: Answer, limit: int) -> None:
    """The results array's first `limit` rows; a row the reader refuses (nested too deeply, an unpaired
    surrogate) is left out with a note, the others kept."""
    if text.peek() != "[":
        raise NotAnAnswer("not an ARD search response (results is not an array)")
    for i, row in enumerate(text.items(2, limit)):
        if isinstance(row, UnreadableJson):
            found.notes.append(f"left out results[{i}]: {row}")
        else:
            found.rows.append(row)
    if text.left_unread:
        found.notes.append(f"sent more than the {limit} results asked for; only the first {limit} were read")
