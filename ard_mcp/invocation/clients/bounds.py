"""What the three protocol clients do alike: keep a call within its limits (the time, the size of each answer),
name a failure to reach an agent the same way whatever the protocol, and pick out the text an answer carries.

The size cap sits in the transport (`Bounded`), under the SDKs, because the SDKs read whole bodies
(`response.json()`, an SSE stream) with no cap of their own. The SDKs also wrap, retry or swallow transport
errors (the MCP client turns a broken stream into "connection closed"), so `Bounded` keeps the first one
it saw: a client that ends in a vague error asks it what really happened.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, NoReturn, TypeVar

import anyio
import httpx

from ard_mcp.errors import AgentTimeout, AgentUnreachable, ArdError, leaves
from ard_mcp.invocation.calls import Progress
from ard_mcp.invocation.policy import Limits
from ard_mcp.monitoring import tracing
from ard_mcp.net.guard import BlockedAddress

_STRINGS = 1000  # the most strings of one answer handed to screening (an answer is max_bytes at most anyway)
WAITING_EVERY = 5.0  # seconds between the progress notifications of a call whose agent tells none of its own
_T = TypeVar("_T")


class AnswerTooLarge(Exception):
    """An answer over the call's `max_bytes`, found while it streamed in (Content-Length may lie or be absent)."""


class _Capped(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, owner: Bounded, declared: str | None) -> None:
        self._stream = stream
        self._owner = owner
        self._declared = declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        cap = self._owner.max_bytes
        seen = int(self._declared) if self._declared and self._declared.isdigit() else 0
        try:
            if seen > cap:
                raise AnswerTooLarge(f"the agent's answer is {seen} bytes, over the limit of {cap}")
            seen = 0
            async for chunk in self._stream:
                seen += len(chunk)
                if seen > cap:
                    raise AnswerTooLarge(f"the agent's answer is over the limit of {cap} bytes")
                yield chunk
        except Exception as exc:
            self._owner.keep(exc)
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()


class Bounded(httpx.AsyncBaseTransport):
    """`inner` (the guarded transport) with every response body capped at `max_bytes` as it streams, the
    first failure of a request or of a body kept in `failure`, and the first 401 or 403 the agent answered in
    `denied` (the MCP SDK turns a refused POST into a JSON-RPC "error response" without its status).

    When tracing, each request carries the `traceparent` of the call it is lent to, taken in the call's own task
    (where it is made, and in `reset` when a kept session is lent): an SDK sends from tasks of its own, which
    a kept session started for an earlier call."""

    def __init__(self, inner: httpx.AsyncBaseTransport, max_bytes: int) -> None:
        self._inner = inner
        self.max_bytes = max_bytes
        self.failure: Exception | None = None
        self.denied: int | None = None
        self.traced = tracing.outgoing()

    def keep(self, exc: Exception) -> None:
        if self.failure is None:
            self.failure = exc

    def reset(self) -> None:
        """Forget what earlier requests saw: a kept session's transport is lent to one call after another, and
        a failure is named after the call that met it."""
        self.failure = None
        self.denied = None
        self.traced = tracing.outgoing()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers.update(self.traced)
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            self.keep(exc)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        if response.status_code in (401, 403) and self.denied is None:
            self.denied = response.status_code
        response.stream = _Capped(response.stream, self, response.headers.get("content-length"))  # not read yet: swapped in place
        return response

    async def aclose(self) -> None:
        """Leaves `inner` open: its connection pool belongs to its owner (`Invoker`), which keeps connections
        to an agent alive between calls and closes the pool once."""


def transport_failure(exc: BaseException) -> ArdError | None:
    """The registry's name for a failure below the protocol (a refused address, no connection, a timeout, an
    answer too large), or None for any other exception."""
    if isinstance(exc, BlockedAddress):
        return AgentUnreachable(f"refused by the network policy: {exc}")
    if isinstance(exc, AnswerTooLarge):
        return AgentUnreachable(str(exc))
    if isinstance(exc, httpx.TimeoutException):
        return AgentTimeout(f"the agent did not answer in time ({type(exc).__name__}: {exc})")
    if isinstance(exc, httpx.TransportError):
        return AgentUnreachable(f"could not reach the agent ({type(exc).__name__}: {exc})")
    return None


def failure_of(exc: Exception, bounded: Bounded, protocol: Callable[[BaseException], ArdError | None]) -> ArdError | None:
    """What went wrong, as the registry names it: one of its own errors as it is; else a failure below the
    protocol, first the one the guarded transport saw (an SDK may have turned it into a vague error), then one
    among the exceptions the SDK raised; else what `protocol` makes of one of those. None when nothing is known."""
    if isinstance(exc, ArdError):
        return exc
    if bounded.failure is not None and (failure := transport_failure(bounded.failure)) is not None:
        return failure
    for leaf in leaves(exc):
        if (failure := transport_failure(leaf)) is not None or (failure := protocol(leaf)) is not None:
            return failure
    return None


def raise_named(exc: Exception, bounded: Bounded, protocol: Callable[[BaseException], ArdError | None]) -> NoReturn:
    """Raise what went wrong as the registry names it (`failure_of`), else `exc` as it is."""
    failure = failure_of(exc, bounded, protocol)
    if failure is None or failure is exc:
        raise exc
    raise failure from exc


@contextlib.contextmanager
def within(limits: Limits) -> Iterator[None]:
    """The whole call, every request and every poll, within `limits.total` seconds."""
    try:
        with anyio.fail_after(limits.total):
            yield
    except TimeoutError:
        raise AgentTimeout(f"the agent did not finish within {limits.total:g} s") from None


async def waited(work: Callable[[], Awaitable[_T]], progress: Progress | None, every: float = WAITING_EVERY) -> _T:
    """`work`'s result, telling `progress` every `every` seconds how long the agent has been at it: an AIDIP
    agent says nothing until it answers, and a host that hears nothing for long may give up on the call (MCP
    hosts commonly restart a request's timeout on each progress notification)."""
    if progress is None:
        return await work()
    started, failure, result = time.monotonic(), None, list[_T]()

    async def tick() -> None:
        while True:
            await anyio.sleep(every)
            waited_s = round(time.monotonic() - started, 1)
            await progress(waited_s, None, f"waiting for the agent's answer ({waited_s:g} s)")

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        try:
            result.append(await work())
        except Exception as exc:  # raised as it is after the group, not wrapped in the group's ExceptionGroup
            failure = exc
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result[0]


def text_of(value: object) -> str | None:
    """A description as the agent wrote it, whole (`invocation.compact` cuts it for the list), or None."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def strings_in(value: Any) -> list[str]:
    """Every non-blank string in a JSON value (object values, array items), once each, in order: what an
    answer could address a model with, for the service to screen."""
    found: dict[str, None] = {}
    pending = [value]
    while pending and len(found) < _STRINGS:
        item = pending.pop()
        if isinstance(item, str):
            if item.strip():
                found[item] = None
        elif isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            pending.extend(reversed(item))
    return list(found)
