"""Asking a package registry whether it has a package, which versions npm lists, and which files of it a
Python index lists (with when each was uploaded and whether it fits this interpreter).

Used to resolve the seed's `unknown` registry (a name is taken from npm or PyPI only when exactly one of them
has it) and to say why an install failed in words (issue #54): no such package or version (and then the
nearest newer release, semver or PEP 440 ordered, to offer instead), only a source distribution (not built
here because building runs the publisher's code), no wheel for this platform, or a dependency with no release
on or before the date dependencies are resolved as of.

The registries are the operator's own choice (`install.Registries`), so they are asked directly, not through
the crawler's fetcher, which refuses loopback and private addresses a private registry may well be on. Each
answer is bounded: an npm packument of a popular package runs to tens of megabytes, so for existence only
the status line is read (the body is never read), and an index page is read up to `MAX_PAGE_BYTES`.
"""

from __future__ import annotations

import contextlib
import functools
import html
import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags, platform_tags, sys_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages.names import canonical_pypi

MAX_PAGE_BYTES = 16 * 1024 * 1024
NPM_ACCEPT = "application/vnd.npm.install-v1+json"  # the abbreviated packument: what npm itself asks for
PYPI_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"  # PEP 691, else PEP 503's HTML
_ANCHOR = re.compile(r"<a\s([^>]*)>([^<]+)</a>", re.IGNORECASE)
_REQUIRES = re.compile(r"""data-requires-python\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)  # PEP 503's attribute
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


@dataclass(frozen=True)
class PypiFile:
    """One file a Python index lists for a project."""

    filename: str
    version: str
    is_wheel: bool
    uploaded: datetime | None  # PEP 700's upload-time, where the index gives it (a PEP 691 JSON page)
    fits_tags: bool  # a wheel whose tags this interpreter supports
    requires_python: str | None  # PEP 691's `requires-python`, where the index gives it
    fits_python: bool  # no Requires-Python, or one this interpreter's version meets
    yanked: bool  # pip takes a yanked file only when pinned to exactly its version

    @property
    def fits(self) -> bool:
        """A file pip may install for this interpreter as a dependency: a wheel that fits, not yanked."""
        return self.fits_tags and self.fits_python and not self.yanked


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


async def pypi_listing(client: httpx.AsyncClient, index: str, name: str) -> list[PypiFile] | None:
    """The files of `name` a Python index lists, each with its version, upload time and whether it fits this
    interpreter; None when the index has no such project; LookupFailed when that cannot be told."""
    files = await _pypi_page(client, index, name)
    if files is None:
        return None
    listed = []
    for f in files:
        release = release_of(str(f["filename"]))
        if release is None or release[0] != canonical_pypi(name):
            continue
        uploaded = None
        if isinstance(f.get("upload-time"), str):
            with contextlib.suppress(ValueError):
                uploaded = datetime.fromisoformat(f["upload-time"].replace("Z", "+00:00"))
        python = f.get("requires-python") if isinstance(f.get("requires-python"), str) else None
        tags = release[2] and tags_fit(str(f["filename"]))
        fits_python, yanked = python_fits(python), bool(f.get("yanked"))
        listed.append(PypiFile(str(f["filename"]), release[1], release[2], uploaded, tags, python, fits_python, yanked))
    return listed


@functools.cache
def _our_tags() -> frozenset[Tag]:
    return frozenset(sys_tags())


@functools.cache
def _tags_of(version: tuple[int, int]) -> frozenset[Tag]:
    """The wheel tags a CPython of `version` supports on this machine: its ABI, abi3, pure Python, this platform."""
    platforms = list(platform_tags())
    return frozenset([*cpython_tags(version, platforms=platforms), *compatible_tags(version, platforms=platforms)])


def tags_fit(filename: str, version: tuple[int, int] | None = None) -> bool:
    """Whether the wheel `filename` installs for this interpreter, or for a CPython of `version` on this machine."""
    try:
        return not (_our_tags() if version is None else _tags_of(version)).isdisjoint(parse_wheel_filename(filename)[3])
    except (InvalidWheelFilename, InvalidVersion):
        return False


def python_fits(requires: str | None, version: str | None = None) -> bool:
    """Whether Python `version` (this interpreter's where not given) meets `requires`, a Requires-Python,
    checked with the full version as pip does."""
    try:
        return requires is None or SpecifierSet(requires).contains(version or platform.python_version(), prereleases=True)
    except InvalidSpecifier:
        return True  # pip ignores a Requires-Python it cannot read


async def npm_versions(client: httpx.AsyncClient, base: str, name: str) -> list[str] | None:
    """The versions an npm registry lists for `name` (its abbreviated packument, read up to `MAX_PAGE_BYTES`);
    None when it has no such package; LookupFailed when that cannot be told."""
    url = npm_url(base, name)
    answer = await _bounded(client, url, NPM_ACCEPT)
    if answer is None:
        return None
    try:
        packument = read_json(answer[0], max_bytes=MAX_PAGE_BYTES)
    except UnreadableJson as exc:
        raise LookupFailed(f"{url}: {exc}") from None
    versions = packument.get("versions") if isinstance(packument, dict) else None
    return [str(v) for v in versions] if isinstance(versions, dict) else []


def semver_key(version: str) -> tuple[Any, ...] | None:
    """The order semver gives `version` (a release after its prereleases, a prerelease's numeric identifiers
    numerically and before alphanumeric ones); None for what is not a semver version."""
    match = _SEMVER.match(version.strip().removeprefix("v"))
    if match is None:
        return None
    pre = match[4]
    later = (1,) if pre is None else (0, *((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    return (int(match[1]), int(match[2]), int(match[3]), later)


def nearest_newer(registry: str, versions: Iterable[str], pinned: str) -> str | None:
    """The first release after `pinned` among `versions` (semver for npm, PEP 440 for PyPI): what to offer when
    the pinned one is not there (deleted, or never published). A prerelease only when `pinned` is one."""

    def key(version: str) -> Any:
        if registry == "npm":
            return semver_key(version)
        try:
            return Version(version)
        except InvalidVersion:
            return None

    def is_pre(found: Any) -> bool:
        return bool(found.is_prerelease) if isinstance(found, Version) else found[3] != (1,)

    own = key(pinned)
    if own is None:
        return None
    later = [(k, v) for v in set(versions) if (k := key(v)) is not None and k > own and (is_pre(own) or not is_pre(k))]
    return min(later)[1] if later else None


async def _bounded(client: httpx.AsyncClient, url: str, accept: str) -> tuple[bytes, str] | None:
    """The body of `url` (up to `MAX_PAGE_BYTES`) and its content type; None for a 404; LookupFailed otherwise."""
    try:
        async with client.stream("GET", url, headers={"Accept": accept}) as response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise LookupFailed(f"{url} answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_PAGE_BYTES:
                    raise LookupFailed(f"{url}: the answer is over {MAX_PAGE_BYTES} bytes")
            return bytes(body), response.headers.get("content-type", "")
    except httpx.HTTPError as exc:
        raise LookupFailed(f"{url} could not be asked: {exc or type(exc).__name__}") from None


async def _pypi_page(client: httpx.AsyncClient, index: str, name: str) -> list[dict[str, Any]] | None:
    """The files a Python index lists for `name`, each a mapping with its `filename` (and, from a PEP 691 JSON
    page, the rest it gives); None when it has no such project; LookupFailed when that cannot be told."""
    url = pypi_url(index, name)
    answer = await _bounded(client, url, PYPI_ACCEPT)
    if answer is None:
        return None
    body, content_type = answer
    if not content_type.startswith("application/vnd.pypi.simple"):
        anchors = _ANCHOR.findall(body.decode("utf-8", "replace"))
        return [{"filename": html.unescape(text.strip()), **_requires_python(attributes)} for attributes, text in anchors]
    try:
        page = read_json(body, max_bytes=MAX_PAGE_BYTES)
    except UnreadableJson as exc:
        raise LookupFailed(f"{url}: {exc}") from None
    files = page.get("files") if isinstance(page, dict) else None
    return [f for f in files or [] if isinstance(f, dict) and isinstance(f.get("filename"), str)]


def _requires_python(attributes: str) -> dict[str, str]:
    """A PEP 503 anchor's Requires-Python, as a PEP 691 file gives it (`requires-python`), where it has one."""
    match = _REQUIRES.search(attributes)
    return {"requires-python": html.unescape(match[1] or match[2] or "")} if match else {}


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
