"""Running an installer (npm, pip) as a subprocess: a clean environment, a time limit, and only the tail of
its output kept.

Why not `anyio.run_process`: it keeps all of stdout and stderr in memory, and an install of a package with
hundreds of dependencies prints thousands of lines; only the end says what failed. Here both streams are
read as they come and only the last `TAIL_BYTES` kept; a process past its time is killed, with its group
(npm starts children of its own).

The environment is built, not inherited: the operator's variables that configure npm and pip
(`npm_config_*`, `PIP_*`, `NODE_OPTIONS`) would otherwise reach the installer, and the installer must use
only the registry and settings this room gives it. What is passed on is what reaching a registry needs on
this machine: the CA bundle the operator set for TLS (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`); on a machine
whose TLS goes through an inspecting proxy npm fails with SELF_SIGNED_CERT_IN_CHAIN without
`NODE_EXTRA_CA_CERTS`. The operator's proxy variables are not passed on: the installer's one way out is
`egress`, which chains to that proxy itself. Where the operator opts in to their own npm and pip configuration
(`installer_config`), npm is also given the operator's HOME and the variables their npmrc names, and pip their
netrc; nothing else of theirs.

PATH is a directory of the cache's (`.bin/`) holding `node` alone: npm is a `#!/usr/bin/env node` script and
needs nothing else, and with no `git`, `hg` or `svn` to be found a dependency on a repository cannot be
fetched by a version-control program either (measured: npm stops with `spawn git ENOENT`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

TAIL_BYTES = 8000
PASSED_ON = ("LANG", "LC_ALL", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR")


@dataclass(frozen=True)
class Finished:
    returncode: int
    tail: str  # the last TAIL_BYTES of stdout and stderr, interleaved as they came
    stdout: str  # the last TAIL_BYTES of stdout alone (an answer such as `npm view --json` prints)


class TimedOut(Exception):
    """The process ran past its time and was killed; the message ends with the tail of its output."""


def bare_path(cache: Path) -> str:
    """The installers' PATH: `<cache>/.bin/`, holding a link to the `node` found on ours (if any) and nothing else."""
    directory = cache / ".bin"
    directory.mkdir(parents=True, exist_ok=True)
    node = shutil.which("node")
    link = directory / "node"
    if node is not None and not (link.is_symlink() and os.readlink(link) == node):
        temporary = directory / f".node.{os.getpid()}"  # two installs at once each put a whole link in place
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(node)
        os.replace(temporary, link)
    return str(directory)


def clean_environment(cache: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The variables an installer runs with: PASSED_ON from ours, HOME set to `<cache>/.home` (so no dotfile of
    the user's is read), PATH set to `bare_path`, and `extra` (the proxy variables of `egress`, ...), which wins
    (the operator's HOME, where npm reads their npmrc: `installer_config`)."""
    found = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    return {**found, "HOME": str(cache / ".home"), "PATH": bare_path(cache), **extra}


async def run(what: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float) -> Finished:
    """Run `argv` (`what` names it in messages: "npm install") to its end within `timeout` seconds: TimedOut,
    after killing its process group, when it does not end in time."""
    tail, stdout = bytearray(), bytearray()

    async def keep(stream: ByteReceiveStream | None, *buffers: bytearray) -> None:
        if stream is None:
            return
        async for chunk in stream:
            for buffer in buffers:
                buffer.extend(chunk)
                del buffer[:-TAIL_BYTES]

    process = await anyio.open_process(list(argv), env=dict(env), cwd=cwd, start_new_session=True)
    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as group:
                group.start_soon(keep, process.stdout, tail, stdout)
                group.start_soon(keep, process.stderr, tail)
            returncode = await process.wait()
    except TimeoutError:
        said = _text(tail)[-1500:]
        raise TimedOut(f"{what} did not finish within {timeout:g} s" + (f": {said}" if said else "")) from None
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                await process.wait()
        await process.aclose()
    return Finished(returncode, _text(tail), _text(stdout))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _text(tail: bytearray) -> str:
    return bytes(tail).decode("utf-8", "replace").strip()
