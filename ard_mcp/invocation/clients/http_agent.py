"""Calling an AIDIP agent (draft-cui-ai-agent-discovery-invocation §5) or a Xu https binding: POST the input
JSON to the endpoint, read the answer by its status (2xx the output JSON, 4xx the agent's error object, 5xx
the agent's failure).

An agent with several operations behind one endpoint is told which by an `"operation"` field in the body,
the spelling the draft gives ("the JSON could include something like "operation": "translateText""); with
one operation or none the body is the input as it is. Redirects are followed only on the endpoint's own
origin, at most `MAX_REDIRECTS`, and only 307/308 (which keep the POST and its body): another host was
not cleared for this call, and the operator's credentials for this agent must not travel to it.
"""

from __future__ import annotations

from typing import Any

import httpx

from ard_mcp import __version__
from ard_mcp.errors import AgentError, AgentUnreachable, InvalidArgument
from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.invocation.calls import Outcome, Progress, Target, ToolSummary, TransportFactory
from ard_mcp.invocation.clients.bounds import WAITING_EVERY, Bounded, raise_named, strings_in, text_of, waited, within

MAX_REDIRECTS = 3
ANY_OPERATION = "invoke"  # the one tool of an agent that names no operations
_ERROR_CHARS = 200  # the most of a body that is not an AIDIP error object quoted in an error
_JSON_TYPES = ("application/json", "text/json")


class HttpAgentClient:
    """`AgentClient` for `Target.protocol == "http"`: `url` the endpoint, `operations` the entry's AIDIP
    operations (name, description, `inputs` schema). An agent tells nothing while it works: a caller that takes
    progress hears how long it has waited every `waiting_every` seconds (`bounds.waited`)."""

    def __init__(self, waiting_every: float = WAITING_EVERY) -> None:
        self._waiting_every = waiting_every

    async def tools(self, target: Target, transport: TransportFactory) -> list[ToolSummary]:
        operations = _operations(target)
        if not operations:
            return [ToolSummary(name=ANY_OPERATION, description="POST the input JSON to the agent.", inputSchema={"type": "object"})]
        return [
            ToolSummary(
                name=name,
                description=text_of(operation.get("description")),
                inputSchema=operation["inputs"] if isinstance(operation.get("inputs"), dict) else None,
            )
            for name, operation in operations.items()
        ]

    async def call(
        self, target: Target, transport: TransportFactory, name: str, arguments: dict[str, Any], progress: Progress | None
    ) -> Outcome:
        operations = _operations(target)
        if name not in operations and not (name == ANY_OPERATION and not operations):
            raise InvalidArgument(f"{name!r} is not an operation of this agent; its operations: {', '.join(operations) or ANY_OPERATION}")
        body = {**arguments, "operation": name} if len(operations) > 1 else arguments
        bounded = Bounded(transport(), target.limits.max_bytes)
        headers = {"User-Agent": f"ard-mcp/{__version__}", "Accept": "application/json"}
        timeout = httpx.Timeout(target.limits.total, connect=target.limits.connect)
        try:
            with within(target.limits):
                async with httpx.AsyncClient(transport=bounded, headers=headers, timeout=timeout) as client:
                    return await waited(lambda: _post(client, target.url, body, target.limits.max_bytes), progress, self._waiting_every)
        except Exception as exc:  # the guard's refusal and the size cap come as they are, httpx's errors as httpx's
            raise_named(exc, bounded, _no_protocol_failure)


def _no_protocol_failure(leaf: BaseException) -> None:
    """Plain HTTP has no failures of its own beyond the status, which `_outcome` reads."""


def _operations(target: Target) -> dict[str, dict[str, Any]]:
    return {op["name"]: dict(op) for op in target.operations if isinstance(op.get("name"), str) and op["name"]}


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any], max_bytes: int) -> Outcome:
    origin = httpx.URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        response = await client.post(url, json=body)
        if response.status_code not in (307, 308) or "location" not in response.headers:
            return _outcome(response, max_bytes)
        location = response.headers["location"]
        try:
            url = str(response.url.join(location))
            moved = httpx.URL(url)
        except httpx.InvalidURL:
            raise AgentUnreachable(f"the agent redirected to {location[:_ERROR_CHARS]!r}, which is not a URL") from None
        if (moved.scheme, moved.host, moved.port) != (origin.scheme, origin.host, origin.port):
            raise AgentUnreachable(f"the agent redirected to another origin, {moved.scheme}://{moved.netloc.decode()}: not followed")
    raise AgentUnreachable(f"the agent redirected more than {MAX_REDIRECTS} times")


def _outcome(response: httpx.Response, max_bytes: int) -> Outcome:
    """The answer by its status: the output JSON, the agent's error (4xx), or its failure (5xx and the rest).
    The JSON is read by the one bounded reader (`bounded_json`): an answer nested 10,000 deep, with a
    10,000-digit number or an unpaired surrogate is the agent's malformed answer, not a registry failure."""
    status = response.status_code
    if 200 <= status < 300:
        if status == 204 or not response.content:
            return Outcome(result=None)
        kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind not in _JSON_TYPES and not kind.endswith("+json"):
            raise AgentUnreachable(f"the agent answered {status} with {kind or 'no content type'}, not JSON")
        try:
            result = read_json(response.content, max_bytes=max_bytes)
        except UnreadableJson as exc:
            raise AgentUnreachable(f"the agent answered {status} with malformed JSON: {exc}") from None
        return Outcome(result=result, texts=strings_in(result))
    if 400 <= status < 500:
        raise AgentError(f"the agent answered {status}: {_reason(response, max_bytes)}", status)
    if status >= 500:
        raise AgentError(f"the agent failed with {status}: {_reason(response, max_bytes)}", status)
    raise AgentUnreachable(f"the agent answered {status}, which is not an answer to a POST")


def _reason(response: httpx.Response, max_bytes: int) -> str:
    """The message of an AIDIP error object ({"error": {"code", "message"}}), else the start of the body."""
    try:
        error = read_json(response.content, max_bytes=max_bytes).get("error")
    except (UnreadableJson, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code")
        return f"{error['message']} ({code})" if isinstance(code, str) else error["message"]
    text = response.content[:_ERROR_CHARS].decode("utf-8", "replace").strip()
    return text or response.reason_phrase
