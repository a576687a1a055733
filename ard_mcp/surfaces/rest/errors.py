"""The error objects of the three drafts, and which one a route answers with (its `Dialect`).

An error is answered in the object of the draft the route belongs to, never as a bare 500: an unexpected
exception is logged and answered as the spec's internal error, with a correlation id to find it in the log.

A server-side failure is told in full to an operator (a token that may write every publisher, as for the
metrics) and in general terms to everyone else: a store or Chroma server that does not answer was said with
its URL (`postgresql://user@host:port/db`), the driver's own words and the data directory's paths, which
tell an anonymous caller where the registry's parts run and what they are. The general message says what
failed (the store, the vector index) and the correlation id that finds the details in the operator's log.
"""

from __future__ import annotations

import uuid
from enum import Enum

from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from ard_mcp.errors import (
    AgentError,
    AgentTimeout,
    AgentUnreachable,
    ArdError,
    DataDirInUse,
    ModelMismatch,
    NotReady,
    RateLimited,
    StoreUnavailable,
    VectorIndexUnavailable,
)
from ard_mcp.formats import aidip, xu
from ard_mcp.formats.messages import ErrorBody
from ard_mcp.monitoring.requests import request_id, request_scope
from ard_mcp.surfaces.auth import TokenStore


class Dialect(Enum):
    """Which draft's error object a route answers with."""

    ARD = "ard"  # {"error": {"code", "message"}, "errorCode", "message"} (Appendix B + ard.openapi.yaml)
    XU = "xu"  # {"code", "message", "correlation_id"} (Xu §12)
    AIDIP = "aidip"  # {"error": {"code", "message", "details"?}} (AIDIP invocation errors)


ERROR_MODELS: dict[Dialect, type[BaseModel]] = {Dialect.ARD: ErrorBody, Dialect.XU: xu.XuError, Dialect.AIDIP: aidip.AidipError}
LATER = "try again later"
GENERAL: tuple[tuple[type[ArdError], str], ...] = (  # what anyone is told of a failure of the registry's own parts
    (StoreUnavailable, f"the registry's store cannot be reached; {LATER}"),
    (VectorIndexUnavailable, f"the registry's vector index cannot be reached; {LATER}"),
    (DataDirInUse, f"the registry is unavailable; {LATER}"),
    (ModelMismatch, "the registry's index does not match its embedding model"),
)
THE_AGENTS = (AgentError, AgentUnreachable, AgentTimeout)  # about the agent called, whose address its entry publishes


class NotReadyHere(NotReady):
    """`/readyz`'s refusal: the parts that did not answer and why (`message`), and the same without the why
    (`general`: the parts' names, no addresses or driver text)."""

    def __init__(self, message: str, general: str) -> None:
        super().__init__(message)
        self.general = general


def general_message(exc: ArdError, correlation_id: str) -> str | None:
    """What a caller who is not an operator is told instead of `exc.message`; None where the message is for
    everyone (a client's error, an agent's, or a failure worded for callers)."""
    if exc.http_status < 500 or isinstance(exc, THE_AGENTS):
        return None
    said = exc.general if isinstance(exc, NotReadyHere) else next((text for kind, text in GENERAL if isinstance(exc, kind)), "")
    if not said:
        return None
    return f"{said} (correlation id {correlation_id}; the operator's log has the details)"


def operator_asks() -> bool:
    """Whether the request being answered carries an operator's token (one that may write every publisher).
    The token store is the app's (`routes.AppState`, reached through the request's scope: `routes` itself
    stands on this module's neighbours, and importing it here would close a cycle)."""
    scope = request_scope()
    if scope is None:
        return False
    state = getattr(getattr(scope.get("app"), "state", None), "ard", None)
    tokens = getattr(getattr(state, "settings", None), "tokens", None)
    if not isinstance(tokens, TokenStore) or not tokens.configured:
        return False  # an open registry has no operator to prove: everyone is told the general message
    principal = tokens.principal(Headers(scope=scope))
    return principal is not None and principal.may_write("*")


def told(exc: ArdError) -> str:
    """`exc.message` as the caller of an MCP tool may read it: over HTTP, the general words for one who is not an
    operator (`general_message`: the store's URL reached anonymous MCP callers in a tool's error); over stdio,
    whose caller is the machine's own user, the whole message."""
    if request_scope() is None:
        return exc.message
    general = general_message(exc, request_id() or uuid.uuid4().hex)
    return general if general is not None and not operator_asks() else exc.message


def error_response(dialect: Dialect, exc: ArdError, correlation_id: str | None = None) -> JSONResponse:
    correlation_id = correlation_id or request_id() or uuid.uuid4().hex  # the request's id in the logs (`monitoring.requests`)
    general = general_message(exc, correlation_id)
    if general is not None and not operator_asks():
        shown = ArdError(general)  # the same code and status, the general words
        shown.code, shown.http_status = exc.code, exc.http_status
        exc = shown
    body: BaseModel
    if dialect is Dialect.XU:
        body = xu.error_body(exc, correlation_id)
    elif dialect is Dialect.AIDIP:
        body = aidip.error_body(exc)
    else:
        body = ErrorBody.of(exc.code, exc.message)
    headers = {"X-Correlation-Id": correlation_id}
    if exc.http_status == 401 and not isinstance(exc, AgentError):  # an agent's 401 is no challenge to this registry's caller
        headers["WWW-Authenticate"] = 'Bearer realm="ard-mcp"'
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    return JSONResponse(body.model_dump(mode="json", by_alias=True), status_code=exc.http_status, headers=headers)
