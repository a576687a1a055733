"""Catalogs and registries a domain publishes in the DNS (ARD §6.1, draft-mozleywilliams-dnsop-dnsaid).

What is read, for a domain `D` crawled at an origin (its scheme is used for every URL found):
- SVCB at `D` in ServiceMode with a path parameter: a static manifest at `scheme://<target>[:port]<path>`
  (ARD's `{name} IN SVCB . well-known=/not-well-known/ai-catalog.json`; TargetName `.` is `D` itself). The
  path key has no registered number yet, so a private-use key (65280-65534) whose value starts with `/` is
  taken as the path: `D. IN SVCB 1 . port=8443 key65400="/catalogs/main.json"`;
- TXT at `D`, the fallback: strings `well-known=/path` (a path on the origin) or `ai-catalog=<url>`;
- SVCB at `_index._agents.D`: a dynamic registry search endpoint (`scheme://<target>[:port]/`), recorded as
  an upstream registry, not crawled as a catalog.

Lookups go through dnspython, to the system's resolvers or to the one given (`--dns-server`), which then
also resolves the host names the crawler connects to, so one DNS view decides both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio
import dns.asyncresolver
import dns.exception
import dns.rdatatype
import dns.resolver
from dns.rdtypes.svcbbase import ParamKey

log = logging.getLogger(__name__)

REGISTRY_LABEL = "_index._agents"
_PRIVATE_KEYS = range(65280, 65535)
_TXT_PATH = "well-known="
_TXT_URL = "ai-catalog="


@dataclass(frozen=True)
class Found:
    url: str
    via: str  # "dns-svcb" | "dns-txt" | "dns-registry"


def _origin(scheme: str, host: str, port: int | None) -> str:
    host = host.rstrip(".")
    default = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


class DnsDiscovery:
    """Both the crawler's DNS discovery and (with a given server) its address resolver."""

    def __init__(self, server: str | None = None, timeout: float = 3.0) -> None:
        if server is None:
            self._resolver = dns.asyncresolver.Resolver()
        else:
            host, _, port = server.rpartition(":") if server.count(":") == 1 else (server, "", "")
            self._resolver = dns.asyncresolver.Resolver(configure=False)
            self._resolver.nameservers = [host]
            self._resolver.port = int(port or 53)
        self._resolver.lifetime = timeout
        self.server = server

    async def _answer(self, name: str, rdtype: str) -> list[object]:
        try:
            return list(await self._resolver.resolve(name, rdtype, search=False))
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer, dns.resolver.NoNameservers):
            return []
        except dns.exception.Timeout:
            log.info("DNS %s %s: no answer in time", rdtype, name)
            return []
        except dns.exception.DNSException as exc:
            log.info("DNS %s %s: %s", rdtype, name, exc)
            return []

    async def _answers(self, *questions: tuple[str, str]) -> list[list[object]]:
        """Several lookups at once: a slow or dead server then costs one timeout, not one per question."""
        found: list[list[object]] = [[] for _ in questions]

        async def ask(i: int, name: str, rdtype: str) -> None:
            found[i] = await self._answer(name, rdtype)

        async with anyio.create_task_group() as group:
            for i, (name, rdtype) in enumerate(questions):
                group.start_soon(ask, i, name, rdtype)
        return found

    async def addresses(self, host: str) -> list[str]:
        """A and AAAA of a host, through the configured server (`ard_mcp.net.guard.Resolver`)."""
        found = [str(r) for answer in await self._answers((host, "A"), (host, "AAAA")) for r in answer]
        if not found:
            raise OSError(f"{host}: no A or AAAA record")
        return found

    async def discover(self, domain: str, origin: str) -> list[Found]:
        """Manifests and registries `domain` publishes, most preferred first; `origin` is the one being
        crawled (its scheme for every URL found, and its port for a TXT path)."""
        scheme = origin.split("://", 1)[0]
        found: list[Found] = []
        svcb, txt, registries = await self._answers((domain, "SVCB"), (domain, "TXT"), (f"{REGISTRY_LABEL}.{domain}", "SVCB"))
        for record in sorted(svcb, key=lambda r: getattr(r, "priority", 0)):
            path = _path_param(record)
            if getattr(record, "priority", 0) > 0 and path is not None:
                found.append(Found(_origin(scheme, _target(record, domain), _port(record)) + path, "dns-svcb"))
        for record in txt:
            text = b"".join(getattr(record, "strings", ())).decode("utf-8", "replace").strip()
            for token in text.replace(";", " ").split():
                if token.startswith(_TXT_PATH) and token[len(_TXT_PATH) :].startswith("/"):
                    found.append(Found(origin + token[len(_TXT_PATH) :], "dns-txt"))
                elif token.startswith(_TXT_URL):
                    found.append(Found(token[len(_TXT_URL) :], "dns-txt"))
        for record in sorted(registries, key=lambda r: getattr(r, "priority", 0)):
            if getattr(record, "priority", 0) > 0:
                found.append(Found(_origin(scheme, _target(record, domain), _port(record)) + "/", "dns-registry"))
        return list({f.url: f for f in found}.values())


def _target(record: object, domain: str) -> str:
    target = str(getattr(record, "target", ".")).rstrip(".")
    return target or domain


def _port(record: object) -> int | None:
    params = getattr(record, "params", {})
    param = params.get(ParamKey.PORT)
    return None if param is None else int(param.port)


def _path_param(record: object) -> str | None:
    for key, param in getattr(record, "params", {}).items():
        value = getattr(param, "value", None)
        if int(key) in _PRIVATE_KEYS and isinstance(value, bytes) and value.startswith(b"/"):
            return value.decode("utf-8", "replace")
    return None
