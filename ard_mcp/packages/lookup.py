"""Asking a package registry whether it has a package, and which files of it a Python index lists.

Used to resolve the seed's `unknown` registry (a name is taken from npm or PyPI only when exactly one of them
has it) and to say why pip found nothing to install (no such package, no such version, or only a source
distribution, which is not built here because building runs the publisher's code).

The registries are the operator's own choice (`install.Registries`), so they are asked directly, not through
the crawler's fetcher, which refuses loopback and private addresses a private registry may well be on. Each
answer is bounded: an npm packument of a popular package runs to tens of megabytes, so for existence only
the status line is read (the body is never read), and an index page is read up to `MAX_PAGE_BYTES`.
"""

from __future__ import annotations

import contextlib
import html
import re
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages.names import canonical_pypi

MAX_PAGE_BYTES = 16 * 1024 * 1024
NPM_ACCEPT = "application/vnd.npm.install-v1+json"  # the abbreviated packument: what npm itself asks for
PYPI_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"  # PEP 691, else PEP 503's HTML
_ANCHOR = re.compile(r"<a\s[^>]*>([^<]+)</a>", re.IGNORECASE)


class LookupFailed(Exception):
    """The registry could not be asked, or answered with neither the package nor a 404."""


def npm_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{quote(name, safe='@')}"  # @scope/name is asked as @scope%2fname


def pypi_url(index: str, name: str) -> str:
    return f"{index.rstrip('/')}/{canonical_pypi(name)}/"


async def _status(client: httpx.AsyncClient, url: str, accept: str) -> bool:
    """True for 200, False for 404; LookupFailed otherwise. The body is not read."""
    try:
        async with client.stream("GET", url, headers={"Accept": accept}) as response:
            if response.status_code in (200, 404):
                return response.status_code == 200
            raise LookupFailed(f"{url} answered HTTP {response.status_code}")
    except httpx.HTTPError as exc:
        raise LookupFailed(f"{url} could not be asked: {exc or type(exc).__name__}") from None


async def on_npm(client: httpx.AsyncClient, base: str, name: str) -> bool:
    return await _status(client, npm_url(base, name), NPM_ACCEPT)


async def on_pypi(client: httpx.AsyncClient, index: str, name: str) -> bool:
    return await _status(client, pypi_url(index, name), PYPI_ACCEPT)


async def pypi_files(client: httpx.AsyncClient, index: str, name: str) -> list[str] | None:
    """The file names a Python index lists for `name` (PEP 691 JSON or PEP 503 HTML); None when it has no such
    project; LookupFailed when that cannot be told."""
    files = await _pypi_page(client, index, name)
    return None if files is None else [str(f["filename"]) for f in files]


async def uploaded(client: httpx.AsyncClient, index: str, name: str, version: str) -> datetime | None:
    """When release `version` of `name` was uploaded: the newest of its files' `upload-time` (PEP 700), None where
    the index does not say (a PEP 503 page) or cannot be asked. Installing its dependencies as of that moment is
    what the release was made with (issue #54: three servers broke on a later major release of `mcp`)."""
    try:
        files = await _pypi_page(client, index, name)
    except LookupFailed:
        return None
    times = []
    for f in files or []:
        release = release_of(str(f["filename"]))
        if release is not None and release[:2] == (canonical_pypi(name), version.lower()) and isinstance(f.get("upload-time"), str):
            with contextlib.suppress(ValueError):
                times.append(datetime.fromisoformat(f["upload-time"].replace("Z", "+00:00")))
    return max(times, default=None)


async def _pypi_page(client: httpx.AsyncClient, index: str, name: str) -> list[dict[str, Any]] | None:
    """The files a Python index lists for `name`, each a mapping with its `filename` (and, from a PEP 691 JSON
    page, the rest it gives); None when it has no such project; LookupFailed when that cannot be told."""
    url = pypi_url(index, name)
    try:
        async with client.stream("GET", url, headers={"Accept": PYPI_ACCEPT}) as response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise LookupFailed(f"{url} answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_PAGE_BYTES:
                    raise LookupFailed(f"{url}: the page is over {MAX_PAGE_BYTES} bytes")
            is_json = response.headers.get("content-type", "").startswith("application/vnd.pypi.simple")
    except httpx.HTTPError as exc:
        raise LookupFailed(f"{url} could not be asked: {exc or type(exc).__name__}") from None
    if not is_json:
        return [{"filename": html.unescape(m.strip())} for m in _ANCHOR.findall(body.decode("utf-8", "replace"))]
    try:
        page = read_json(bytes(body), max_bytes=MAX_PAGE_BYTES)
    except UnreadableJson as exc:
        raise LookupFailed(f"{url}: {exc}") from None
    files = page.get("files") if isinstance(page, dict) else None
    return [f for f in files or [] if isinstance(f, dict) and isinstance(f.get("filename"), str)]


def release_of(filename: str) -> tuple[str, str, bool] | None:
    """(normalized name, version, is a wheel) of a distribution file name; None for other files."""
    if filename.endswith(".whl"):
        parts = filename[: -len(".whl")].split("-")
        return (canonical_pypi(parts[0]), parts[1].lower(), True) if len(parts) >= 5 else None
    for suffix in (".tar.gz", ".zip", ".tar.bz2", ".tgz"):
        if filename.endswith(suffix):
            name, dash, version = filename[: -len(suffix)].rpartition("-")
            return (canonical_pypi(name), version.lower(), False) if dash else None
    return None
