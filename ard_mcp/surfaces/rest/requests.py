"""Reading REST requests: JSON bodies and query parameters, refused with a 400 that says what is wrong
rather than failing deep inside the registry."""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request

from ard_mcp.errors import InvalidArgument


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def json_body(request: Request) -> Any:
    """The body as JSON: malformed JSON, NaN, overflowing numbers, unpaired surrogates and absurd nesting
    are 400s here rather than failures deep inside the registry."""
    body = await request.body()
    if not body.strip():
        raise InvalidArgument("request body: expected a JSON object, got nothing")
    try:
        value = json.loads(body, parse_float=_finite, parse_constant=_no_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"request body: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeError:
        raise InvalidArgument("request body: must be UTF-8 without unpaired surrogates") from None
    except RecursionError:
        raise InvalidArgument("request body: nested too deeply") from None
    except ValueError as exc:
        raise InvalidArgument(f"request body: {exc}") from None
    return value


def page_size(text: str | None, default: int) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"pageSize: must be an integer between 1 and 100 (got {text!r})") from None
