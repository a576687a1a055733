"""A search as every surface asks it: one object, checked once, whichever surface built it.

MCP `search_agents` and `discover_agents`, ARD `POST /search`, Xu `POST /discover`, AIDIP
`POST /agents/search`, the CLI and `ard-mcp eval` all build a `SearchQuery` and call `Registry.search`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.limits import MAX_QUERY_CHARS
from ard_mcp.formats.messages import Detail
from ard_mcp.index.filter_values import Filter
from ard_mcp.search.criteria import Criteria
from ard_mcp.search.filters import parse_filter
from ard_mcp.search.paging import check_page_size


def query_text(text: Any) -> str:
    """The task text of a search, stripped; `InvalidArgument` when it is empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument("text: must be a non-empty description of the task")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"text: must be at most {MAX_QUERY_CHARS} characters (got {len(text)})")
    return text.strip()


@dataclass(frozen=True)
class SearchQuery:
    """What to find and which page of it to return.

    `text` ranks the entries by relevance; without it (AIDIP search by filters alone) the entries meeting
    the filter and criteria come in identifier order, unscored. `filter` is an ARD §7.1 filter (OR within
    a key, AND across keys); `criteria` adds the Xu / AIDIP constraints and preferred tags; `detail` trims
    each ARD result (Xu §5.1)."""

    text: str | None
    filter: Filter = field(default_factory=dict)
    criteria: Criteria = field(default_factory=Criteria)
    detail: Detail | None = None
    page_size: int = 10
    page_token: str | None = None

    @classmethod
    def of(
        cls,
        text: Any,
        filter: Mapping[str, Any] | None = None,
        criteria: Criteria | None = None,
        *,
        detail: Detail | None = None,
        page_size: int = 10,
        page_token: str | None = None,
    ) -> SearchQuery:
        """A checked query: `InvalidArgument` names the first field that breaks a rule."""
        checked = None if text is None else query_text(text)
        check_page_size(page_size)
        return cls(checked, parse_filter(filter), criteria or Criteria(), detail, page_size, page_token)

    def key(self) -> list[Any]:
        """What a page token of this query is bound to: everything but the page and the detail."""
        return ["search", self.text, self.filter, self.criteria.key()]
