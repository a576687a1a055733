"""Readiness apart from liveness: `/readyz` answers 200 only while this process can answer a search, that is
while its store and its vector index both answer a cheap query now, and 503 naming what did not otherwise;
`/healthz` answers while the process runs.

They are two because an orchestrator acts on them differently: it restarts a process whose liveness fails
and sends no traffic to one that is not ready. Every process shares one PostgreSQL and one Chroma server, so
an outage of either makes all of them unready at once; restarting them all would not bring the database
back, and each would load its model again once it is. So `/healthz` does not depend on the store: it still
counts the entries, but leaves the count out rather than failing when the store does not answer in time.

Each check runs in a worker thread under a deadline (`CHECK_SECONDS`): a store behind a dropped network path
hangs rather than refusing the connection, and a probe must still be answered at once. A check's thread that
outlives its deadline holds the check's own limiter until its call returns, so probes meanwhile are told so
at once instead of stacking up threads (or taking the request handlers' ones). Whatever a check raises is a
reason for 503, never a 500.

From a SIGTERM on, the process answers 503 at once without asking anything (`stop`): it is about to close its
listener (`draining`), and a proxy that asks `/readyz` must stop sending it requests before that.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from ard_mcp.errors import ArdError, NotReady
from ard_mcp.registry import Registry
from ard_mcp.surfaces.rest.errors import NotReadyHere

CHECK_SECONDS = 2.0  # each check's deadline; they run at once, so a probe is answered within about this


@dataclass
class Readiness:
    """One process's checks, each with a limiter of one thread (made on first use, inside the event loop)."""

    timeout: float = CHECK_SECONDS
    stopping: bool = False  # set by `stop`, from the SIGTERM handler
    _limiters: dict[str, anyio.CapacityLimiter] = field(default_factory=dict)

    def _limiter(self, name: str) -> anyio.CapacityLimiter:
        if name not in self._limiters:
            self._limiters[name] = anyio.CapacityLimiter(1)
        return self._limiters[name]

    async def ask(self, name: str, what: str, call: Callable[[], object]) -> float:
        """Milliseconds `call` took to return; NotReady saying why when it raised or did not return in time."""
        limiter = self._limiter(name)
        if limiter.borrowed_tokens:
            raise NotReady(f"{what}: the previous check has not had an answer yet (over {self.timeout:g} s)")
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.timeout):
                await anyio.to_thread.run_sync(call, abandon_on_cancel=True, limiter=limiter)
        except TimeoutError:
            raise NotReady(f"{what} did not answer within {self.timeout:g} s") from None
        except ArdError as exc:
            raise NotReady(f"{what}: {exc.message}") from None
        except Exception as exc:
            raise NotReady(f"{what}: {type(exc).__name__}: {str(exc).strip()[:300]}") from None
        return round((time.perf_counter() - started) * 1000, 2)

    def stop(self) -> None:
        """Not ready from now on: the process is shutting down (one assignment: safe in a signal handler)."""
        self.stopping = True

    async def check(self, registry: Registry) -> dict[str, float]:
        """Each part's answer time; NotReady naming every part that did not answer (both are asked at once)."""
        if self.stopping:
            raise NotReady("not ready: shutting down")
        store = "the store" + (" (PostgreSQL)" if registry.config.store_url else " (SQLite)")
        opening = "vectors" not in vars(registry)  # the model and the index load in the background at start
        where = f"Chroma server at {registry.config.chroma_url}" if registry.config.chroma_url else "embedded Chroma"
        vectors = f"the vector index ({where}{', still opening' if opening else ''})"
        kind = "Chroma server" if registry.config.chroma_url else "embedded Chroma"  # for anyone: no address (`errors`)
        named = {"store": store, "vectorIndex": f"the vector index ({kind}{', still opening' if opening else ''})"}
        asked: dict[str, float] = {}
        failed: list[str] = []
        general: list[str] = []

        async def one(name: str, what: str, call: Callable[[], object]) -> None:
            try:
                asked[name] = await self.ask(name, what, call)
            except NotReady as exc:
                failed.append(exc.message)
                general.append(f"{named[name]} did not answer")

        async with anyio.create_task_group() as tasks:
            # a row of the store's own (the model it was built with): a round trip each time, where `count` is
            # kept until a change is heard of, so it may still answer from memory just after the database stopped
            tasks.start_soon(one, "store", store, lambda: registry.store.meta("model_id"))
            # `registry.vectors` opens the index (and loads the model) on first use: in the worker thread, not here
            tasks.start_soon(one, "vectorIndex", vectors, lambda: registry.vectors.count())  # noqa: PLW0108
        if failed:
            raise NotReadyHere("not ready: " + "; ".join(sorted(failed)), "not ready: " + "; ".join(sorted(general)))
        return {name: asked[name] for name in ("store", "vectorIndex")}

    async def agents(self, registry: Registry) -> int | None:
        """The number of entries, or None when the store does not answer in time (liveness does not wait for it)."""
        counted: list[int] = []
        try:
            await self.ask("count", "the store", lambda: counted.append(registry.store.count()))
        except NotReady:
            return None
        return counted[0]
