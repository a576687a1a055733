"""`ard-mcp serve` over stdio: a host's (`--shared`, or plain), a back-end's (`--backend`), or a person's in a terminal.

A host that starts plain `ard-mcp serve` is served by the standard-library front-end (`sharing.frontend.hosted`)
with the back-end in this same process, on one end of a socket pair (`serve_here`). Why: its first `tools/list`
took 1.10-1.12 s on the shared 2-core machine, most of it `import mcp` (0.8-0.9 s), over the 0.5 s a host may
wait; the front-end answers the handshake and the first `tools/list` from what a back-end of this install and
these settings answered before (`sharing.link.Hello`, 0.06 s) while this process imports and builds the server
in the background, exactly as for the `serve --shared` that `host-config` writes. One process still serves the
host and holds the data directory, stops when its host leaves, and lets the hosts started after it join it.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import IO, Any, TypeVar

from ard_mcp.assembly.settings import config_of, crawl_of, federation_of
from ard_mcp.errors import ArdError, DataDirInUse
from ard_mcp.monitoring import tracing
from ard_mcp.surfaces.cli.arguments import build_parser
from ard_mcp.surfaces.cli.log_setup import configure_logging
from ard_mcp.surfaces.cli.option_values import env_number
from ard_mcp.surfaces.cli.terminal_text import shown
from ard_mcp.surfaces.sharing import frontend

log = logging.getLogger("ard_mcp")
#: How long a plain `serve` that finds its directory held waits for the holder to take hosts: of hosts started
#: together (a desktop app starting its servers), one found the directory held by the back-end another's
#: `serve --shared` had just started, not listening yet (its imports and server, 1-2 s here), and exited "in use".
JOIN_WAIT_S = 10.0
T = TypeVar("T")


def serve_stdio(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """`ard-mcp ARGV` (`serve` over stdio, parsed as `args`): a host's through the front-end, a back-end's, or a
    terminal's (`surfaces.cli.terminal`, which also says when stdin brings nothing)."""
    if args.shared and not args.backend:
        return frontend.shared(argv, args.data_dir)
    if not args.backend and not sys.stdin.isatty() and not frontend.no_input():
        return frontend.hosted(argv, args.data_dir, partial(_serve_here, args, argv))
    from ard_mcp.index import datadir
    from ard_mcp.surfaces.sharing import backend

    config = config_of(args)
    # Claimed before the server is built and handed to it: a directory in use is a clear error and exit status,
    # not a traceback out of the server's task group, and no other process takes it meanwhile.
    server = _server(args, datadir.claim_for(config, frontend.HANDOVER_S if args.backend else 0.0))
    if args.backend:
        path = frontend.socket_path(config.data_dir.expanduser().absolute(), frontend.settings_of(argv))
        return backend.run(server(None), path, env_number("BACKEND_IDLE", backend.IDLE_S, float))
    from ard_mcp.surfaces.cli.terminal import run_stdio

    return run_stdio(server)


def serve_here(argv: Sequence[str], connection: socket.socket) -> threading.Thread | None:
    """`frontend.hosted`'s back-end for `ard-mcp ARGV` when the command line was not parsed yet (`frontend.quick`
    reached the front-end first): parsed, logging and tracing set up as `cli.main` does, then `_serve_here`."""

    def parsed() -> threading.Thread | None:
        args = build_parser().parse_args(frontend.command_words(argv))
        configure_logging(args.log_level, args.log_format)
        tracing.configure()
        return _started(args, argv, connection)

    return _or_exit(parsed)


def _serve_here(args: argparse.Namespace, argv: Sequence[str], connection: socket.socket) -> threading.Thread | None:
    """Serve the host's session on `connection` in a thread of this process, as the back-end of the data
    directory that the hosts started after it join (where one process alone may use it): that thread. None where
    a back-end of these settings holds the directory already (hosts' `serve --shared`, or another host's plain
    `serve`): the front-end then joins it. Any reason this server cannot start ends the process, saying why."""
    return _or_exit(partial(_started, args, argv, connection))


def _started(args: argparse.Namespace, argv: Sequence[str], connection: socket.socket) -> threading.Thread | None:
    from ard_mcp.index import datadir
    from ard_mcp.surfaces.sharing import backend

    config = config_of(args)
    directory = config.data_dir.expanduser().absolute()
    deadline, stopped = time.monotonic() + JOIN_WAIT_S, False
    while True:
        try:
            claimed = datadir.claim_for(config)
            break
        except DataDirInUse:
            if frontend.joinable(args.data_dir, argv):
                return None
            if time.monotonic() < deadline:
                time.sleep(0.1)  # a back-end another host started holds it and is not listening yet
                continue
            if not stopped and frontend.stop_idle(directory):
                stopped = True
                continue  # a back-end a search started held it, with no host: it has let it go
            raise
    server = _server(args, claimed)(None)
    # with a Chroma server, each host may have its own: nothing to listen for
    listening = frontend.socket_path(directory, frontend.settings_of(argv)) if datadir.exclusive(config) else None
    # ends when the host's session does (the host closed stdin), the registry closed
    serving = threading.Thread(target=_or_exit, args=(partial(backend.run, server, listening, own=connection),), name="ard-mcp back-end")
    serving.start()
    return serving


def _or_exit(call: Callable[[], T]) -> T:
    """`call()`, run in one of the front-end's threads, where nothing would say that it failed and the host would
    wait for ever: a refusal (the data directory in use, the store or the model at start, a bad setting) ends
    the process with the message and status the command line gives it; anything else with its traceback."""
    try:
        return call()
    except ArdError as exc:
        print(shown(f"ard-mcp: {exc.message}"), file=sys.stderr, flush=True)
        os._exit(2)
    except SystemExit as exc:  # the parser's and the settings' refusals, said as they are
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr, flush=True)
        os._exit(exc.code if isinstance(exc.code, int) else 2)
    except BaseException:
        log.exception("ard-mcp: the server stopped")
        sys.stderr.flush()
        os._exit(1)


def _server(args: argparse.Namespace, claimed: IO[str] | None) -> Any:
    """`closed -> the MCP server` for `args` (`closed` called once its registry is closed, or None), the data
    directory's claim `claimed` handed to it."""
    from ard_mcp.surfaces.cli.invocation_settings import invocation_policy
    from ard_mcp.surfaces.mcp.lazy_registry import freeze_when_warm
    from ard_mcp.surfaces.mcp.server import build_server
    from ard_mcp.surfaces.services import Services

    config = config_of(args)
    invocation = invocation_policy(args, stdio=True)
    services = Services(config.source, federation_of(args), crawl_of(args), args.trust_policy, invocation=invocation)
    freeze_when_warm()
    return lambda closed: build_server(config, crawl=crawl_of(args), services=services, closed=closed, claimed=claimed)
