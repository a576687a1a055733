"""The mcp SDK's HTTP clients (`httpx2`, a separate package with httpx's API) over an httpx transport.

The SDK's streamable HTTP and SSE clients take an `httpx2.AsyncClient`, whose transports are `httpx2`'s,
and the network policy's guarded transport (`guard.GuardedTransport`) is an httpx one: without this
bridge an MCP connection would open sockets the policy never sees. Each request is handed over as httpx's,
its body streamed; each response comes back with a streaming body, so an SSE stream arrives event by event
and a size cap below sees every byte as it comes. httpx's errors become httpx2's of the same name, the
ones the SDK catches; anything else (the guard's `BlockedAddress`) passes as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import httpx
import httpx2


@contextlib.contextmanager
def _as_httpx2_errors(request: httpx2.Request) -> Iterator[None]:
    try:
        yield
    except httpx.TransportError as exc:  # the two packages name their errors alike
        ours = getattr(httpx2, type(exc).__name__, httpx2.TransportError)
        raise ours(str(exc) or type(exc).__name__, request=request) from exc


class _RequestBody(httpx.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class _ResponseBody(httpx2.AsyncByteStream):
    """The inner response's body, chunk by chunk as it arrives (closing it closes the inner one)."""

    def __init__(self, stream: httpx.AsyncByteStream, request: httpx2.Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx2_errors(self._request):
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class Httpx2Bridge(httpx2.AsyncBaseTransport):
    """An `httpx2` transport that sends every request through `inner`, an httpx one."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, httpx2.AsyncByteStream)
        forwarded = httpx.Request(
            request.method,
            str(request.url),
            headers=request.headers.raw,
            stream=_RequestBody(request.stream),
            extensions=request.extensions,  # the timeouts httpx2 set, which httpcore reads alike
        )
        with _as_httpx2_errors(request):
            response = await self._inner.handle_async_request(forwarded)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=_ResponseBody(response.stream, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
