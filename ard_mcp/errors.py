"""The registry's failures, each with the ARD error code (v0.9 Appendix B) and HTTP status it maps to.

The core raises only these; the MCP tools turn them into `ToolError`s and the HTTP routes into
the spec's error object, so a caller on any surface sees the same specific message.
"""

from __future__ import annotations

from collections.abc import Iterator


class ArdError(Exception):
    """Base of every error the registry reports to a caller on purpose."""

    code = "INTERNAL_ERROR"
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(ArdError):
    """The request or the entry breaks a rule; the message names the field and the rule."""

    code = "INVALID_ARGUMENT"
    http_status = 400


class NotFound(ArdError):
    code = "NOT_FOUND"
    http_status = 404


class StaleEntry(ArdError):
    """A registration older than the stored entry: refused so an old copy never overwrites a newer one."""

    code = "STALE_METADATA"
    http_status = 409


class Conflict(ArdError):
    """Two ids of formats without URNs that map to one identifier: refused, never one replacing the other."""

    code = "ALREADY_EXISTS"
    http_status = 409


class IdempotencyKeyInUse(ArdError):
    """A request with an `Idempotency-Key` while the first request with that key is still being answered
    (IETF httpapi draft "The Idempotency-Key HTTP Header Field": 409); retrying later replays its answer."""

    code = "ABORTED"
    http_status = 409


class IdempotencyKeyReused(ArdError):
    """An `Idempotency-Key` already used with another request (another body, route or query): 422 by the
    draft, since replaying the first answer would answer a request that was not made."""

    code = "INVALID_ARGUMENT"
    http_status = 422


class DataDirInUse(ArdError):
    """Another process owns the data directory (two writers corrupt Chroma and race on SQLite)."""

    code = "UNAVAILABLE"
    http_status = 503


class ModelMismatch(ArdError):
    """The index was built with another embedding model or the model files are not the ones named."""

    code = "FAILED_PRECONDITION"
    http_status = 500


class Unauthenticated(ArdError):
    """A write without a valid bearer token on a registry that has tokens (ARD Appendix B)."""

    code = "UNAUTHENTICATED"
    http_status = 401


class PermissionDenied(ArdError):
    """Not allowed for this caller: a credential writing an entry of a publisher it is not scoped to, a registration
    failing its trust check under `--trust-policy refuse-invalid`, a web page of a foreign origin writing or using MCP."""

    code = "PERMISSION_DENIED"
    http_status = 403


class PayloadTooLarge(ArdError):
    """A request body over the configured limit, refused before it is read to the end."""

    code = "PAYLOAD_TOO_LARGE"
    http_status = 413


class UnsupportedMediaType(ArdError):
    """A body a browser could send cross-site without a CORS preflight (form, plain text or, for a write, no
    Content-Type at all), never JSON here."""

    code = "UNSUPPORTED_MEDIA_TYPE"
    http_status = 415


class MisdirectedRequest(ArdError):
    """A Host header this server is not configured to answer for (DNS-rebinding protection)."""

    code = "MISDIRECTED_REQUEST"
    http_status = 421


class MethodNotAllowed(ArdError):
    code = "METHOD_NOT_ALLOWED"
    http_status = 405


class VectorIndexUnavailable(ArdError):
    """The Chroma server named by --chroma-url cannot be reached."""

    code = "UNAVAILABLE"
    http_status = 503


class StoreUnavailable(ArdError):
    """The PostgreSQL server named by --store-url cannot be reached (or refused the connection)."""

    code = "UNAVAILABLE"
    http_status = 503


class NotReady(ArdError):
    """`/readyz`: the store or the vector index did not answer, so this process should be sent no traffic."""

    code = "UNAVAILABLE"
    http_status = 503


class RequestTimeout(ArdError):
    """A request body that did not arrive in time: a client trickling bytes would otherwise hold a worker."""

    code = "DEADLINE_EXCEEDED"
    http_status = 408


class RateLimited(ArdError):
    """Over a rate limit; `retry_after` is the seconds until the client's bucket holds a request again."""

    code = "RATE_LIMIT_EXCEEDED"
    http_status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(f"{message}; retry after {retry_after} s")
        self.reason = message
        self.retry_after = retry_after


class AgentError(ArdError):
    """The agent a caller invoked through the registry answered with an error of its own (its 4xx, its 5xx, a
    JSON-RPC error): passed back with the agent's status (a 5xx as 502) and message, marked as the agent's,
    not the registry's. It was reached: `AgentUnreachable` is for an agent that gave no answer."""

    code = "AGENT_ERROR"
    http_status = 400

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.http_status = status if 400 <= status < 500 else 502


class AgentUnreachable(ArdError):
    """The agent could not be reached or answered something that is not an answer (malformed JSON, too
    large, a broken stream, a refused address)."""

    code = "BAD_GATEWAY"
    http_status = 502


class AgentTimeout(ArdError):
    """The agent did not answer within the invocation's time limit."""

    code = "GATEWAY_TIMEOUT"
    http_status = 504


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, in order: the SDKs' task groups wrap what failed."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc
