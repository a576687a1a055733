"""Templates to responses: one Jinja2 environment with autoescaping on for every template, so a string from
an entry is escaped wherever a template puts it; `shown` adds the invisible-character markers and marks."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ard_mcp import __version__
from ard_mcp.ui.labels import example_label, publisher_label, signal_help, signal_label, type_label
from ard_mcp.ui.security import CSRF_FIELD, csrf_token, secured
from ard_mcp.ui.text import shown, visible


@cache
def environment() -> Environment:
    """Built on first use: `serve` over stdio never pays for it."""
    env = Environment(
        loader=PackageLoader("ard_mcp.ui", "templates"),
        autoescape=True,
        undefined=StrictUndefined,  # a misspelt name fails the tests instead of rendering as nothing
        auto_reload=False,  # the templates ship in the package: no stat() of each on every page
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shown"] = shown
    env.filters["visible"] = visible
    env.filters["type_label"] = type_label
    env.filters["publisher_label"] = publisher_label
    env.filters["example_label"] = example_label
    env.filters["signal_label"] = signal_label
    env.filters["signal_help"] = signal_help
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    env.tests["http_url"] = lambda value: isinstance(value, str) and value.lower().startswith(("https://", "http://"))
    env.globals["version"] = __version__
    env.globals["FIT_WORDS"] = FIT_WORDS
    env.globals["csrf_field"] = CSRF_FIELD
    return env


NO_STORE = {"Cache-Control": "no-store"}  # pages differ per viewer: none is cached

FIT_WORDS = {"high": "likely fits", "medium": "may fit", "low": "unlikely fit"}  # a result's `fit`, as a person reads it


def render(request: Request, template: str, **context: Any) -> str:
    context.setdefault("signed_in", False)
    return environment().get_template(template).render(request=request, csrf=csrf_token(request), **context)


def page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    """The rendered template with the security headers."""
    return secured(request, HTMLResponse(render(request, template, **context), status_code=status, headers=NO_STORE))


def wants_html(request: Request) -> bool:
    """Whether the client asked for a page (a browser's Accept names text/html); any other client asking `/`
    gets the JSON index of where this server answers what (`pages.index`)."""
    return "text/html" in request.headers.get("accept", "")
