"""Listing and calling an entry's tools for the surfaces: the entry as the caller may see it, the policy, the
protocol's client, the screening of what comes back, and the audit log, in one place so the MCP tools and
the REST route behave alike.

A remote MCP server's live `tools/list` is kept for `TOOLS_TTL` seconds per endpoint and credential: a host
that inspects a server and then calls it asks the server once. What a host sees of it is bounded and
screened (`tool_lists`). What an entry resolves to for a viewer (its target, with the operator's credential,
and its trust finding) is kept for `RESOLVED_TTL` seconds: reading it from the store, in a worker thread,
cost a call 0.9 ms (`bench/invocation.py`), and a host calling an agent calls it in runs; an entry changed,
hidden or deleted, a trust status turned invalid, is seen within that second. An MCP server that runs from
its package is consented to, installed and started by the package room (`ard_mcp.packages`) and then called
as a remote one. Everything an agent returns is third-party content: its texts are screened for text aimed
at a model (`formats.untrusted`), and the answer says so. A secret the operator configured (a package's
value, an agent's credential) never comes back: every answer, error and audit line is passed through the
`Redactor` of those values (a package server that printed its key and exited put it in the tool error, the
REST body and the audit log: issue #53).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
import numpy as np
from anyio.abc import TaskGroup

from ard_mcp.errors import AgentError, AgentTimeout, AgentUnreachable, ArdError, InvalidArgument, NotFound, PermissionDenied, RateLimited
from ard_mcp.formats.messages import TrustFinding
from ard_mcp.formats.timestamps import utc_text
from ard_mcp.formats.untrusted import text_findings
from ard_mcp.invocation import tool_lists
from ard_mcp.invocation.audit import AuditLog, AuditRecord
from ard_mcp.invocation.calls import AgentClient, AgentTools, Invocation, Progress, Protocol_, Target, ToolSummary, TransportFactory
from ard_mcp.invocation.clients import client_for
from ard_mcp.invocation.clients.mcp_agent import McpAgentClient
from ard_mcp.invocation.clients.mcp_sessions import SessionPool
from ard_mcp.invocation.credentials import Credential, Credentialed
from ard_mcp.invocation.policy import Caller, InvocationPolicy
from ard_mcp.invocation.targets import Offline, target_of
from ard_mcp.invocation.tool_lists import DEFAULT_PAGE, ToolRanker, checked_name, screened
from ard_mcp.monitoring import metrics, tracing
from ard_mcp.net.guard import GuardedTransport, NetworkPolicy, Resolver, SystemResolver
from ard_mcp.packages.environment import ENVIRON_PREFIX
from ard_mcp.packages.relay import HOST, HostChannel
from ard_mcp.packages.runtime import Asked, Consent, PackageRuntime
from ard_mcp.redaction import Redactor
from ard_mcp.registry import Registry
from ard_mcp.search.visibility import Viewer

log = logging.getLogger(__name__)
TOOLS_TTL = 60.0
RESOLVED_TTL = 1.0
MAX_RESOLVED = 1000  # entries kept resolved at most (the cache is emptied when full)
MAX_WARNINGS = 10
MAX_NAMED = 20  # tool names an error lists before "and N more"
# Connections open at once to every agent together. A kept MCP session of a server that speaks the initialize
# handshake holds one (its standalone GET stream) and each call one more: with the 20 of the crawler's pools,
# 25 concurrent calls to one such server each waited for a connection until all 25 timed out at their limit.
MAX_CONNECTIONS = 256
CALLS = "call agents on private networks"  # what --allow-private-networks would allow, in a refusal
Resolved = tuple[str, TrustFinding | None, Target | Offline]


class Invoker:
    def __init__(
        self,
        registry: Registry,
        policy: InvocationPolicy,
        resolver: Resolver | None = None,
        keep: TaskGroup | None = None,
    ) -> None:
        """`keep`: the serving registry's background task group, where MCP sessions are kept between calls
        (`clients.mcp_sessions`) and package servers run; without it each MCP call opens its own session, and
        no package server is started."""
        self.registry = registry
        self.policy = policy
        self.resolver = resolver or SystemResolver()
        self.audit = AuditLog(registry.config.data_dir)
        self._tools: dict[tuple[str, Credential | None], tuple[float, list[ToolSummary]]] = {}
        self._ranker = ToolRanker(self._embed)
        self._resolved: dict[tuple[Registry, str, Viewer], tuple[float, Resolved]] = {}
        self._pool: GuardedTransport | None = None
        self._sessions = SessionPool(keep) if keep is not None else None
        environ = dict(os.environ)
        self.redactor = secrets_of(policy, environ)
        self.packages = PackageRuntime(registry.config.data_dir, policy.packages, keep, environ, self.redactor)
        self._mcp = McpAgentClient(self._sessions, self.packages)

    def _transport(self) -> httpx.AsyncBaseTransport:
        """One guarded connection pool for every call: a connection to an agent is kept alive between calls
        (made on first use, so a registry that never calls an agent opens none)."""
        if self._pool is None:
            self._pool = GuardedTransport(NetworkPolicy(self.policy.allow_private_networks, CALLS), self.resolver, MAX_CONNECTIONS)
        return self._pool

    def _transport_for(self, target: Target) -> TransportFactory:
        """The transport a call to `target` makes its requests through: the pool, with the operator's credential
        added to the requests whose URL its line names (`credentials.Credentialed`)."""
        credential = target.credential
        if credential is None:
            return self._transport
        return lambda: Credentialed(self._transport(), credential)

    def _embed(self, texts: list[str]) -> np.ndarray:
        """The registry's encoder, loaded on first use (a registry that never narrows a tool list loads none here)."""
        return self.registry.embedder.embed(texts)

    def _client(self, protocol: Protocol_) -> AgentClient:
        return self._mcp if protocol == "mcp" else client_for(protocol)

    async def aclose(self) -> None:
        self.packages.close_all()
        if self._sessions is not None:
            self._sessions.close_all()
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None

    async def _resolve(self, reference: str, viewer: Viewer, fresh: bool = False) -> Resolved:
        """`_target`, kept for `RESOLVED_TTL` seconds per registry, reference and viewer (failures are not kept);
        `fresh` reads it anew: a call that carries the person's answer checks it against the entry as it is now."""
        key, now = (self.registry, reference, viewer), time.monotonic()
        kept = self._resolved.get(key)
        if kept is not None and now - kept[0] < RESOLVED_TTL and not fresh:
            return kept[1]
        found = await anyio.to_thread.run_sync(self._target, reference, viewer)
        if len(self._resolved) >= MAX_RESOLVED:
            self._resolved.clear()
        self._resolved[key] = (now, found)
        return found

    def _target(self, reference: str, viewer: Viewer) -> Resolved:
        """The entry's target and trust finding (store reads: run in a worker thread, off the event loop)."""
        entry = self.registry.get(reference, viewer)
        found = target_of(entry.stored(), self.policy.limits)
        if isinstance(found, Target):  # the operator's credential for this agent, never the caller's
            found = dataclasses.replace(found, credential=self.policy.credentials.chosen(entry.publisher, found.url))
        return entry.identifier, self.registry.trust_of(entry.identifier), found

    async def tools(
        self,
        reference: str,
        viewer: Viewer,
        caller: Caller,
        tool: str | None = None,
        *,
        task: str | None = None,
        page_size: int = DEFAULT_PAGE,
        page_token: str | None = None,
        refused: ArdError | None = None,
        consent: Consent | None = None,
        host: HostChannel | None = None,
    ) -> AgentTools:
        """The entry's callable surface (`tool_lists`: screened, a page at a time, ordered by `task` where one
        is given): an MCP server's live tools/list (when invocation is allowed), an A2A agent's skills, an AIDIP
        agent's operations; with `tool`, that one tool with its whole description and input schema. An offline
        entry says why. `refused`: a refusal decided before (the rate limit), audited as this request's. A
        fetch from a remote server is audited, and so is a refusal; a list known without a call is not."""
        started = time.monotonic()
        record = AuditRecord(
            at="", caller=caller.name, identifier=reference, tool=tool or "", action="tools", outcome="refused", durationMs=0.0
        )
        try:
            if refused is not None:
                raise refused
            identifier, trust, target = await self._resolve(reference, viewer, fresh=consent is not None)
            record.identifier = identifier
            if isinstance(target, Offline):
                return AgentTools(identifier=identifier, tools=[], offline=target.reason, trust=trust)
            record.endpoint, record.protocol = target.url, target.protocol
            said: list[str] = []
            if target.protocol == "mcp":
                self.policy.check(identifier, trust.status if trust else None, caller.may_invoke)
                target, said = await self._started(target, consent, record)
            with _serving(host), _agent_span("tools", target):
                listed, fetched = await self._listed(target)
            shown = screened([ToolSummary.model_validate(self.redactor.value(t.model_dump())) for t in listed] if self.redactor else listed)
            if fetched:
                await self._observed(identifier, shown.tools)
            if tool is not None:
                page, following = [t for t in shown.tools if t.name == checked_name(tool)], None
                if not page:
                    raise NotFound(f"{identifier} has no tool {ascii(tool)[:80]}; get_agent_tools without a tool lists them")
            else:
                ordered = shown.tools if not task else await anyio.to_thread.run_sync(self._ranker.ranked, shown.tools, task)
                page, following = tool_lists.page(ordered, page_size, page_token, [identifier, task])
        except Exception as exc:
            self._failed(record, started, exc)
            raise
        answer = AgentTools(
            identifier=identifier,
            protocol=target.protocol,
            endpoint=target.url,
            tools=page,
            total=len(shown.tools),
            nextPageToken=following,
            trust=trust,
            warnings=[*said, *shown.warnings] or None,
        )
        if fetched:
            record.outcome, record.bytes = "ok", len(answer.model_dump_json())
            self._audited(record, started)
        return answer

    async def _observed(self, identifier: str, tools: list[ToolSummary]) -> None:
        """Keep what the server listed on its entry, indexed (`Indexer.observe_tools`); a failure to is logged,
        never the caller's: the list was fetched for the caller, the index is the registry's own business."""
        found = [{"name": t.name, "description": t.description or ""} for t in tools]
        try:
            await anyio.to_thread.run_sync(self.registry.indexer.observe_tools, identifier, found, utc_text(datetime.now(UTC), "seconds"))
        except ArdError as exc:
            log.warning("the tools %s listed were not kept on its entry: %s", identifier, exc.message)

    async def _listed(self, target: Target) -> tuple[list[ToolSummary], bool]:
        """The target's tools, and whether they were fetched from the agent now (an MCP server's are kept
        `TOOLS_TTL` seconds per endpoint and credential; other agents' are known from their entries)."""
        key = (target.url, target.credential)
        kept = self._tools.get(key)
        if kept is not None and time.monotonic() - kept[0] < TOOLS_TTL:
            return kept[1], False
        listed = await self._client(target.protocol).tools(target, self._transport_for(target))
        if target.protocol == "mcp":
            if len(self._tools) >= MAX_RESOLVED:
                self._tools.clear()
            self._tools[key] = (time.monotonic(), listed)
        return listed, target.protocol == "mcp"

    async def call(
        self,
        reference: str,
        tool: str | None,
        arguments: dict[str, Any],
        viewer: Viewer,
        caller: Caller,
        progress: Progress | None = None,
        refused: ArdError | None = None,
        consent: Consent | None = None,
        host: HostChannel | None = None,
    ) -> Invocation:
        """Call one tool of the entry `reference` names (`tool` may be left out where there is one), as
        `caller`, under the policy; every call is audited, refused ones too (`refused`: a refusal decided
        before, such as the rate limit's)."""
        started = time.monotonic()
        record = AuditRecord(at="", caller=caller.name, identifier=reference, tool=tool or "", outcome="refused", durationMs=0.0)
        try:
            if refused is not None:
                raise refused
            identifier, trust, target = await self._resolve(reference, viewer, fresh=consent is not None)
            record.identifier = identifier
            self.policy.check(identifier, trust.status if trust else None, caller.may_invoke)
            if isinstance(target, Offline):
                raise InvalidArgument(f"{identifier} cannot be called through this registry: {target.reason}")
            record.endpoint, record.protocol = target.url, target.protocol
            if not isinstance(arguments, dict):
                raise InvalidArgument("arguments: must be a JSON object")
            target, said = await self._started(target, consent, record)
            tool = record.tool = checked_name(tool) if tool is not None else await self._only_tool(target)
            with _serving(host), _agent_span("call", target, tool):
                outcome = await self._client(target.protocol).call(target, self._transport_for(target), tool, arguments, progress)
        except Exception as exc:
            self._failed(record, started, exc)
            raise
        texts = [self.redactor.text(text) for text in outcome.texts]
        found = (f.message() for i, text in enumerate(texts) for f in text_findings(f"result[{i}]", text))
        warnings = list(dict.fromkeys([*said, *found]))
        answer = Invocation(
            identifier=identifier,
            tool=tool,
            endpoint=target.url,
            protocol=target.protocol,
            result=self.redactor.value(outcome.result),
            isError=outcome.is_error,
            durationMs=round((time.monotonic() - started) * 1000, 1),
            trust=trust,
            warnings=warnings[:MAX_WARNINGS] or None,
        )
        record.outcome, record.bytes = "agent-error" if outcome.is_error else "ok", len(answer.model_dump_json())
        if outcome.is_error:
            record.detail = "the agent reported the call failed"
        self._audited(record, started)
        return answer

    async def consent_question(self, reference: str, viewer: Viewer, fresh: bool = False) -> Asked | None:
        """What to ask the person before the package server `reference` names is first installed and started,
        or None when there is nothing to ask (no package, approved already, or the person is not asked here);
        `fresh`: the entry read anew (a round that carries an answer asks about the entry as it is now)."""
        identifier, trust, target = await self._resolve(reference, viewer, fresh)
        if isinstance(target, Offline) or target.package is None or not (self.packages.policy.enabled and self.packages.policy.ask):
            return None
        return await self.packages.question(target.package, identifier, trust.status if trust else "self-asserted")

    async def _started(self, target: Target, consent: Consent | None, record: AuditRecord) -> tuple[Target, list[str]]:
        """A package server's target, consented to and installed (`packages.runtime`), and what its install did
        otherwise than the entry asked (`Installed.note`: dependencies resolved as of a later date than the
        release's), for the person to read beside the answer: said at every call, since a warm server was
        installed before this caller asked; any other target as it is."""
        if target.package is None:
            return target, []
        start, installed = await self.packages.prepare(target.package, consent)
        record.endpoint, record.integrity = start.key, installed.integrity
        said = [f"package {installed.spec.key()}: {installed.note}"] if installed.note else []
        return dataclasses.replace(target, url=start.key, start=start), said

    async def _only_tool(self, target: Target) -> str:
        """The tool to call when none is named: the agent's only one (an MCP server's from its tools/list, kept
        as `get_agent_tools` keeps it; an A2A skill or AIDIP operation, known without a call)."""
        names = [t.name for t in screened((await self._listed(target))[0]).tools]
        if len(names) == 1:
            return names[0]
        shown = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
        raise InvalidArgument(f"tool: this agent has {len(names)} tools, so name the one to call: {shown or 'none'}")

    def _failed(self, record: AuditRecord, started: float, exc: Exception) -> None:
        """Audit a failed call or tool-list fetch, refusals included, with every known secret redacted from what the
        error says (it goes to the caller too); an error that is not the registry's own is audited as `error`."""
        if isinstance(exc, ArdError):
            exc.message = self.redactor.text(exc.message)
            exc.args = (exc.message,)
            record.outcome, record.status, record.detail = _failure(exc), exc.http_status, exc.message
        else:
            record.outcome, record.detail = "error", f"{type(exc).__name__}: a fault of this registry's (its log says more)"
        self._audited(record, started)

    def _audited(self, record: AuditRecord, started: float) -> None:
        """Every call and tool-list fetch ends here, refused ones too: the audit log's line, and the metrics'."""
        took = time.monotonic() - started
        record.at = utc_text(datetime.now(UTC), "milliseconds")
        record.durationMs = round(took * 1000, 1)
        self.audit.append(record)
        metrics.invocation(record.action, record.protocol, record.outcome, took, record.bytes)


