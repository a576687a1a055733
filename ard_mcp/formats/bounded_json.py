"""Reading JSON that comes from outside: one reader, with bounds, for every document the registry is sent,
fetches or reads back.

Python's `json` reads whatever it is given, and some of what it reads cannot be used: 10,000 levels of
nesting raise `RecursionError`, a 10,000-digit integer raises `ValueError` (CPython converts at most 4,300
digits), `NaN` and `1e999` become floats that no JSON can carry, and `"\\ud800"` becomes a string with an
unpaired surrogate that fails only later, when something encodes it (`UnicodeEncodeError`). Each of these
once escaped a crawl, an ingest or a request as a 500 or a traceback, failing the good documents of the
same crawl with the bad one (issue #44). Here each is an `UnreadableJson` saying why, before the value
reaches anything else:

- size: at most the `max_bytes` the caller passes (the cap it already puts on what it reads);
- text: UTF-8 (a byte-order mark is allowed), strings without unpaired surrogates;
- nesting: at most `MAX_DEPTH` levels of objects and arrays, counted from the document;
- numbers: finite, and integers of at most `MAX_INT_DIGITS` digits.

Crawled documents, ingested files, peers' search answers, agents' answers, JWS headers, request bodies
and the registry's own stored rows are read here. A value that arrives already decoded (an MCP tool's
arguments, which the SDK parsed and which may hold `nan`) is held to the same rules by `check_value`.

A manifest is read entry by entry (`read_json(..., each_of="entries")`): an entry that breaks a bound is
left in its place as the `UnreadableJson` saying why and reading goes on after it, so one hostile entry is
one rejected entry. Text that is not JSON at all (`NotJson`) cannot be read past and fails the document.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 64  # an entry may nest 32 levels (`limits.MAX_DEPTH`) and sits inside a manifest, or a nested catalog's
MAX_INT_DIGITS = 100  # far past any integer a catalog holds; 2**64 has 20 digits
_INT_LIMIT = 10**MAX_INT_DIGITS
_CONTAINERS = (dict, list)  # what JSON decodes objects and arrays to (a tuple: isinstance is fastest with one)
_SPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")  # any left in a decoded str is unpaired: json joins the pairs
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # text without one decodes to no surrogate at all
# what shapes a value, for stepping over one without decoding it: strings whole (their brackets are text), brackets, commas
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')

_Trail = tuple[str | int, "_Trail"] | None  # where a value sits: its key or index, then its parent's trail


class UnreadableJson(ValueError):
    """A document, or one value in it, that breaks a rule of this reader. `reason` says which; `path` is
    where inside the document (`.data.tags[2]`), empty when it is the whole document or not known."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{path.lstrip('.')}: {reason}" if path else reason)
        self.reason = reason
        self.path = path

    def at(self, where: str) -> str:
        """The message placed under the field `where` names (`entry` gives `entry.data.x: ...`); a document
        named by a URL or a file is put in front instead: `f"{url}: {exc}"`."""
        return f"{where}{self.path}: {self.reason}"

    def within(self, key: str) -> UnreadableJson:
        """The same refusal, found in the member `key` of an object."""
        return type(self)(self.reason, f".{key}{self.path}")


class NotJson(UnreadableJson):
    """Text that is not JSON (or not UTF-8, or over the size): nothing after the fault can be read."""


def _not_finite(shown: str) -> str:
    """The one message for a number JSON cannot carry, in text (`NaN`, `1e999`) or decoded (`nan`)."""
    return f"{shown} is not JSON (numbers must be finite)"


def _too_long() -> str:
    return f"an integer of more than {MAX_INT_DIGITS} digits, which is not read"


def _too_deep(max_depth: int) -> str:
    return f"nested deeper than {max_depth} levels of objects and arrays"


def _refused_constant(name: str) -> Any:
    raise UnreadableJson(_not_finite(name))


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UnreadableJson(_not_finite(f"number {text if len(text) <= 32 else text[:32] + '...'}"))
    return value


def _bounded_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:  # before converting: 10,000 digits cost quadratic time
        raise UnreadableJson(_too_long())
    return int(text)


_DECODER = json.JSONDecoder(parse_float=_finite, parse_int=_bounded_int, parse_constant=_refused_constant)


def _path(trail: _Trail) -> str:
    parts: list[str] = []
    while trail is not None:
        key, trail = trail
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(parts))


def _float_name(value: float) -> str:
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def check_value(value: Any, *, max_depth: int = MAX_DEPTH, depth: int = 1, scalars: bool = True) -> None:
    """Refuse a decoded value this reader would not have produced: objects and arrays nested deeper than
    `max_depth` (`depth` is the value's own level) and, with `scalars`, a number that is not finite, an
    integer over `MAX_INT_DIGITS` digits, or a string or key with an unpaired surrogate. Walks level by
    level without recursion, so any depth is safe to check; without `scalars` only containers are visited
    (what text decoded here needs, its numbers having been checked as they were read)."""
    if scalars:
        _check_scalar(value, None, None)
    level: list[tuple[Any, _Trail]] = [(value, None)] if isinstance(value, _CONTAINERS) else []
    while level:
        if depth > max_depth:
            raise UnreadableJson(_too_deep(max_depth))
        below: list[tuple[Any, _Trail]] = []
        for item, trail in level:
            for key, child in item.items() if isinstance(item, dict) else enumerate(item):
                if isinstance(child, _CONTAINERS):
                    below.append((child, (key, trail)))
                elif scalars:
                    _check_scalar(child, key, trail)
                unpaired = _SURROGATE.search(key) if scalars and isinstance(key, str) else None
                if unpaired:
                    raise UnreadableJson(f"a key {_unpaired(unpaired[0])}", _path(trail))
        level = below
        depth += 1


