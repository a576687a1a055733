"""The operator's credentials for the agents the registry calls: a file, never the caller's own token, and
each secret sent only where its line says.

One credential a line, `TARGET HEADER VALUE`, blank lines and `#` comments ignored. HEADER is `bearer` (sent
as `Authorization: Bearer VALUE`) or a header name ending in a colon (`X-API-Key:`). TARGET is either

- an endpoint URL (`https://api.example.com/agents/`): sent to that origin alone, read as the HTTP client
  reads the request (scheme, host and port compared whole, the default port filled in, a trailing dot
  aside), and under its path on a segment boundary (`/agents` names `/agents` and `/agents/x`, never
  `/agentsx`). `http://127.0.0.1:4302` is never `:43020`; `https://api.example.com` is never
  `https://api.example.com.evil.net`;
- or a publisher domain (`example.com`): sent to that publisher's agents only at endpoints on its own domain
  or a subdomain, and only over https (on any port: TLS proves the host holds the name). An entry's
  identifier is a claim anyone can register (`urn:air:example.com:lookalike`, self-asserted, its endpoint on
  another host), so the claim alone never earns the secret: both the entry's publisher and the host the
  request goes to must be within the domain. A domain line names every host and port under the domain, and
  over plain http anyone on the path reads the secret and anyone who can answer for the name gets it, so
  plain http takes a line that says so: `http+https:example.com`, both schemes named. `http:example.com`
  is refused, naming the two spellings it may have meant: a browser reads it as the URL
  `http://example.com/` (one origin), and it reads as "http only". An endpoint a publisher runs on
  someone else's host takes a URL line.

The most specific line wins: the longest URL, then the longest domain. What a registration can make the
registry send where: the caller's arguments go to the endpoint of an entry the invocation policy allows
(`policy`); an operator's secret goes only to a request URL its own line names, checked on every request
the call makes (`Credentialed`), so a redirect, an SSE endpoint event or an A2A card that points elsewhere
gets the request without it. A caller's `Authorization` header is never forwarded, so a token for this
registry cannot reach an agent (AIDIP §6).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx

from ard_mcp.formats.identifiers import is_publisher_domain, within
from ard_mcp.net.urls import unreadable
from ard_mcp.secret_files import read_secrets

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PLAIN_HTTP_TOO = "http+https:"  # a domain target's prefix: its secret may go over plain http as well


def _host(url: httpx.URL) -> str:
    """The host as the connection is made to it (IDNA-encoded ASCII, what the connection pool is handed), a
    trailing dot dropped: `url.host` decodes an `xn--` name, raising on one that is not valid IDNA."""
    return url.raw_host.decode("ascii").rstrip(".")


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    """Scheme, host and port as a connection reads them: the default port filled in, a trailing dot dropped."""
    return url.scheme, _host(url), url.port or _DEFAULT_PORTS.get(url.scheme, 0)


def _path(url: httpx.URL) -> str:
    """The path as sent (percent-encoding kept, so `%2F` is never read as a segment boundary), no query."""
    return url.raw_path.decode("ascii").split("?", 1)[0]


@dataclass(frozen=True)
class Credential:
    """One line of the file: the header it sends and where it may be sent (`origin` and `path` for a URL
    line, `domain` and `schemes` for a publisher line)."""

    header: str
    value: str
    origin: tuple[str, str, int] | None = None
    path: str = ""  # a URL line's path, without its trailing slash ("" for the whole origin)
    domain: str | None = None
    schemes: tuple[str, ...] = ("https",)  # a publisher line's: `http+https:` adds plain http

    def sent_to(self, url: httpx.URL) -> bool:
        """Whether this secret may go with a request to `url`."""
        if self.domain is not None:
            return url.scheme in self.schemes and within(_host(url), self.domain)
        if _origin(url) != self.origin:
            return False
        path = _path(url)
        return path == self.path or path.startswith(self.path + "/") or not self.path

    def specificity(self, publisher: str, url: httpx.URL) -> int:
        """How specifically this line names an agent of `publisher` at `url`; 0 when it does not apply."""
        if not self.sent_to(url):
            return 0
        if self.domain is None:
            return 1000 + len(self.path) + 1
        return 1 + len(self.domain) if within(publisher, self.domain) else 0

    def __repr__(self) -> str:  # never the secret, in a log line or a traceback
        where = f"{'+'.join(self.schemes)}:{self.domain}" if self.domain else f"{self.origin}{self.path}"
        return f"Credential({self.header!r} for {where})"


def _domain_credential(target: str, header: str, value: str, where: str) -> Credential:
    """A publisher line's credential: over https only, unless TARGET begins `http+https:`. `http:example.com`
    is refused, naming the two lines it may have meant."""
    domain = target.lower()
    schemes: tuple[str, ...] = ("https",)
    if domain.startswith(_PLAIN_HTTP_TOO):
        domain, schemes = domain.removeprefix(_PLAIN_HTTP_TOO), ("http", "https")
    scheme, _, rest = domain.partition(":")
    if scheme in _DEFAULT_PORTS and is_publisher_domain(rest):  # `http:example.com`: which of two lines was meant?
        broad = (
            f"{_PLAIN_HTTP_TOO}{rest} (every host under it, over https and plain http)"
            if scheme == "http"
            else f"{rest} (every host under it)"
        )
        raise ValueError(f"{where}: {target!r} is ambiguous: write {broad}, or {scheme}://{rest} (that one origin)")
    if not is_publisher_domain(domain):
        raise ValueError(f"{where}: {target!r} is neither a publisher domain nor an http(s) URL")
    return Credential(header, value, domain=domain, schemes=schemes)


def _credential(target: str, header: str, value: str, where: str) -> Credential:
    """The line's credential, sent where TARGET says; ValueError naming the line when TARGET is neither form."""
    if "://" not in target:
        return _domain_credential(target, header, value, where)
    reason = unreadable(target)
    if reason is not None:
        raise ValueError(f"{where}: {target!r} {reason}")
    url = httpx.URL(target)
    if url.scheme not in _DEFAULT_PORTS or not url.host:
        raise ValueError(f"{where}: {target!r} must be an http or https URL with a host")
    if url.userinfo or url.query or url.fragment:
        raise ValueError(f"{where}: {target!r} must name an origin and a path only (no user, query or fragment)")
    return Credential(header, value, origin=_origin(url), path=_path(url).rstrip("/"))


