"""What a called MCP server asks mid-call (sampling, elicitation, its roots), passed on to the host of the
call it is serving, marked as the server's and bounded, or refused saying why.

A server reached through ard-mcp is a server of the host's, one hop further: one that asks the host's model
to sample, or the person a question, must reach them, as it would attached directly. The request goes to
the host of the one call in flight on that server's session (a remote server's session is lent to one call
at a time; a package server may serve several at once, and a request then cannot be told apart: refused).
A host that did not declare the capability, a caller with no host (REST), or a host whose protocol gives
the server no channel for a request in mid-call (2026-07-28: an elicitation rides the tool result instead),
gets the server a clear error in place of an answer.

What reaches the host is never ard-mcp's own voice (issue #53: a called server's form imitating the consent
question, with an "API key" field, went to the person unchanged, and one call pushed 500 prompts):

- an elicitation's message is the server's, quoted, after "<server> asks (passed on by ard-mcp, not
  ard-mcp's own question):"; a sampling request's system prompt starts with the same words;
- a form may not ask for a secret (the MCP spec forbids it: a field named or described as a password, token,
  key or the like, or `format: password`), and URL mode is passed on only where the person allowed it for
  that server (`allow_url`);
- each call may ask `MAX_PER_CALL` of each kind and each server `MAX_PER_MINUTE` in any minute; past that
  the server is told, and the host is not asked.

Used by remote sessions (`invocation.clients`) and package servers (`servers`) alike, so it lives in the
lower of the two rooms.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
import mcp_types
from mcp.client.session import ClientRequestContext
from pydantic import FileUrl

from ard_mcp.formats.quoting import one_line, quoted


class HostChannel(Protocol):
    """The host of one call, as a server's requests reach it (`surfaces.mcp_host` over MCP)."""

    async def sample(self, params: mcp_types.CreateMessageRequestParams) -> mcp_types.CreateMessageResult | mcp_types.ErrorData: ...

    async def elicit(self, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult | mcp_types.ErrorData: ...

    async def roots(self) -> mcp_types.ListRootsResult | mcp_types.ErrorData: ...


HOST: ContextVar[HostChannel | None] = ContextVar("ard_mcp_host", default=None)
"""The host of the call being made (set by the invocation service, read where a session is taken for it)."""

MAX_PER_CALL = {"question": 3, "sampling": 10, "roots": 10}
MAX_PER_MINUTE = {"question": 6, "sampling": 30, "roots": 30}
MAX_MESSAGE_CHARS = 1000
MAX_SERVERS_COUNTED = 1000  # servers whose last minute is remembered (the oldest forgotten first)
_RECENT: dict[tuple[str, str], deque[float]] = {}  # (server, kind) -> when it asked: a server reopening its session starts no new minute
_SECRET_FIELD = re.compile(
    r"pass(?:word|phrase|code)|passwd|secret|token|api[\s_-]?key|access[\s_-]?key|private[\s_-]?key|credential|\bpins?\b|"
    r"\botp\b|one[\s_-]?time|\bssn\b|social[\s_-]?security|card[\s_-]?number|\bcvc\b|\bcvv\b|\biban\b|cookie|session[\s_-]?id",
    re.IGNORECASE,
)


def refusal(message: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=f"ard-mcp did not pass this on: {message}")


def _secret_field(schema: Mapping[str, Any]) -> str | None:
    """The first field of a form's schema that asks for a secret, or None."""
    properties = schema.get("properties")
    for name, prop in properties.items() if isinstance(properties, Mapping) else ():
        words = " ".join(str(prop.get(key, "")) for key in ("title", "description")) if isinstance(prop, Mapping) else ""
        spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", str(name))  # apiKey -> api Key
        if _SECRET_FIELD.search(f"{spaced} {words}") or (isinstance(prop, Mapping) and prop.get("format") == "password"):
            return str(name)
    return None


def _minute(server: str, kind: str) -> deque[float]:
    key = (server, kind)
    if key not in _RECENT and len(_RECENT) >= MAX_SERVERS_COUNTED:
        del _RECENT[next(iter(_RECENT))]
    return _RECENT.setdefault(key, deque())


@dataclass
class _Call:
    host: HostChannel | None
    asked: dict[str, int] = field(default_factory=dict)


class Relay:
    """One session's link to the hosts of the calls it serves; `server` names it to the person."""

    def __init__(self, server: str, allow_url: bool = False, roots: list[Path] | None = None) -> None:
        """`roots`: a package server's, the folders it was given, which ard-mcp answers its roots requests with (the
        host's roots are paths its sandbox does not have); None (a remote server): the host is asked."""
        self.server = one_line(server, 200)
        self.allow_url = allow_url
        self.roots = roots
        self.roots_asked = anyio.Event()  # set at its first roots request (`servers`: a root-only server's first call waits)
        self._calls: list[_Call] = []

    @property
    def _voice(self) -> str:
        return f"{self.server} asks (passed on by ard-mcp, not ard-mcp's own question):"

    @contextmanager
    def serving(self, host: HostChannel | None) -> Iterator[None]:
        """While a call for `host` runs on the session."""
        call = _Call(host)
        self._calls.append(call)
        try:
            yield
        finally:
            self._calls.remove(call)

    def _host(self, kind: str) -> HostChannel | mcp_types.ErrorData:
        """The host to ask, counting the request against the call's and the server's bounds."""
        if len(self._calls) > 1:
            return refusal("several calls are in flight on this server, and whose host to ask cannot be told")
        call = self._calls[0] if self._calls else None
        if call is None or call.host is None:
            return refusal("the call it serves has no host to ask (it came over REST, or none is running)")
        now, recent = time.monotonic(), _minute(self.server, kind)
        while recent and now - recent[0] > 60:
            recent.popleft()
        if call.asked.get(kind, 0) >= MAX_PER_CALL[kind]:
            return refusal(f"{self.server} already made {MAX_PER_CALL[kind]} {kind} requests in this call, the most passed on")
        if len(recent) >= MAX_PER_MINUTE[kind]:
            return refusal(f"{self.server} already made {MAX_PER_MINUTE[kind]} {kind} requests in the last minute, the most passed on")
        call.asked[kind] = call.asked.get(kind, 0) + 1
        recent.append(now)
        return call.host

    async def _sample(self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams) -> Any:
        host = self._host("sampling")
        if isinstance(host, mcp_types.ErrorData):
            return host
        prompt = f"{self._voice} {params.system_prompt}" if params.system_prompt else self._voice
        return await host.sample(params.model_copy(update={"system_prompt": prompt}))

    async def _elicit(self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> Any:
        if isinstance(params, mcp_types.ElicitRequestURLParams) and not self.allow_url:
            return refusal(f"{self.server} asked to send the person to a web page (URL mode), which the person has not allowed it")
        if isinstance(params, mcp_types.ElicitRequestFormParams):
            secret = _secret_field(params.requested_schema)
            if secret is not None:
                return refusal(f"a form may not ask for a secret (field {secret!r}); the MCP spec asks for URL mode for that")
        host = self._host("question")
        if isinstance(host, mcp_types.ErrorData):
            return host
        message = f"{self._voice} {quoted(params.message, MAX_MESSAGE_CHARS)}"
        return await host.elicit(params.model_copy(update={"message": message}))

    async def _roots(self, context: ClientRequestContext) -> Any:
        self.roots_asked.set()
        if self.roots is not None:
            return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=FileUrl(root.as_uri()), name=root.name) for root in self.roots])
        host = self._host("roots")
        return host if isinstance(host, mcp_types.ErrorData) else await host.roots()

    def client_options(self) -> dict[str, Any]:
        """`mcp.Client` keyword arguments declaring the three capabilities and passing each request on."""
        return {
            "sampling_callback": self._sample,
            "sampling_capabilities": mcp_types.SamplingCapability(),
            "elicitation_callback": self._elicit,
            "list_roots_callback": self._roots,
        }
