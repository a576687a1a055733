"""The app: one Starlette application, one process, MCP (streamable HTTP at `/mcp`, or SSE at `/sse`)
beside the REST routes of ARD (§7), the Xu discovery profile and AIDIP, and the web page at `/`
(`ard_mcp.ui`), all over ONE registry."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ard_mcp.config import Config
from ard_mcp.errors import ArdError, MethodNotAllowed, NotFound
from ard_mcp.monitoring.requests import RequestMonitor
from ard_mcp.registry import Registry
from ard_mcp.surfaces.mcp.lazy_registry import freeze_when_warm, warm_up_soon
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.errors import error_response
from ard_mcp.surfaces.rest.guard import Forms, GuardMiddleware
from ard_mcp.surfaces.rest.metrics import metrics_routes
from ard_mcp.surfaces.rest.openapi import build_openapi
from ard_mcp.surfaces.rest.operations import OPERATIONS, dialect_for
from ard_mcp.surfaces.rest.routes import AppState, state_of
from ard_mcp.surfaces.rest.settings import KEEP_ALIVE_SECONDS, HttpSettings
from ard_mcp.surfaces.services import Services
from ard_mcp.ui.routes import web_page_routes
from ard_mcp.ui.security import FORM_PATHS, INVOKE_FORM
from ard_mcp.web.refresh import refresh_forever

log = logging.getLogger(__name__)


async def openapi_json(request: Request) -> Response:
    return JSONResponse(state_of(request).openapi)


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 and 405 (no route, wrong method) in the spec's error object."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    dialect = dialect_for(request.method, request.url.path)
    if status == 405:
        allowed = (exc.headers or {}).get("Allow", "") if isinstance(exc, HTTPException) else ""
        answers = f"; it answers {allowed}" if allowed else ""
        body = " with a JSON body (see /openapi.json)" if "POST" in allowed else ""
        response = error_response(dialect, MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}{answers}{body}"))
        if allowed:
            response.headers["Allow"] = allowed
        return response
    if status == 404:
        return error_response(dialect, NotFound(f"no route {request.method} {request.url.path}; see /openapi.json"))
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    failure = ArdError(str(detail))
    failure.http_status = status
    return error_response(dialect, failure)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(dialect_for(request.method, request.url.path), ArdError("internal error"))


# -- the app -------------------------------------------------------------------------------------------------
NO_SDK_CHECKS = TransportSecuritySettings(enable_dns_rebinding_protection=False)
"""The MCP SDK's own Host / Origin checks stay off: `GuardMiddleware` checks both on every route, MCP
included, with one rule (the SDK's twin answered MCP apart: no Origin check at all once any Host was
allowed, a plain-text 403 instead of the error object)."""


def build_app(
    config: Config, settings: HttpSettings, *, registry: Registry | None = None, warm: bool = True, services: Services | None = None
) -> Starlette:
    """The app. `registry`, when given, is an already opened registry the app takes over (and closes at
    shutdown); otherwise the app opens one at start-up. MCP tools and REST routes share it."""
    config = settings.named(config)
    state = AppState(config, settings)
    protect = None
    if settings.mcp_issuer:
        mcp_url = f"{(config.source_url or settings.base_url()).rstrip('/')}/{'sse' if settings.transport == 'sse' else 'mcp'}"
        issuer, resource = AnyHttpUrl(settings.mcp_issuer), AnyHttpUrl(mcp_url)
        protect = AuthSettings(issuer_url=issuer, resource_server_url=resource, validate_token_resource=False)  # our verifier checks aud
    services = services or Services(
        config.source, settings.federation, settings.crawl, settings.trust_policy, invocation=settings.invocation
    )
    server = build_server(
        config,
        warm=False,
        shared=state.open_registry,
        tokens=settings.tokens,
        protect=protect,
        crawl=settings.crawl,
        services=services,
    )
    mcp_app: Starlette
    if settings.transport == "sse":
        mcp_app = server.sse_app(transport_security=NO_SDK_CHECKS, max_request_body_size=settings.max_body_bytes, host=settings.host)
    else:
        mcp_app = server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=NO_SDK_CHECKS, max_request_body_size=settings.max_body_bytes, host=settings.host
        )
    routes: list[BaseRoute] = [op.route() for op in OPERATIONS]
    routes.append(Route("/openapi.json", openapi_json, methods=["GET"]))
    routes += mcp_app.routes
    routes += web_page_routes()
    routes += metrics_routes(settings)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        opened: Registry = registry if registry is not None else await anyio.to_thread.run_sync(Registry, config)
        state.registry = opened
        state.services = services
        if warm:
            warm_up_soon(opened.warm_up)
        try:
            async with anyio.create_task_group() as background:
                services.attach(background)
                if settings.crawl is not None and settings.crawl.background_refresh:
                    background.start_soon(refresh_forever, lambda: opened, settings.crawl)
                if settings.transport == "sse":
                    yield
                else:
                    async with server.session_manager.run():
                        yield
                background.cancel_scope.cancel()
        finally:
            state.registry = None
            state.services = None
            await services.aclose()
            await anyio.to_thread.run_sync(opened.close)

    forms = Forms(FORM_PATHS, INVOKE_FORM)
    middleware = [
        Middleware(RequestMonitor, routes=routes),  # outermost: the guard's refusals are requests too (`ard_mcp.monitoring`)
        Middleware(GuardMiddleware, settings=settings, forms=forms),
        *mcp_app.user_middleware,  # the SDK's auth, when protected
    ]
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "Idempotency-Key",
                    "Mcp-Session-Id",
                    "Mcp-Protocol-Version",
                    "Last-Event-Id",
                ],
                expose_headers=["Mcp-Session-Id", "X-Correlation-Id", "Idempotent-Replayed"],
            )
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _unexpected},
    )
    app.router.redirect_slashes = False  # every route is served at exactly its path: no redirects
    app.state.ard = state
    state.openapi = build_openapi(settings.transport, credentials=settings.tokens.configured)
    return app


def serve(config: Config, settings: HttpSettings, registry: Registry, log_level: str = "info") -> None:
    """Run the app with uvicorn; its logs go through ours (stderr), never to stdout. Every surface is on
    this one server, so the header limit (`header_deadline`) holds for all of them, and so does the drain
    on SIGTERM (`draining`: not ready, `Connection: close`, the listener closed, then uvicorn's shutdown)."""
    import uvicorn

    from ard_mcp.surfaces.rest.draining import GRACE_SECONDS, Drain, DrainingServer, close_when_draining, drain_seconds
    from ard_mcp.surfaces.rest.header_deadline import with_header_timeout

    try:
        seconds = drain_seconds()
    except ValueError as exc:
        raise SystemExit(f"ard-mcp: {exc}") from None
    freeze_when_warm()  # a process that serves this app does nothing else
    app = build_app(config, settings, registry=registry)
    drain = Drain()
    options = uvicorn.Config(
        close_when_draining(app, drain),
        host=settings.host,
        port=settings.port,
        log_config=None,
        log_level=log_level.lower(),
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=int(GRACE_SECONDS),
        http=with_header_timeout(settings.header_timeout),
    )
    DrainingServer(options, drain, seconds=seconds, on_drain=app.state.ard.readiness.stop).run()
