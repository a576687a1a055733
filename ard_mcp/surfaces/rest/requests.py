"""Reading REST requests: JSON bodies and query parameters, refused with a 400 that says what is wrong
rather than failing deep inside the registry."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.surfaces.rest.settings import HttpSettings


async def json_body(request: Request) -> Any:
    """The body as JSON, read by the one bounded reader (`bounded_json`): malformed JSON, NaN, overflowing
    numbers, unpaired surrogates and absurd nesting are 400s here rather than failures deep inside the
    registry, in the words every other surface uses for them."""
    body = await request.body()
    if not body.strip():
        raise InvalidArgument("request body: expected a JSON object, got nothing")
    settings: HttpSettings = request.app.state.ard.settings
    try:
        return read_json(body, max_bytes=settings.max_body_bytes)
    except UnreadableJson as exc:
        raise InvalidArgument(f"request body: {exc}") from None


def page_size(text: str | None, default: int) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"pageSize: must be an integer between 1 and 100 (got {text!r})") from None
