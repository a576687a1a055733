"""The operator's routes: sign in with a write token (the form posts it once; a session cookie carries the
sign-in after), the operator's page, adding a catalog by URL (a crawl, as `POST /crawl` runs it), trying an
agent from its page (a call, as `POST /agents/{id}/invoke` makes it) and signing out. Every post must carry
the page's CSRF token (`security`)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ard_mcp.errors import InvalidArgument, PermissionDenied, Unauthenticated
from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.surfaces.rest.routes import run, state_of
from ard_mcp.surfaces.rest.settings import HttpSettings, is_loopback
from ard_mcp.ui.crawl_stream import crawl_page
from ard_mcp.ui.operator_view import LastCrawl, operator_view
from ard_mcp.ui.render import page
from ard_mcp.ui.security import CSRF_FIELD, INVOKE_FORM, SESSION_COOKIE, SESSION_SECONDS, check_csrf, secured, set_cookie
from ard_mcp.ui.site import Handler, Site
from ard_mcp.web.settings import CrawlSettings

MAX_FIELD = 2048


async def _form(request: Request) -> dict[str, str]:
    """The posted form's fields (the guard has bounded the body), after its CSRF token is checked."""
    fields = dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))
    check_csrf(request, fields.get(CSRF_FIELD))
    return {k: v[:MAX_FIELD] for k, v in fields.items()}


def _see_other(request: Request, path: str) -> Response:
    return secured(request, RedirectResponse(path, status_code=303))


def _open_to(settings: HttpSettings) -> str | None:
    """Who may write without a token: nobody when there is a token file; else anyone on this machine (`serve`
    allows no token file only on loopback) or, with `--allow-anonymous-writes`, anyone who reaches it."""
    if settings.tokens.configured:
        return None
    return "anyone on this machine" if is_loopback(settings.host) else "anyone who can reach it"


def operator_routes(web: Site) -> list[tuple[str, str, Handler]]:
    async def login_page(request: Request) -> Response:
        if web.operator(request) is not None:
            return _see_other(request, "/operator")
        return page(request, "login.html", **web.nav(request))

    async def login(request: Request) -> Response:
        fields = await _form(request)
        tokens = state_of(request).settings.tokens
        principal = tokens.principal({"authorization": f"Bearer {fields.get('token', '').strip()}"})
        if principal is None or not principal.may_write("*"):
            failure = (
                Unauthenticated("that is not a token of this registry")
                if principal is None
                else PermissionDenied("the operator's pages need a token that may write every publisher (*)")
            )
            return page(request, "login.html", failure.http_status, error=failure.message)
        response = _see_other(request, "/operator")
        set_cookie(request, response, SESSION_COOKIE, web.sessions.open(principal), max_age=SESSION_SECONDS)
        return response

    async def logout(request: Request) -> Response:
        await _form(request)
        web.sessions.close(request)
        response = _see_other(request, "/")
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def overview(request: Request) -> Response:
        if web.operator(request) is None:
            return _see_other(request, "/operator/login")
        state = state_of(request)
        open_to = _open_to(state.settings)
        view = await run(operator_view, state.open_registry(), state.open_services(), web.viewer(request), web.last_crawl, open_to)
        return page(request, "operator.html", view=view, **web.nav(request))

    async def crawl(request: Request) -> Response:
        fields = await _form(request)
        if web.operator(request) is None:
            raise Unauthenticated("sign in as an operator to add a catalog")
        target = fields.get("url", "").strip()
        if not target:
            raise InvalidArgument("url: give the catalog's URL or its domain")
        state = state_of(request)

        def keep(crawl: LastCrawl) -> None:
            web.last_crawl = crawl

        settings = state.settings.crawl or CrawlSettings()
        return crawl_page(request, state.open_registry(), settings, target, web.signed_in(request) is not None, keep)

    async def invoke(request: Request) -> Response:
        """The entry page's "try it" form: one call through the invocation service, as `POST /agents/{id}/invoke`."""
        fields = await _form(request)
        principal = web.operator(request)
        if principal is None:
            raise Unauthenticated("sign in as an operator to call an agent from the page")
        text = (fields.get("arguments") or "{}").encode()
        try:
            arguments = read_json(text, max_bytes=len(text))
        except UnreadableJson as exc:
            raise InvalidArgument(f"arguments: not JSON this registry reads ({exc})") from None
        if not isinstance(arguments, dict):
            raise InvalidArgument("arguments: the agent's input must be a JSON object")
        state = state_of(request)
        invoker = state.open_services().invoker(state.open_registry())
        caller = state.settings.tokens.caller_for(principal)
        answer = await invoker.call(fields.get("id", ""), fields.get("tool") or None, arguments, web.viewer(request), caller)
        return page(request, "invoked.html", answer=answer, **web.nav(request))

    return [
        (INVOKE_FORM, "POST", invoke),
        ("/operator/login", "GET", login_page),
        ("/operator/login", "POST", login),
        ("/operator/logout", "POST", logout),
        ("/operator", "GET", overview),
        ("/operator/crawl", "POST", crawl),
    ]
