"""Invisible characters in the text of an entry, and the walk over the texts of an entry a model reads.

Publisher text reaches a host model (`untrusted` has the whole picture). Invisible characters carry text a
person reviewing a catalog cannot see but a model reads (Unicode tag characters spell ASCII invisibly,
"ASCII smuggling"; runs of variation selectors encode bytes after one emoji), make text render as
something else (bidirectional overrides, "Trojan Source"), or split a word so a filter misses it
(`ig\\u200bnore`). `strip_entry` removes them from every text a model reads; the lenient reader
(`leniency.read_entry`) applies it and reports one warning per entry. None was found in the 37,649 texts
of the 6,263 real entries of the benchmark catalogs, so the rule costs real catalogs nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# -- invisible characters ---------------------------------------------------------------------------------

_ZWJ = "\u200d"
_EMOJI_PRESENTATION = "\ufe0f"
#: Visible-width-zero letters and marks outside category Cf that have been used to hide or spoof text:
#: the combining grapheme joiner, the Hangul fillers (render blank), the Khmer inherent vowels and the
#: Mongolian free variation selectors.
_BLANK = frozenset("\u034f\u115f\u1160\u3164\uffa0\u17b4\u17b5\u180b\u180c\u180d\u180f")


def _emoji(char: str) -> bool:
    """Pictographs and symbols that emoji ZWJ sequences join (Extended_Pictographic, approximately)."""
    code = ord(char)
    return 0x1F000 <= code <= 0x1FAFF or 0x2600 <= code <= 0x27BF or 0x2300 <= code <= 0x23FF or 0x2B00 <= code <= 0x2BFF


def _han(char: str) -> bool:
    code = ord(char)
    return 0x3400 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x3FFFF


def invisible_kind(text: str, i: int) -> str | None:
    """What kind of invisible character `text[i]` is, or None when it stays.

    Removed: Unicode tag characters (U+E0000-U+E007F; emoji subdivision flags such as Scotland's degrade
    to a black flag, a fair price against ASCII smuggling), the byte-order mark, zero-width characters
    (U+200B-U+200F: a zero-width joiner is kept only between two emoji, where it builds one emoji such as
    a family), bidirectional embeddings, overrides and isolates, every other format control (category Cf:
    U+2060-U+2064, soft hyphen, ...), control characters but tab and line breaks, blank fillers
    (`_BLANK`), and variation selectors used as a carrier: a selector is kept only directly after the
    visible character it modifies (U+FE00-U+FE0F after any, U+E0100-U+E01EF after a Han ideograph), so a
    run of them, the way bytes are smuggled after one emoji, goes. The zero-width non-joiner goes too:
    Persian and Indic text lose a joining hint and stay readable, and it is the most common way to split
    a Latin word invisibly.
    """
    char = text[i]
    code = ord(char)
    if char in "\t\n\r" or (code < 0x7F and char.isprintable()):
        return None
    if 0xE0000 <= code <= 0xE007F:
        return "Unicode tag"
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        prev = text[i - 1] if i else ""
        carrier = not prev or prev.isspace() or _selector(prev) or unicodedata.category(prev) in ("Cf", "Cc")
        if carrier or (code >= 0xE0100 and not _han(prev)):
            return "variation selector"
        return None
    if char == "\ufeff":
        return "byte-order mark"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069 or char in "\u200e\u200f\u061c":
        return "bidirectional control"
    if char == _ZWJ and _joins_emoji(text, i):
        return None
    if 0x200B <= code <= 0x200F:
        return "zero-width"
    if char in _BLANK:
        return "blank filler"
    category = unicodedata.category(char)
    if category == "Cf":
        return "format control"
    if category == "Cc":
        return "control character"
    return None


def _selector(char: str) -> bool:
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _joins_emoji(text: str, i: int) -> bool:
    before = text[i - 1] if i else ""
    if before == _EMOJI_PRESENTATION and i >= 2:
        before = text[i - 2]
    after = text[i + 1] if i + 1 < len(text) else ""
    return bool(before and after) and _emoji(before) and _emoji(after)


#: Every character `invisible_kind` may remove: control characters but tab and line breaks, category Cf
#: (as of Unicode 14, Python 3.11's `unicodedata`; `tests/test_untrusted_text.py` checks it against the
#: running one), `_BLANK`, the variation selectors and the tag block. Searched at C speed, so a text
#: without any (every real one) costs one scan.
_SUSPECT = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)


def strip_invisible(text: str) -> tuple[str, Counter[str]]:
    """`text` without its invisible characters (see `invisible_kind`), and how many of each kind went."""
    removed: Counter[str] = Counter()
    if text.isascii() and text.isprintable():
        return text, removed  # the common case, checked at C speed
    kept: list[str] = []
    start = 0
    for found in _SUSPECT.finditer(text):
        i = found.start()
        kind = invisible_kind(text, i)
        if kind is not None:
            kept.append(text[start:i])
            start = i + 1
            removed[kind] += 1
    if not removed:
        return text, removed
    kept.append(text[start:])
    return "".join(kept), removed


# -- the text fields a model reads ----------------------------------------------------------------------------

_TOP_TEXTS = ("displayName", "description")
_TOP_LISTS = ("tags", "capabilities", "representativeQueries")
_ITEM_TEXTS = ("name", "description")


def _rewrite(value: Any, path: str, fn: Callable[[str, str], str]) -> Any:
    return fn(path, value) if isinstance(value, str) else value


def _rewrite_list(value: Any, path: str, fn: Callable[[str, str], str]) -> Any:
    if not isinstance(value, list):
        return value
    return [_rewrite(item, f"{path}[{i}]", fn) for i, item in enumerate(value)]


def _rewrite_items(data: dict[str, Any], key: str, fields: Sequence[str], lists: Sequence[str], fn: Callable[[str, str], str]) -> None:
    items = data.get(key)
    if not isinstance(items, list):
        return
    out: list[Any] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            out.append(item)
            continue
        copy = dict(item)
        for name in fields:
            if name in copy:
                copy[name] = _rewrite(copy[name], f"data.{key}[{i}].{name}", fn)
        for name in lists:
            if name in copy:
                copy[name] = _rewrite_list(copy[name], f"data.{key}[{i}].{name}", fn)
        out.append(copy)
    data[key] = out


def rewrite_texts(entry: dict[str, Any], fn: Callable[[str, str], str]) -> None:
    """Replace, in place, every text of `entry` a model reads by `fn(path, text)`: the name, description,
    tags, capabilities and representative queries; inside `data`, the name and description of each MCP
    tool and A2A skill (and a skill's example tasks), Xu example texts and AIDIP operations. Nested objects
    that change are copied first, so a caller's raw document is never modified. Identifiers, URLs and every
    other field are left alone."""
    for name in _TOP_TEXTS:
        if name in entry:
            entry[name] = _rewrite(entry[name], name, fn)
    for name in _TOP_LISTS:
        if name in entry:
            entry[name] = _rewrite_list(entry[name], name, fn)
    if isinstance(entry.get("data"), Mapping):
        data = entry["data"] = dict(entry["data"])
        _rewrite_items(data, "tools", _ITEM_TEXTS, (), fn)
        _rewrite_items(data, "skills", _ITEM_TEXTS, ("examples",), fn)
        _rewrite_items(data, "operations", _ITEM_TEXTS, (), fn)
        _rewrite_items(data, "examples", ("text",), (), fn)


def model_texts(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, text) of every text of `entry` a model reads, as `rewrite_texts` walks them."""
    found: list[tuple[str, str]] = []

    def note(path: str, text: str) -> str:
        found.append((path, text))
        return text

    rewrite_texts(dict(entry), note)
    return found


def strip_entry(entry: dict[str, Any]) -> str | None:
    """Remove invisible characters from every text of `entry` a model reads (in place); a note naming how
    many went and from which fields, or None when there were none."""
    fields: list[str] = []
    kinds: Counter[str] = Counter()

    def strip(path: str, text: str) -> str:
        clean, removed = strip_invisible(text)
        if removed:
            fields.append(path)
            kinds.update(removed)
        return clean

    rewrite_texts(entry, strip)
    if not kinds:
        return None
    total = sum(kinds.values())
    where = ", ".join(fields[:5]) + (f" and {len(fields) - 5} more" if len(fields) > 5 else "")
    what = ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
    return f"removed {total} invisible character{'s' if total > 1 else ''} from {where} ({what}); identifiers and URLs are never changed"
