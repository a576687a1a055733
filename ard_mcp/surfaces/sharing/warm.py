"""A host's first questions asked before any host asks them: `ard-mcp host-config --write` starts the configured
`serve --shared` once per protocol version and asks it the handshake and the first `tools/list`, as a host of
that version does, so the answers are kept for every data directory of the user's (`link.Hello`'s machine file).

Why: a front-end answers those at once from what a back-end of the same install and settings answered before
(0.05 s), but an install's very first start had nothing kept and waited for its back-end's start (0.75 s on the
shared 2-core machine, most of it the MCP SDK's imports), over #55's 0.5 s for a host's first `tools/list`.
The answers come from the back-end itself, through the same front-end a host starts, so they are exactly what a
host would get; the front-end checks a kept tool list against the back-end's at every start anyway. Standard
library only, as `frontend`.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence

from ard_mcp import __version__
from ard_mcp.surfaces.sharing.link import PROTOCOL_VERSION

_ASKER = {"name": "ard-mcp host-config", "version": __version__}


def questions(version: str, modern: bool) -> list[dict[str, object]]:
    """What a host of protocol `version` asks first: the handshake (`initialize`, or the 2026 era's
    `server/discover`) and the first page of `tools/list`."""
    if modern:
        asker = {"io.modelcontextprotocol/clientInfo": _ASKER, "io.modelcontextprotocol/clientCapabilities": {}}  # both required
        meta = {"_meta": {PROTOCOL_VERSION: version, **asker}}
        return [
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta},
        ]
    handshake = {"protocolVersion": version, "capabilities": {}, "clientInfo": _ASKER}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": handshake},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]


def warm(command: Sequence[str], env: Mapping[str, str], legacy: Sequence[str], modern: Sequence[str], timeout: float = 60.0) -> list[str]:
    """Ask `command` (a host's `ard-mcp serve --shared`, in `env`) each version's first questions, one session
    each; the versions whose every question was answered. Stops at the first session that fails or runs out of
    `timeout` (the first starts the back-end the others share)."""
    answered = []
    for version in (*legacy, *modern):
        if not _asked(command, env, questions(version, version in modern), timeout):
            break
        answered.append(version)
    return answered


def _asked(command: Sequence[str], env: Mapping[str, str], asked: list[dict[str, object]], timeout: float) -> bool:
    """One session: each question sent once the one before it is answered; whether all were."""
    try:
        process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(env))
    except OSError:
        return False
    assert process.stdin is not None and process.stdout is not None
    deadline = time.monotonic() + timeout
    waiting = selectors.DefaultSelector()
    waiting.register(process.stdout, selectors.EVENT_READ)
    buffered = b""
    try:
        for message in asked:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            while "id" in message and not _answers(buffered, message["id"]):
                left = deadline - time.monotonic()
                if left <= 0 or not waiting.select(left):
                    return False
                chunk = os.read(process.stdout.fileno(), 1 << 16)
                if not chunk:
                    return False
                buffered += chunk
        return True
    except OSError:
        return False
    finally:
        waiting.close()
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _answers(output: bytes, request: object) -> bool:
    """Whether `output` holds a result for the request whose id is `request`."""
    for line in output.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == request and "result" in message:
            return True
    return False
