"""Reading an upstream registry's search answer: leniently, and never more of it than a page.

What ard-mcp serves is strict (`ArdSearchResponse` allows exactly the fields ard.openapi.yaml names); what it
reads from another registry is not held to that: a peer that adds `query` and `totalResults` beside
`results` still answered the search, so the extra top-level fields are ignored with a note naming them,
where a strict read once dropped the whole answer ("2 validation errors") without a word in the log.

The answer is read only as far as it is used. A registry asked for 10 results that sends 10,000 gets the
first 10 decoded and the rest left unread: the body is scanned token by token and decoding stops at the
page size, where `json.loads` would have built every one of them (the byte cap still bounds the whole
answer). A body that is not JSON by its content type (an HTML error page behind a proxy, say) is refused
before any of it is read. The rows come back raw: `screening` decides what of them this registry serves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ard_mcp.formats.media_types import is_json

KNOWN_FIELDS = ("results", "referrals", "pageToken")  # the ARD SearchResponse's top-level fields
_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


class NotAnAnswer(ValueError):
    """What came back cannot be read as a search answer at all (the message says why)."""


@dataclass
class Answer:
    """The first `limit` raw result rows of an answer, and notes on what was ignored or left unread."""

    rows: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_answer(data: bytes, content_type: str | None, limit: int) -> Answer:
    """The rows of an ARD search answer, at most `limit` of them decoded; `NotAnAnswer` if it is not one."""
    if not is_json(content_type):
        raise NotAnAnswer(f"answered {content_type or 'no content type'}, not JSON")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotAnAnswer("answered bytes that are not UTF-8") from None
    try:
        return _Reader(text, limit).answer()
    except IndexError:
        raise NotAnAnswer("not an ARD search response (it ends before its object does)") from None
    except ValueError as exc:  # json's own errors are ValueErrors too
        raise NotAnAnswer(f"not an ARD search response ({exc})") from None


class _Reader:
    """A scan over one JSON object that decodes what it needs and stops where more would not be used."""

    def __init__(self, text: str, limit: int) -> None:
        self.text, self.limit, self.pos = text, limit, 0

    def _next(self) -> str:
        while self.text[self.pos] in _SPACE:
            self.pos += 1
        return self.text[self.pos]

    def _expect(self, char: str) -> None:
        if self._next() != char:
            raise ValueError(f"expected {char!r} at character {self.pos}")
        self.pos += 1

    def _value(self) -> Any:
        self._next()
        value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        return value

    def answer(self) -> Answer:
        found = Answer()
        unknown: list[str] = []
        seen_results = False
        self._expect("{")
        if self._next() == "}":
            raise ValueError("no results field")
        while True:
            key = self._value()
            if not isinstance(key, str):
                raise ValueError(f"expected a field name at character {self.pos}")
            self._expect(":")
            if key == "results":
                seen_results = True
                if not self._results(found):
                    break  # over the page: the rest is left unread
            else:
                self._value()  # `referrals` and `pageToken` are not used (federation answers the first page)
                if key not in KNOWN_FIELDS:
                    unknown.append(key)
            if self._next() == "}":
                break
            self._expect(",")
        if not seen_results:
            raise ValueError("no results field")
        if unknown:
            found.notes.append(f"ignored top-level fields an ARD search response does not have: {', '.join(unknown[:10])}")
        return found

    def _results(self, found: Answer) -> bool:
        """Decode the results array's first `limit` rows; False when it holds more (they are not read)."""
        self._expect("[")
        if self._next() == "]":
            self.pos += 1
            return True
        while True:
            if len(found.rows) == self.limit:
                found.notes.append(f"sent more than the {self.limit} results asked for; only the first {self.limit} were read")
                return False
            found.rows.append(self._value())
            if self._next() == "]":
                self.pos += 1
                return True
            self._expect(",")
