"""Asking the person, through their host, before a package server is first installed and started.

The question is an MCP form elicitation (`packages.consent.PackageConsent`: one yes/no for network access;
never a secret, which the spec forbids asking for in a form). It is asked by the SDK's resolver mechanism
(`Resolve`), because hosts speak two protocol versions: under 2025-11-25 an elicitation is a request the
server sends mid-call, under 2026-07-28 it rides an input-required result of the tool call, and a plain
`ctx.elicit` fails there; a resolver works under both. A host that cannot answer a form is not asked: the
call then fails saying how to approve the package from the command line.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit

from ard_mcp.errors import ArdError
from ard_mcp.packages.consent import PackageConsent
from ard_mcp.packages.runtime import Consent

Question = Callable[[str, Context], Awaitable[str | None]]
_QUESTIONS: weakref.WeakKeyDictionary[MCPServer[Any], Question] = weakref.WeakKeyDictionary()


def asks_with(server: MCPServer[Any], question: Question) -> None:
    """Let `server`'s tools ask the person `question(identifier, ctx)` (None: nothing to ask)."""
    _QUESTIONS[server] = question


def can_answer_a_form(ctx: Context) -> bool:
    """Whether the host declared form elicitation (a bare `elicitation: {}` means form, as the SDK reads it)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def ask_consent(identifier: str, ctx: Context) -> Elicit[PackageConsent] | None:
    """The resolver of a tool's `consent` parameter: the question where there is one to ask and a host to ask it."""
    question = _QUESTIONS.get(ctx.mcp_server)
    if question is None or not can_answer_a_form(ctx):
        return None
    try:
        text = await question(identifier, ctx)
    except ArdError:
        return None  # the tool itself says what is wrong with the entry
    return Elicit(text, PackageConsent) if text else None


def consent_of(outcome: ElicitationResult[PackageConsent]) -> Consent | None:
    """The person's answer, None when they were not asked; a declined or cancelled question ends the call."""
    if isinstance(outcome, AcceptedElicitation):
        return Consent(network=outcome.data.network) if isinstance(outcome.data, PackageConsent) else None
    raise ToolError(f"the package server was not approved ({outcome.action}): nothing was installed or started")
