"""An SSE MCP server's `endpoint` event, checked as it arrives: the messages of the session go where it says,
and it may only say the stream's own origin.

The SDK checks the event too, but fails in a way its caller never sees: the error is handed to a stream
nobody reads yet, so a server naming another origin held the call until its whole time limit (60 s by
default) and was then reported as a timeout. Here the first `endpoint` event of an event stream is read as
it streams by, and one naming another origin ends the stream at once with `EndpointElsewhere`, an
`httpx2.SSEError` (the one error the SDK's reader raises to its caller), saying where it pointed; the
registry names it (`mcp_agent`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urljoin, urlsplit

import httpx2

_LOOKED_AT = 64 * 1024  # the endpoint event comes first; past this much of a stream without one, stop looking


class EndpointElsewhere(httpx2.SSEError):
    """The `endpoint` event named another origin than the stream's."""

    def __init__(self, stream: str, endpoint: str) -> None:
        super().__init__(f"the SSE stream at {stream} named another origin for its messages, {endpoint}: not followed")


def endpoint_of(events: str) -> str | None:
    """The data of the first complete `endpoint` event in the text of an event stream so far, or None."""
    for block in events.replace("\r\n", "\n").replace("\r", "\n").split("\n\n")[:-1]:
        fields = [line.partition(":") for line in block.split("\n") if line and not line.startswith(":")]
        named = {name: value.removeprefix(" ") for name, _, value in fields}
        if named.get("event") == "endpoint":
            return "\n".join(value.removeprefix(" ") for name, _, value in fields if name == "data")
    return None


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class _Checked(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, url: str) -> None:
        self._stream = stream
        self._url = url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen, checked = b"", False
        async for chunk in self._stream:
            if not checked:
                seen += chunk
                endpoint = endpoint_of(seen.decode("utf-8", "replace"))
                if endpoint is not None and _origin(urljoin(self._url, endpoint)) != _origin(self._url):
                    raise EndpointElsewhere(self._url, urljoin(self._url, endpoint))
                checked = endpoint is not None or len(seen) > _LOOKED_AT
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class EndpointChecked(httpx2.AsyncBaseTransport):
    """`inner`, with each event stream's first `endpoint` event held to the stream's origin."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _Checked(response.stream, str(request.url))
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