def _check_scalar(value: Any, key: str | int | None, trail: _Trail) -> None:
    """A string, number or literal: its own rules (`key` is where it sits in the container `trail` names)."""
    where = (key, trail) if key is not None else trail
    if isinstance(value, str):
        unpaired = _SURROGATE.search(value)
        if unpaired:
            raise UnreadableJson(f"a string {_unpaired(unpaired[0])}", _path(where))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise UnreadableJson(_not_finite(_float_name(value)), _path(where))
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT:
        raise UnreadableJson(_too_long(), _path(where))


def _unpaired(surrogate: str) -> str:
    return f"holds an unpaired surrogate (\\u{ord(surrogate):04x}), which is not Unicode"


class JsonText:
    """One document's text, read value by value: for a reader that needs less than all of it (a peer's
    answer, read up to a page) or each part on its own (a manifest's entries). `UnreadableJson` for what
    breaks a bound, `NotJson` where the text stops being JSON."""

    def __init__(self, data: bytes, *, max_bytes: int) -> None:
        if len(data) > max_bytes:
            raise NotJson(f"larger than {max_bytes} bytes")
        try:
            self.text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise NotJson(f"not valid JSON: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
        self.pos = 0
        self.left_unread = False

    def _place(self) -> str:
        line = self.text.count("\n", 0, self.pos) + 1
        return f"line {line}, column {self.pos - self.text.rfind(chr(10), 0, self.pos)}"

    def peek(self) -> str:
        """The next character that is not whitespace; the position moves to it."""
        match = _SPACE.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos
        if self.pos >= len(self.text):
            raise NotJson("not valid JSON: it ends before its value does")
        return self.text[self.pos]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise NotJson(f"not valid JSON: expected {char!r} at {self._place()}")
        self.pos += 1

    def value(self, depth: int = 1) -> Any:
        """The value at the position, decoded and checked; `depth` is its level in the document. One that
        breaks a bound leaves the position where it starts (`skip` steps over it)."""
        self.peek()
        try:
            value, end = _DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise NotJson(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
        except RecursionError:
            raise UnreadableJson(_too_deep(MAX_DEPTH)) from None
        check_value(value, depth=depth, scalars=_SURROGATE_ESCAPE.search(self.text, self.pos, end) is not None)
        self.pos = end
        return value

    def skip(self) -> None:
        """Step over the value at the position without decoding it, so what follows can still be read."""
        depth = 0
        for match in _STRUCTURE.finditer(self.text, self.pos):
            token = match[0]
            if token in ("[", "{"):
                depth += 1
            elif token in ("]", "}") and depth > 1:
                depth -= 1
            elif token in ("]", "}") and depth == 1:  # the value's own object or array closes
                self.pos = match.end()
                return
            elif token in ("]", "}", ",") and not depth:  # a scalar ends where its container goes on or closes
                self.pos = match.start()
                return
        raise NotJson("not valid JSON: it ends before its value does")

    def members(self, depth: int) -> Iterator[str]:
        """The keys of the object at the position (at level `depth`); after each, the caller reads its value."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise NotJson(f"not valid JSON: expected a field name at {self._place()}")
            key = self.value(depth + 1)
            self.expect(":")
            yield key
            if self._closes("}"):
                return

    def items(self, depth: int, limit: int | None = None) -> Iterator[Any]:
        """The elements of the array at the position (at level `depth`), each read on its own: one that
        breaks a bound comes as the `UnreadableJson` saying why, and reading goes on after it. With `limit`,
        reading stops after that many; `left_unread` then says whether more followed (never decoded)."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        count = 0
        while True:
            if count == limit:
                self.left_unread = True
                return
            count += 1
            try:
                item: Any = self.value(depth + 1)
            except NotJson:
                raise
            except UnreadableJson as exc:
                self.skip()
                item = exc
            yield item
            if self._closes("]"):
                return

    def _closes(self, closing: str) -> bool:
        """Past the separator after a member: True at the container's end, False before another member."""
        char = self.peek()
        self.pos += 1
        if char == closing:
            return True
        if char != ",":
            self.pos -= 1
            raise NotJson(f"not valid JSON: expected ',' or {closing!r} at {self._place()}")
        return False

    def end(self) -> None:
        """Nothing but whitespace may follow the document."""
        match = _SPACE.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos
        if self.pos < len(self.text):
            raise NotJson(f"not valid JSON (extra data at {self._place()})")


def read_json(data: bytes, *, max_bytes: int, each_of: str | None = None) -> Any:
    """The document `data` holds, or `UnreadableJson` saying why it cannot be used. With `each_of`, the
    top-level object's array of that name is read element by element (`JsonText.items`): an element that
    breaks a bound is in the list as its `UnreadableJson`, the rest as they were."""
    text = JsonText(data, max_bytes=max_bytes)
    value: Any
    if each_of is not None and text.peek() == "{":
        value = {}
        for key in text.members(1):
            try:
                value[key] = list(text.items(2)) if key == each_of and text.peek() == "[" else text.value(2)
            except NotJson:
                raise
            except UnreadableJson as exc:
                raise exc.within(key) from None
    else:
        value = text.value()
    text.end()
    return value