def secrets_of(policy: InvocationPolicy, environ: dict[str, str]) -> Redactor:
    """The values the operator configured that no answer may hold: the package secrets file's, the
    `ARD_MCP_PACKAGE_*` variables', and the agents' credentials (a bearer token without its `Bearer `)."""
    packages = policy.packages.secrets.values.values()
    environment = (value for name, value in environ.items() if name.startswith(ENVIRON_PREFIX))
    credentials = (line.value.removeprefix("Bearer ") for line in policy.credentials.lines)
    return Redactor([*packages, *environment, *credentials])


@contextlib.contextmanager
def _serving(host: HostChannel | None) -> Iterator[None]:
    """While a call for `host` runs: what its server asks mid-call goes to that host (`packages.relay`)."""
    token = HOST.set(host)
    try:
        yield
    finally:
        HOST.reset(token)


def _agent_span(action: str, target: Target, tool: str | None = None) -> contextlib.AbstractContextManager[object]:
    """A span for the request to the agent: the `traceparent` the agent is sent names it (`clients.bounds`)."""
    named = {"ard.invocation.tool": tool} if tool is not None else {}
    return tracing.span(f"agent {action}", {"ard.invocation.protocol": target.protocol, **named})


def _failure(exc: ArdError) -> str:
    if isinstance(exc, AgentError):
        return "agent-error"
    if isinstance(exc, AgentTimeout):
        return "timeout"
    if isinstance(exc, AgentUnreachable):
        return "unreachable"
    if isinstance(exc, NotFound):
        return "not-found"
    return "refused" if isinstance(exc, PermissionDenied | RateLimited) else "invalid"