@dataclass(frozen=True)
class AgentCredentials:
    lines: tuple[Credential, ...] = ()

    @classmethod
    def load(cls, path: Path) -> AgentCredentials:
        return cls.parse(read_secrets(path, "agent credentials file"), f"agent credentials file {path}")

    @classmethod
    def parse(cls, text: str, source: str = "agent credentials") -> AgentCredentials:
        """The lines of `text`; ValueError naming `source` and the line for one that is not a credential."""
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split("#", 1)[0].split(None, 2)
            if not fields:
                continue
            where = f"{source}, line {number}"
            if len(fields) != 3 or not (fields[1].lower() == "bearer" or fields[1].endswith(":")):
                raise ValueError(f"{where}: expected 'TARGET bearer TOKEN' or 'TARGET Header-Name: VALUE'")
            bearer = fields[1].lower() == "bearer"
            header = "Authorization" if bearer else fields[1][:-1]
            value = f"Bearer {fields[2].strip()}" if bearer else fields[2].strip()
            found.append(_credential(fields[0], header, value, where))
        return cls(tuple(found))

    def chosen(self, publisher: str, url: str) -> Credential | None:
        """The most specific line for an agent of `publisher` at endpoint `url`; None when no line names it."""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            return None
        best = max(self.lines, key=lambda c: c.specificity(publisher, parsed), default=None)
        return best if best is not None and best.specificity(publisher, parsed) else None


class Credentialed(httpx.AsyncBaseTransport):
    """`inner` with `credential` added to each request whose URL the credential's line names, and to no other:
    a call is chosen its credential by its endpoint, but the requests it makes can go elsewhere (a redirect,
    an SSE stream's endpoint event, an A2A card's other interface), and those go without it."""

    def __init__(self, inner: httpx.AsyncBaseTransport, credential: Credential) -> None:
        self._inner = inner
        self._credential = credential

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers.pop(self._credential.header, None)
        if self._credential.sent_to(request.url):
            request.headers[self._credential.header] = self._credential.value
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Leaves `inner` open: its connection pool belongs to its owner (`Invoker`)."""
