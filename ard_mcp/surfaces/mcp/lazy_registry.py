"""The MCP server's registry, opened when first needed, and how a tool reaches it: a server over stdio claims
its data directory at start and opens the registry on the first request or the warm-up; the HTTP app hands
its MCP server the registry it opened itself."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from mcp.server.mcpserver import Context

from ard_mcp.config import Config
from ard_mcp.errors import ArdError, NotReady
from ard_mcp.index import datadir

if TYPE_CHECKING:  # imported when first opened: numpy, SQLite and the ranking, which tools/list needs none of
    from ard_mcp.registry import Registry

log = logging.getLogger(__name__)
_frozen_when_warm = threading.Event()


def freeze_when_warm() -> None:
    """For a process that does nothing but serve (`ard-mcp serve`): once warmed up, what it loaded (every module,
    the model, the index, the search's copy of the store) is moved out of the cyclic garbage collector's sight
    (`gc.freeze`), as long-running Python servers do. Why: each full collection walked those 90,000-140,000 objects
    again, 76-86 ms with the GIL held, once every ~200 searches on the bundled snapshot (70 ms at 100,000
    agents): every request in flight stalled, and it averaged 0.4 ms a search; with them frozen a full
    collection took 11 ms. No `gc.collect()` first, though frozen garbage is then never freed (a few dozen
    objects at warm-up, measured): its ~100 ms with the GIL held, just after a start, made the PostgreSQL run
    of `tests/test_reliability.py`'s SIGKILL test fail 4 times in 21, against 1 in 24 before this change and 2
    in 24 with the freeze alone. That failure was older than the freeze, a pause only made it likelier: an
    agent's pending mark cleared by an earlier write's send, fixed since (`writes.put_agent`); the collection
    was not tried again. Not for a
    process that opens and closes registries, such as the tests': a frozen object is never collected if it
    ends up in a reference cycle."""
    _frozen_when_warm.set()


def warm_up_soon(warm_up: Callable[[], None], delay: float = 1.0) -> None:
    """Warm up in the background once the client's handshake is likely over: importing Chroma and
    onnxruntime holds the GIL for about a second, which would otherwise delay the first `tools/list`
    (measured 0.85 s -> 1.09 s). A request that comes first loads what it needs itself. A warm-up that fails
    (the store down at start) is logged in a line, not a thread's traceback."""

    def warmed() -> None:  # a store or index down at start: said once; the first request that needs them loads them
        try:
            warm_up()
        except ArdError as exc:
            log.warning("warming up was put off (the first request that needs the index loads it): %s", exc.message)
            return
        if _frozen_when_warm.is_set():
            gc.freeze()
            log.debug("warmed up: %d objects frozen out of the garbage collector's way", gc.get_freeze_count())

    timer = threading.Timer(delay, warmed)
    timer.daemon = True
    timer.start()


class Opening:
    """The server's own registry, opened by the first request or by the warm-up, whichever comes first.

    The data directory is claimed at start, so a directory in use still fails the start with its clear
    error; opening the registry itself (numpy, SQLite, the ranking: ~0.15 s) waits until it is needed."""

    def __init__(self, config: Config, claimed: IO[str] | None = None) -> None:
        """`claimed`: the directory's claim, held already by the caller (`build_server`)."""
        self._config = config
        self._claimed = claimed if claimed is not None else datadir.claim_for(config)
        self._registry: Registry | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def ready(self) -> Registry | None:
        """The registry if it is open, without waiting for it."""
        return self._registry

    def __call__(self) -> Registry:
        with self._lock:
            if self._closed:
                raise NotReady("the server is stopping")
            if self._registry is None:
                from ard_mcp.registry import Registry

                self._registry = Registry(self._config, claimed=self._claimed)
                if self._config.starter is not None:
                    _start_with(self._registry, self._config.starter)
            return self._registry

    def warm_up(self) -> None:
        """Why it checks `_closed`: a host that leaves while the warm-up runs closes the registry under it (the
        PostgreSQL store's pool closed: "already closed"), or before it starts, when the warm-up would open a
        registry again in a process that is exiting; neither is an error of the server's."""
        try:
            self().warm_up()
        except ArdError as exc:  # e.g. an index built with another model: every tool call says so too
            if not self._closed:
                log.error("%s", exc.message)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._registry is not None:
                self._registry.close()
            else:
                datadir.release(self._claimed)


def _start_with(registry: Registry, starter: Path) -> None:
    """A new data directory gets the snapshot before the first request is answered (the request waits the
    few seconds it takes); one that ever held anything gets nothing. A failure is logged and the registry
    serves as it is: a person's server must start whatever the snapshot does."""
    from ard_mcp.index import snapshot

    try:
        snapshot.add_if_new(registry.store, registry.indexer, registry.model_spec.id, starter)
    except (OSError, ValueError, KeyError, ArdError) as exc:
        log.error("the bundled snapshot of public MCP servers was not added: %s", getattr(exc, "message", exc))


def registry_of(ctx: Context) -> Registry:
    opened = cast("Callable[[], Registry]", ctx.request_context.lifespan_context)  # what `build_server`'s lifespan yields
    return opened()


def open_registry(ctx: Context) -> Registry | None:
    """The registry where it is open already (the HTTP app's always is), without waiting; None while the
    server's own is still to be opened (`registry_of` opens it, in a worker thread)."""
    opened = cast("Callable[[], Registry]", ctx.request_context.lifespan_context)
    return opened.ready if isinstance(opened, Opening) else opened()
