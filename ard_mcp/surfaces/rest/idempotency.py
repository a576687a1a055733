"""The `Idempotency-Key` request header on the REST writes made with POST (IETF httpapi draft "The
Idempotency-Key HTTP Header Field"), so a client that lost an answer may send the write again safely.

POST is the method HTTP does not make idempotent: `POST /agents` answers 201 and then, sent again, 200
"unchanged", and a retried crawl crawls again. With a key, a retry of the same request (same route, query
and body) is answered with the first answer, status and body as they were, marked `Idempotent-Replayed:
true`, and nothing is written again. The same key with another request is refused with 422, and a retry
while the first request is still running with 409. PUT and DELETE are idempotent by their method and take
no key. The keys and answers are kept in the store (`ard_mcp.index.idempotency`, which says for how long),
scoped to the caller's credential. An answer of 500 or more is not kept, and frees the key: with honest
writes nothing was saved, so the retry runs again.

A key is the draft's Structured Field String (`"..."`, printable ASCII); a bare value of visible ASCII is
taken as the string it spells, as clients of earlier conventions send it. Anything else is a 400 in the
route's error object, naming what is wrong with the key.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
from starlette.requests import Request
from starlette.responses import Response

from ard_mcp.errors import ArdError, InvalidArgument
from ard_mcp.index.idempotency import Claim, KeptAnswer
from ard_mcp.surfaces.rest.routes import AppState, run

log = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_KEY = 255  # characters: a UUID is 36; a key is an identifier, not a payload
_NOT_KEPT = frozenset({"content-length", "transfer-encoding", "connection", "date", "server"})


def parse_key(values: Sequence[str]) -> str:
    """The key of the request's `Idempotency-Key` header fields, or InvalidArgument saying what is wrong."""
    if len(values) != 1:
        raise InvalidArgument(f"{HEADER}: send one key in one header field (got {len(values)})")
    value = values[0].strip(" \t")
    if value.startswith('"'):
        key = _sf_string(value)
    elif any(not 0x21 <= ord(c) <= 0x7E or c in '"\\,' for c in value):
        raise InvalidArgument(
            f'{HEADER}: a key is a quoted string of printable ASCII, e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324"; '
            "a bare key may hold visible ASCII but no space, comma, quote or backslash"
        )
    else:
        key = value
    if not key:
        raise InvalidArgument(f"{HEADER}: the key is empty; send a unique value per request, such as a UUID")
    if len(key) > MAX_KEY:
        raise InvalidArgument(f"{HEADER}: the key is {len(key)} characters long; at most {MAX_KEY}")
    return key


def _sf_string(value: str) -> str:
    """RFC 8941 §4.2.5: a quoted string of printable ASCII, `\\` escaping only `"` and `\\`."""
    out: list[str] = []
    chars = iter(value[1:])
    for c in chars:
        if c == "\\":
            escaped = next(chars, "")
            if escaped not in ('"', "\\"):
                raise InvalidArgument(f'{HEADER}: in a quoted key a backslash may only escape " or \\')
            out.append(escaped)
        elif c == '"':
            if next(chars, None) is not None:
                raise InvalidArgument(f"{HEADER}: nothing may follow the closing quote of the key")
            return "".join(out)
        elif not 0x20 <= ord(c) <= 0x7E:
            raise InvalidArgument(f"{HEADER}: a key holds printable ASCII only (found {c!r})")
        else:
            out.append(c)
    raise InvalidArgument(f"{HEADER}: the quoted key has no closing quote")


def fingerprint(request: Request, body: bytes) -> str:
    """What identifies a request for its key: method, route, query and body, byte for byte."""
    digest = hashlib.sha256(f"{request.method} {request.url.path}?{request.url.query}\n".encode())
    digest.update(body)
    return digest.hexdigest()


async def keyed(
    request: Request,
    state: AppState,
    needs_token_for: str,
    handled: Callable[[], Awaitable[Response]],
    refused: Callable[[ArdError], Response],
) -> Response:
    """`handled()`'s answer to a request with an `Idempotency-Key`, or the first answer given to its key.
    `refused` turns an error of the key's own (a bad key, 409, 422) into the route's error object."""
    try:
        scope = state.settings.tokens.writer(request.headers, needs_token_for).name  # 401 before the key is read
        key = parse_key(request.headers.getlist(HEADER))
        keys = state.open_registry().idempotency
        claim: Claim = await run(keys.claim, scope, key, fingerprint(request, await request.body()))
    except ArdError as exc:
        return refused(exc)
    if claim.replay is not None:
        replayed = Response(claim.replay.body, claim.replay.status)
        for name, value in [*claim.replay.headers, (REPLAYED, "true")]:
            replayed.headers.append(name, value)
        return replayed
    try:
        response = await handled()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _settle(keys.release, claim)
        raise
    body = getattr(response, "body", None)
    if response.status_code >= 500 or not isinstance(body, bytes):
        await _settle(keys.release, claim)
    else:
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _NOT_KEPT]
        await _settle(keys.answer, claim, KeptAnswer(response.status_code, headers, body))
    return response


async def _settle(step: Callable[..., None], *args: object) -> None:
    """Keep or free the key; if the store fails now, the answer still goes out (the write was made or not
    regardless), and the key stays held until its lease ends (`LEASE_SECONDS`), when a retry runs again."""
    try:
        await run(step, *args)
    except Exception as exc:
        log.warning("could not settle an %s (%s); it is free again when its lease ends", HEADER, exc)
