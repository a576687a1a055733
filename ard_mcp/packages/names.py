"""Package names and versions as npm and PyPI spell them: which names each registry can hold, which versions
pin one release, and the directory name a package is cached under.

Why checked here and not left to the tools: a name or version goes into an installer's command line and a
cache path, so anything that is not a name (`../x`, `pkg; rm`, `git+https://...`, `-e .`) is refused before
it reaches either. A version pins only when it names one release: an npm range (`^1.2.0`), a dist-tag
(`latest`, `next`), a PEP 440 specifier (`>=1.0`) or wildcard (`1.*`) installs whatever is newest the day it
runs, which is not what the person consented to.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

_NPM_NAME = re.compile(r"^(?:@[a-z0-9~][a-z0-9._~-]*/)?[a-zA-Z0-9~][a-zA-Z0-9._~-]*$")  # no leading "-": read as an option
MAX_NPM_NAME = 214  # npm's own limit
_PYPI_NAME = re.compile(r"^(?:[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)  # PEP 508
_SEMVER = re.compile(
    r"^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
_PEP440 = re.compile(  # PEP 440's public version (any spelling pip accepts), with a local label; no wildcard
    r"^v?(?:\d+!)?\d+(?:\.\d+)*"
    r"(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?"
    r"(?:-\d+|[-_.]?(?:post|rev|r)[-_.]?\d*)?"
    r"(?:[-_.]?dev[-_.]?\d*)?"
    r"(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?$",
    re.IGNORECASE,
)
_NPM_RANGE = re.compile(r"^[0-9A-Za-z.*+^~<>=|\s-]+$")  # what an npm range or dist-tag is made of
_PYPI_SPECIFIER = re.compile(r"^[0-9A-Za-z.*+!<>=~,\s-]+$")  # what a PEP 440 specifier is made of
REGISTRIES = ("npm", "pypi")


def is_npm_name(name: str) -> bool:
    return len(name) <= MAX_NPM_NAME and _NPM_NAME.match(name) is not None


def is_pypi_name(name: str) -> bool:
    return _PYPI_NAME.match(name) is not None


def valid_name(registry: str, name: str) -> bool:
    """Whether `registry` ("npm", "pypi", or "unknown": either) can hold a package called `name`."""
    if registry == "npm":
        return is_npm_name(name)
    if registry == "pypi":
        return is_pypi_name(name)
    return is_npm_name(name) or is_pypi_name(name)


def canonical_pypi(name: str) -> str:
    """PEP 503's normalized name (`Mcp_Server.Time` → `mcp-server-time`): one key however a record spells it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_version(registry: str, version: str | None) -> str | None:
    """The release `version` pins, spelled as the cache names it (`v1.2.3` → `1.2.3`), or None when it pins none."""
    if version is None:
        return None
    text = version.strip()
    if registry == "npm":
        text = text.removeprefix("=").removeprefix("v")
        return text if _SEMVER.match(text) else None
    if registry == "pypi" and _PEP440.match(text):
        return text.lower().removeprefix("v")
    return None


def same_release(one: str, other: str) -> bool:
    """Whether two PEP 440 versions are one release (`1.0` and `1.0.0`; `1.0+x` is another); False where either
    is no version."""
    try:
        return Version(one) == Version(other)
    except InvalidVersion:
        return False


def requirement(registry: str, name: str, version: str | None) -> str:
    """What the installer is asked for when the version is not pinned (allowed by the operator): the newest
    release, or the newest within the range. ValueError for a version that is neither a range nor a tag."""
    text = (version or "").strip()
    if registry == "npm":
        if text and not _NPM_RANGE.match(text):
            raise ValueError(f"version {version!r} is not an npm version, range or tag")
        return f"{name}@{text or 'latest'}"
    if text.lower() in ("", "latest"):
        return name
    if not _PYPI_SPECIFIER.match(text):
        raise ValueError(f"version {version!r} is not a PEP 440 version or specifier")
    return f"{name}{text}" if text[0] in "<>=!~" else f"{name}=={text}"


def path_safe(name: str) -> str:
    """The directory a package is cached under: `@scope/name` → `@scope+name` (`+` is in no npm or PyPI name,
    so two names never share one)."""
    return name.replace("/", "+")
