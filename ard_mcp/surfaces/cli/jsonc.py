"""JSON with comments and trailing commas, as VS Code, Cursor and Claude Code accept in their settings: read, and
one server entry set in it with the rest of the text, comments included, left as the person wrote it.

Why not parse and dump: a VS Code `mcp.json` holding a `// my servers` comment or a trailing comma was refused
(issue #55), and dumping the parsed document would drop every comment in it. So `parsed` reads the file
after blanking its comments and trailing commas (positions kept), and `with_member` edits the text itself:
the member's value replaced where it is, else the member inserted first in its object.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

_MEMBER = re.compile(r'\s*("(?:[^"\\]|\\.)*")\s*:\s*')
_COMMA = re.compile(r"\s*,")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|[{}\[\]:,]|[^\s{}\[\]:,"/]+|/', re.DOTALL)


def _blanked(text: str) -> str:
    """`text` with comments and trailing commas turned into spaces, so offsets stay where they were."""
    out = list(text)
    tokens = list(_TOKEN.finditer(text))
    for m in tokens:
        if m.group().startswith(("//", "/*")):
            out[m.start() : m.end()] = [c if c == "\n" else " " for c in m.group()]
    meaningful = [m for m in tokens if not m.group().startswith(("//", "/*"))]
    for m, following in itertools.pairwise(meaningful):
        if m.group() == "," and following.group() in ("}", "]"):
            out[m.start()] = " "
    return "".join(out)


def parsed(text: str) -> Any:
    """The document `text` holds, comments and trailing commas allowed; ValueError where it is not JSON then."""
    return json.loads(_blanked(text)) if text.strip() else {}


def _object_span(blank: str, start: int) -> tuple[int, int]:
    """(offset of `{`, offset after the matching `}`) of the object that starts at or after `start`."""
    decoder = json.JSONDecoder()
    begin = blank.index("{", start)
    _, end = decoder.raw_decode(blank, begin)
    return begin, end


def _member(blank: str, begin: int, end: int, name: str) -> tuple[int, int] | None:
    """The span of the value of member `name` directly inside the object at [begin, end)."""
    decoder = json.JSONDecoder()
    i = begin + 1
    while True:
        m = _MEMBER.match(blank, i)
        if m is None or m.start(1) >= end:
            return None
        _, value_end = decoder.raw_decode(blank, m.end())
        if json.loads(m.group(1)) == name:
            return m.end(), value_end
        comma = _COMMA.match(blank, value_end)
        if comma is None:
            return None
        i = comma.end()


def _indent(text: str, at: int) -> str:
    line = text.rfind("\n", 0, at) + 1
    return re.match(r"[ \t]*", text[line:]).group() if text[line:].strip() else ""  # type: ignore[union-attr]


def with_member(text: str, path: tuple[str, str], value: Any) -> str:
    """`text` with `document[path[0]][path[1]] = value`, comments and everything else kept as written."""
    blank = _blanked(text) if text.strip() else "{}"
    source = text if text.strip() else "{}"
    outer = _object_span(blank, 0)
    key, name = path
    servers = _member(blank, outer[0], outer[1], key)
    if servers is not None and blank[servers[0]] == "{":
        inner = _object_span(blank, servers[0])
        found = _member(blank, inner[0], inner[1], name)
        step = _indent(source, inner[0]) + "  "
        rendered = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + step)
        if found is not None:
            return source[: found[0]] + rendered + source[found[1] :]
        return _inserted(source, blank, inner, f"{json.dumps(name)}: {rendered}", step)
    if servers is not None:
        raise ValueError(f"{key!r} is not an object")
    rendered = json.dumps({name: value}, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    return _inserted(source, blank, outer, f"{json.dumps(key)}: {rendered}", _indent(source, outer[0]) + "  ")


def with_top_member(text: str, key: str, value: Any) -> str:
    """`text` with `document[key] = value` (VS Code's `inputs` beside its `servers`), the rest kept as written."""
    blank = _blanked(text) if text.strip() else "{}"
    source = text if text.strip() else "{}"
    outer = _object_span(blank, 0)
    step = _indent(source, outer[0]) + "  "
    rendered = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + step)
    found = _member(blank, outer[0], outer[1], key)
    if found is not None:
        return source[: found[0]] + rendered + source[found[1] :]
    return _inserted(source, blank, outer, f"{json.dumps(key)}: {rendered}", step)


def _inserted(source: str, blank: str, span: tuple[int, int], member: str, step: str) -> str:
    """`source` with `member` first in the object at `span`, on a line of its own at indentation `step`."""
    at = span[0] + 1
    if not blank[at : span[1] - 1].strip():
        return source[:at] + f"\n{step}{member}\n{step[:-2]}" + source[at:]
    following = "" if source[at:].lstrip(" \t").startswith("\n") else f"\n{step}"
    return source[:at] + f"\n{step}{member}," + following + source[at:]
