"""Asking the person, through their host, before a package server is first installed and started.

The question is an MCP form elicitation (`packages.consent.PackageConsent`: yes/no for network access and
for web pages; never a secret, which the spec forbids asking for in a form). It is asked by the SDK's
resolver mechanism (`Resolve`), because hosts speak two protocol versions: under 2025-11-25 an elicitation
is a request the server sends mid-call, under 2026-07-28 it rides an input-required result of the tool call,
and a plain `ctx.elicit` fails there; a resolver works under both. A host that cannot answer a form is not
asked: the call then fails saying how to approve the package from the command line.

Three resolvers, so that the answer carries the digest of exactly what the person was shown: `shown_launch`
computes the question once per round (the SDK runs a resolver once per round however many depend on it),
`ask_consent` asks it, and `consent_answer` joins the answer to the digest the question showed. The tool
then prepares the launch as the entry reads now, and runs it only if its digest is the one answered: an
entry re-registered while the person read the question is refused, not run (issue #53; under 2026-07-28 the
SDK also asks again when the question's text changed between rounds).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve

from ard_mcp.errors import ArdError
from ard_mcp.packages.consent import FolderConsent, PackageConsent, form
from ard_mcp.packages.runtime import Asked, Consent

Question = Callable[[str, Context], Awaitable[Asked | None]]
_QUESTIONS: weakref.WeakKeyDictionary[MCPServer[Any], Question] = weakref.WeakKeyDictionary()


def asks_with(server: MCPServer[Any], question: Question) -> None:
    """Let `server`'s tools ask the person `question(identifier, ctx)` (None: nothing to ask)."""
    _QUESTIONS[server] = question


def can_answer_a_form(ctx: Context) -> bool:
    """Whether the host declared form elicitation (a bare `elicitation: {}` means form, as the SDK reads it)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def shown_launch(identifier: str, ctx: Context) -> Asked | None:
    """The question there is to ask, where there is one and a host to ask it."""
    question = _QUESTIONS.get(ctx.mcp_server)
    if question is None or not can_answer_a_form(ctx):
        return None
    try:
        return await question(identifier, ctx)
    except ArdError:
        return None  # the tool itself says what is wrong with the entry


async def ask_consent(asked: Annotated[Asked | None, Resolve(shown_launch)]) -> Elicit[PackageConsent] | None:
    """The question, with a field for the folder or file where the launch works on one."""
    if asked is None:
        return None
    return Elicit(asked.text, form(asked.asks_for, asked.needs_network))


async def consent_answer(
    asked: Annotated[Asked | None, Resolve(shown_launch)],
    outcome: Annotated[ElicitationResult[PackageConsent], Resolve(ask_consent)],
) -> Consent | None:
    """The person's answer with the digest of the launch they were shown, None when they were not asked; a
    declined or cancelled question ends the call."""
    if not isinstance(outcome, AcceptedElicitation):
        raise ToolError(f"the package server was not approved ({outcome.action}): nothing was installed or started")
    if asked is None or not isinstance(outcome.data, PackageConsent):
        return None
    folder = outcome.data if isinstance(outcome.data, FolderConsent) else None
    return Consent(
        network=outcome.data.network,
        web_pages=outcome.data.web_pages,
        plan=asked.plan,
        path=folder.path if folder is not None else None,
        writable=folder.writable if folder is not None else False,
    )
