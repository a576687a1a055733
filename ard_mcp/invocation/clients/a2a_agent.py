"""Calling an A2A agent: its card's skills are its tools, a call is one `message/send` (a2a-sdk's client, over
JSON-RPC or HTTP+JSON, never gRPC, whose connections the network policy could not see) and, where the agent
answers with a task still running, `tasks/get` until the task ends, all within the call's time limit.

The message goes with `returnImmediately` (the client's `polling`): the agent answers at once with a message or
a task, and a running task is polled. So the registry holds no request open for as long as a task runs, and
an agent that holds a send until its task ends and one that never does take the same path.

Where the caller takes progress (`call_agent` over MCP: the SDK does not say whether the host asked for it)
and the card says the agent streams, the message goes as `message/stream` instead: each status update is
passed on as a progress notification as the agent sends it, and the task is read once more when the stream
ends (its updates are not the whole task). Polling passes on the changes it sees, at most one a poll.

The a2a SDK is imported inside `call` only: it is large, and neither `ard-mcp --help` nor a server's first
tools/list should pay for it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from ard_mcp.errors import AgentError, AgentTimeout, AgentUnreachable, ArdError, InvalidArgument
from ard_mcp.invocation.calls import Outcome, Progress, Target, ToolSummary, TransportFactory
from ard_mcp.invocation.clients.bounds import Bounded, raise_named, strings_in, text_of, within

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types import AgentCard, Message, StreamResponse, Task, TaskStatus

INPUT = 'Input: {"text": "the message"}; any other fields go along as one data part.'
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The message to the agent."}},
    "additionalProperties": True,
    "description": "Any fields besides `text` go to the agent as one data part.",
}
"""A skill has no input schema (a card names input media types, not fields): the agent takes a message. This
is the message the call builds, so a host knows what to send."""
ANY_SKILL = "message"  # the one tool of an agent whose card lists no skills
BINDINGS = ("JSONRPC", "HTTP+JSON")
_FIRST_POLL = 0.05  # seconds before the first tasks/get, doubled each time up to _LAST_POLL
_LAST_POLL = 1.0
_RUNNING = ("submitted", "working")
_FAILED = ("failed", "rejected", "canceled", "auth-required")
_PROGRESS_CHARS = 200  # the most of a status message passed on as a progress message


class A2aAgentClient:
    """`AgentClient` for `Target.protocol == "a2a"`: `url` the interface to call, `transport_kind` its
    protocol binding, `operations` the card's skills (else `card["skills"]`)."""

    async def tools(self, target: Target, transport: TransportFactory) -> list[ToolSummary]:
        skills = _skills(target)
        if not skills:
            return [ToolSummary(name=ANY_SKILL, description=f"Send the agent a message. {INPUT}", inputSchema=INPUT_SCHEMA)]
        return [
            ToolSummary(
                name=skill_id, description="\n".join(filter(None, (text_of(skill.get("description")), INPUT))), inputSchema=INPUT_SCHEMA
            )
            for skill_id, skill in skills.items()
        ]

    async def call(
        self, target: Target, transport: TransportFactory, name: str, arguments: dict[str, Any], progress: Progress | None
    ) -> Outcome:
        skills = _skills(target)
        if name not in skills and not (name == ANY_SKILL and not skills):
            raise InvalidArgument(f"{name!r} is not a skill of this agent; its skills: {', '.join(skills) or ANY_SKILL}")
        from a2a.client import ClientConfig, ClientFactory
        from a2a.types import GetTaskRequest, SendMessageRequest

        card = _card(target)
        streaming = progress is not None and card.capabilities.streaming
        told = _Told(progress)
        bounded = Bounded(transport(), target.limits.max_bytes)
        try:
            with within(target.limits):
                timeout = httpx.Timeout(target.limits.total, connect=target.limits.connect)
                async with httpx.AsyncClient(transport=bounded, timeout=timeout) as http:
                    config = ClientConfig(
                        streaming=streaming, polling=not streaming, httpx_client=http, supported_protocol_bindings=list(BINDINGS)
                    )
                    client = ClientFactory(config).create(card)
                    task, task_id = None, None
                    async for reply in client.send_message(SendMessageRequest(message=_message(name if skills else None, arguments))):
                        if reply.HasField("message"):
                            return _outcome({"parts": _parts(reply.message)}, False)
                        task_id = await told.event(reply) or task_id
                        task = reply.task if reply.HasField("task") else task
                    if task_id is None:
                        raise AgentUnreachable("the agent answered message/send with neither a message nor a task")
                    if streaming or task is None:  # the stream's updates are not the whole task: read it as it ended
                        task = await client.get_task(GetTaskRequest(id=task_id))
                    return _task_outcome(await _followed(client, task, told))
        except Exception as exc:
            raise_named(exc, bounded, _a2a_failure)


@dataclass
class _Told:
    """The task's status changes passed on to `progress` as they are seen: the count so far, the state and
    the start of the agent's status message."""

    progress: Progress | None
    seen: int = 0
    last: tuple[str, str] | None = None

    async def event(self, reply: StreamResponse) -> str | None:
        """Pass on the status a task or status update carries; the task's id, if it names one."""
        if reply.HasField("task"):
            await self.status(reply.task.status)
            return str(reply.task.id)
        if reply.HasField("status_update"):
            await self.status(reply.status_update.status)
            return str(reply.status_update.task_id)
        return None

    async def status(self, status: TaskStatus) -> None:
        text = " ".join(p.text for p in status.message.parts if p.text).strip() if status.HasField("message") else ""
        now = (_state_name(status.state), text[:_PROGRESS_CHARS])
        if self.progress is None or now == self.last:
            return
        self.last, self.seen = now, self.seen + 1
        await self.progress(self.seen, None, f"{now[0]}: {now[1]}" if now[1] else now[0])


