"""What keeps the page safe to show hostile entries and to operate from: the response headers, the
operator's sign-in session, and the token that proves a form was sent from this site's own page.

A bearer token cannot be typed into a browser's request, so an operator signs in once with a form that
posts the token; the server checks it exactly as a write's `Authorization` header is checked and keeps the
principal (never the token) under a random session id sent back in an HttpOnly, SameSite=Strict cookie.
Every form also carries a CSRF token that must equal a second such cookie (double submit), and the guard
checks a form post's Origin by the rule REST writes follow; any one of the three stops a cross-site post."""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

from ard_mcp.errors import PermissionDenied
from ard_mcp.surfaces.auth import Principal

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""No inline script or style, nothing from another origin: an entry's text that slipped past escaping could
still run nothing."""
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
INVOKE_FORM = "/operator/invoke"
"""The "Try it" form: it calls an agent, so it counts against the invocation rate limit, as
`POST /agents/{id}/invoke` and `call_agent` do."""
FORM_PATHS = frozenset({"/operator/login", "/operator/logout", "/operator/crawl", INVOKE_FORM})
"""The page's form posts (application/x-www-form-urlencoded): the guard lets them through where it refuses
a simple body elsewhere, after the Origin check that REST writes pass."""
SESSION_COOKIE = "ard_session"
CSRF_COOKIE = "ard_csrf"
CSRF_FIELD = "csrf"
SESSION_SECONDS = 8 * 3600  # a working day; signing out ends it sooner
MAX_SESSIONS = 1000  # the oldest goes first: a flood of sign-ins cannot grow memory


@dataclass
class Sessions:
    """Signed-in operators by session id, in memory: a restart signs everyone out."""

    lifetime: float = SESSION_SECONDS
    _open: dict[str, tuple[Principal, float]] = field(default_factory=dict)

    def open(self, principal: Principal) -> str:
        now = time.monotonic()
        self._open = {k: v for k, v in self._open.items() if v[1] > now}
        while len(self._open) >= MAX_SESSIONS:
            del self._open[next(iter(self._open))]
        session = secrets.token_urlsafe(32)
        self._open[session] = (principal, now + self.lifetime)
        return session

    def principal(self, request: Request) -> Principal | None:
        found = self._open.get(request.cookies.get(SESSION_COOKIE, ""))
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    def close(self, request: Request) -> None:
        self._open.pop(request.cookies.get(SESSION_COOKIE, ""), None)


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int | None = None) -> None:
    """An HttpOnly, SameSite=Strict cookie for the whole site (Secure when the page came over https)."""
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")


def csrf_token(request: Request) -> str:
    """The token this browser's forms carry: its cookie's, or a new one `secured` sets."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) < 32:
        token = request.scope.setdefault("ard_csrf", secrets.token_urlsafe(32))
    return token


def check_csrf(request: Request, sent: object) -> None:
    """`PermissionDenied` unless the form's token equals the cookie's (constant time)."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not (isinstance(sent, str) and len(cookie) >= 32 and hmac.compare_digest(sent.encode(), cookie.encode())):
        raise PermissionDenied("this form was not sent from this registry's own page (missing or wrong CSRF token); reload the page")


def secured(request: Request, response: Response) -> Response:
    """`response` with the security headers, and the CSRF cookie when `csrf_token` made a new one."""
    response.headers.update(HEADERS)
    if "ard_csrf" in request.scope:
        set_cookie(request, response, CSRF_COOKIE, request.scope["ard_csrf"])
    return response
