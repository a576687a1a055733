"""The error objects of the three drafts, and which one a route answers with (its `Dialect`).

An error is answered in the object of the draft the route belongs to, never as a bare 500: an unexpected
exception is logged and answered as the spec's internal error, with a correlation id to find it in the log.
"""

from __future__ import annotations

import uuid
from enum import Enum

from pydantic import BaseModel
from starlette.responses import JSONResponse

from ard_mcp.errors import AgentError, ArdError, RateLimited
from ard_mcp.formats import aidip, xu
from ard_mcp.formats.messages import ErrorBody
from ard_mcp.monitoring.requests import request_id


class Dialect(Enum):
    """Which draft's error object a route answers with."""

    ARD = "ard"  # {"error": {"code", "message"}, "errorCode", "message"} (Appendix B + ard.openapi.yaml)
    XU = "xu"  # {"code", "message", "correlation_id"} (Xu §12)
    AIDIP = "aidip"  # {"error": {"code", "message", "details"?}} (AIDIP invocation errors)


ERROR_MODELS: dict[Dialect, type[BaseModel]] = {Dialect.ARD: ErrorBody, Dialect.XU: xu.XuError, Dialect.AIDIP: aidip.AidipError}


def error_response(dialect: Dialect, exc: ArdError, correlation_id: str | None = None) -> JSONResponse:
    correlation_id = correlation_id or request_id() or uuid.uuid4().hex  # the request's id in the logs (`monitoring.requests`)
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