def _skills(target: Target) -> dict[str, Mapping[str, Any]]:
    """The card's skills by id (a skill without one by its name), as registered."""
    listed = target.operations or tuple((target.card or {}).get("skills") or ())
    found: dict[str, Mapping[str, Any]] = {}
    for skill in listed:
        key = (skill.get("id") or skill.get("name")) if isinstance(skill, Mapping) else None
        if isinstance(key, str) and key:
            found.setdefault(key, skill)
    return found


def _card(target: Target) -> AgentCard:
    """The registered card with one interface: the URL this call was cleared for, with the card's protocol
    version for it (0.3 and 1.0 agents speak different JSON-RPC), never another URL the card names."""
    from a2a.client.card_resolver import parse_agent_card
    from a2a.types import AgentCard, AgentInterface
    from google.protobuf.json_format import ParseError

    try:
        card = parse_agent_card(copy.deepcopy(dict(target.card))) if target.card else AgentCard()
    except ParseError as exc:
        raise AgentUnreachable(f"the registered agent card cannot be read: {exc}") from None
    listed = list(card.supported_interfaces)
    same = [i for i in listed if i.url == target.url]
    binding = target.transport_kind or (same[0].protocol_binding if same else "JSONRPC")
    if binding not in BINDINGS:
        raise AgentUnreachable(f"the agent's protocol binding {binding} is not one the registry calls ({', '.join(BINDINGS)})")
    version = (same or listed or [AgentInterface()])[0].protocol_version
    interface = AgentInterface(url=target.url, protocol_binding=binding, protocol_version=version, tenant=same[0].tenant if same else "")
    del card.supported_interfaces[:]
    card.supported_interfaces.append(interface)
    return card


def _message(skill: str | None, arguments: dict[str, Any]) -> Message:
    """A user message: `text` as a text part, the other arguments (all of them without `text`) as a data part,
    and the skill in the metadata (A2A has no field that names a skill: the agent routes on its own)."""
    from a2a.helpers.proto_helpers import new_data_part, new_text_part
    from a2a.types import Message, Role

    text = arguments.get("text")
    rest = {k: v for k, v in arguments.items() if k != "text"} if isinstance(text, str) else arguments
    parts = [new_text_part(text)] if isinstance(text, str) and text else []
    if rest or not parts:
        parts.append(new_data_part(rest))
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=parts)
    if skill is not None:
        message.metadata.update({"skill": skill})
    return message


async def _followed(client: Client, task: Task, told: _Told) -> Task:
    """The task polled with `tasks/get` until it is no longer running, the delay doubling from 50 ms to 1 s
    (`within` ends the wait at the call's time limit), each status change told."""
    from a2a.types import GetTaskRequest

    delay = _FIRST_POLL
    await told.status(task.status)
    while _state(task) in _RUNNING:
        await anyio.sleep(delay)
        delay = min(delay * 2, _LAST_POLL)
        task = await client.get_task(GetTaskRequest(id=task.id))
        await told.status(task.status)
    return task


def _state(task: Task) -> str:
    return _state_name(task.status.state)


def _state_name(state: int) -> str:
    from a2a.types import TaskState

    return str(TaskState.Name(state)).removeprefix("TASK_STATE_").lower().replace("_", "-")


def _parts(message: Message) -> list[dict[str, Any]]:
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(part) for part in message.parts]


def _task_outcome(task: Task) -> Outcome:
    """The task's artifacts and its last status message; an error where it failed, was rejected or canceled,
    or needs credentials the registry does not have."""
    from google.protobuf.json_format import MessageToDict

    state = _state(task)
    result: dict[str, Any] = {"taskId": task.id, "state": state}
    if task.artifacts:
        result["artifacts"] = [MessageToDict(artifact) for artifact in task.artifacts]
    if task.status.HasField("message"):
        result["message"] = _parts(task.status.message)
    return _outcome(result, state in _FAILED)


def _outcome(result: dict[str, Any], is_error: bool) -> Outcome:
    parts = [result.get("parts"), result.get("message"), [a.get("parts") for a in result.get("artifacts", ())]]
    return Outcome(result=result, is_error=is_error, texts=strings_in(parts))


def _a2a_failure(leaf: BaseException) -> ArdError | None:
    """An HTTP status, or the agent's own A2A error (its 4xx-class errors passed back as the agent's)."""
    from a2a.client import A2AClientError, A2AClientTimeoutError
    from a2a.utils.errors import A2A_ERROR_MAPPING, A2AError

    if isinstance(leaf, A2AClientTimeoutError):
        return AgentTimeout(f"the agent did not answer in time: {leaf}")
    cause = leaf.__cause__
    if isinstance(leaf, A2AClientError) and isinstance(cause, httpx.HTTPStatusError):
        status = cause.response.status_code
        if 400 <= status < 500:
            return AgentError(f"the agent answered {status}: {cause.response.reason_phrase}", status)
        return AgentError(f"the agent failed with {status}: {cause.response.reason_phrase}", status)
    if isinstance(leaf, A2AClientError):
        return AgentUnreachable(f"the agent's answer is not an A2A one: {leaf}")
    if isinstance(leaf, A2AError):
        mapping = A2A_ERROR_MAPPING.get(type(leaf))
        status = mapping.http_code if mapping else 400
        return AgentError(f"the agent {'failed' if status >= 500 else 'refused the message'}: {leaf.message}", status)
    return None
