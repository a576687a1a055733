"""Entry text as the page shows it: escaped, with the task's matched words marked and every invisible
character (zero-width, bidirectional override, Unicode tag, ...) replaced by a visible `U+XXXX` marker.

Escaping alone keeps markup inert, but a bidirectional override still reorders what a person reads
("Trojan Source") and a zero-width space still hides a split word; showing them names what is there.
`invisible_kind` is the registry's one rule for which characters are invisible."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from markupsafe import Markup, escape

from ard_mcp.formats.invisible import invisible_kind

_SUSPECT = re.compile(r"[^\x20-\x7e]")  # only these can be invisible: the rule runs on them alone (a page renders ~80 texts)


@lru_cache(maxsize=256)
def _pattern(words: tuple[str, ...]) -> re.Pattern[str] | None:
    """Whole words (and their inflections: `invoice` marks `invoices`), longest first so a longer word wins."""
    usable = sorted({w for w in words if w.strip()}, key=len, reverse=True)
    if not usable:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in usable) + r")\w*", re.IGNORECASE)


def _run(text: str, start: int, end: int, hidden: dict[int, str]) -> str:
    out: list[str] = []
    last = start
    for i in (i for i in hidden if start <= i < end):
        out += [
            escape(text[last:i]),
            f'<span class="invisible" title="{escape(hidden[i])} (invisible in the entry)">U+{ord(text[i]):04X}</span>',
        ]
        last = i + 1
    out.append(escape(text[last:end]))
    return "".join(out)


def _hidden(text: str) -> dict[int, str]:
    """The position and kind of each invisible character of `text`."""
    return {m.start(): kind for m in _SUSPECT.finditer(text) if (kind := invisible_kind(text, m.start()))}


def shown(value: object, words: Iterable[str] = ()) -> Markup:
    """`value` as safe HTML: escaped, invisible characters named, `words` marked."""
    text = "" if value is None else str(value)
    hidden = _hidden(text)
    pattern = _pattern(tuple(words))
    if pattern is None and not hidden:
        return escape(text)
    spans = [(m.start(), m.end()) for m in pattern.finditer(text)] if pattern else []
    out: list[str] = []
    position = 0
    for start, end in [*spans, (len(text), len(text))]:
        out.append(_run(text, position, start, hidden))
        if start < end:
            out.append(f"<mark>{_run(text, start, end, hidden)}</mark>")
        position = end
    return Markup("".join(out))


def visible(value: object) -> str:
    """`value` as plain text (for a page's title, which holds no markup) with each invisible character named."""
    text = "" if value is None else str(value)
    for i in reversed(_hidden(text)):
        text = f"{text[:i]}[U+{ord(text[i]):04X}]{text[i + 1 :]}"
    return text
