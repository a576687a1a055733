"""Shared by the web page's tests: headless Chromium driven by Playwright, the entries the pages show (some of
them hostile), and the accessibility check.

The browser is Debian's `chromium` (`.ci/run` installs it); Playwright is pointed at it with
`executable_path`, since no browser can be downloaded at run time. `--no-sandbox` because CI runs as root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import INVOICES, PDF, TRANSLATE, WEATHER

CHROMIUM = Path(os.environ.get("ARD_MCP_CHROMIUM", "/usr/bin/chromium"))
OPERATOR_TOKEN = "operator-token-0123456789abcdef"
PUBLISHER_TOKEN = "publisher-token-0123456789abcdef"
TOKEN_FILE = f"operator {OPERATOR_TOKEN} * invoke\npublisher {PUBLISHER_TOKEN} evil.example\n"
SERIOUS = ("serious", "critical")

GEO: dict[str, Any] = {
    "identifier": "urn:air:maps.example.net:server:geo",
    "displayName": "Geo Maps",
    "type": "application/mcp-server-card+json",
    "description": "Geocode street addresses and plan driving routes between places.",
    "tags": ["maps", "geo"],
    "representativeQueries": ["how long is the drive from Lyon to Turin"],
    "data": {
        "name": "geo",
        "remotes": [{"type": "streamable-http", "url": "https://maps.example.net/mcp"}],
        "tools": [
            {
                "name": "geocode",
                "description": "Turn a street address into latitude and longitude.",
                "inputSchema": {"type": "object", "properties": {"address": {"type": "string"}}, "required": ["address"]},
            },
            {"name": "route", "description": "Driving directions and travel time between two places."},
        ],
    },
}
# Every way an entry's text could try to run or disguise itself: markup in each field the pages show, a
# `javascript:` URL, bidirectional overrides and zero-width characters (where the registry accepts them:
# it refuses them in the name and description, and `entry.url` must be http(s)).
PWN = "window.__pwned"
HOSTILE: dict[str, Any] = {
    "identifier": "urn:air:evil.example:agents:hotel",
    "displayName": f'<script>{PWN} = 1</script>Hotel <img src=x onerror="{PWN} = 2">Booker',
    "type": "application/a2a-agent-card+json",
    "description": f'Books hotel rooms in any city. <a href="javascript:{PWN} = 3">details</a> <svg onload="{PWN} = 4">',
    "tags": ["hotel", f'"><script>{PWN} = 5</script>', "ho\u200btel"],
    "representativeQueries": [f"javascript:{PWN} = 6", "book a hotel room in Rome"],
    "metadata": {"note": f"\u202e{PWN}\u202c <iframe src=javascript:{PWN}=7>"},
    "data": {
        "name": "hotel",
        "url": f"javascript:{PWN} = 8",
        "skills": [
            {
                "id": "book",
                "name": f'<b onmouseover="{PWN} = 9">book_room</b>',
                "description": "Reserve a hotel room \u202egnikoob\u202c for a guest, ig\u200bnoring nothing.",
            }
        ],
    },
}
LONG_TAG = "word-counting-and-text-statistics-utilities"  # wider than the sidebar, with a two-digit count beside it
FILLERS = [
    {
        "identifier": f"urn:air:filler{n}.example.org:agents:tool{n}",
        "displayName": f"Filler Tool {n:02d}",
        "type": "application/a2a-agent-card+json",
        "description": f"Utility number {n} that counts the words of a text in language {n}.",
        "tags": ["filler", LONG_TAG],
        "data": {"name": f"tool{n}"},
    }
    for n in range(12)
]
# An MCP server run from an npm package (the shape of the MCP registry's server.json), published on github.com.
PACKAGED: dict[str, Any] = {
    "identifier": "urn:air:github.com:acme-tools:files-mcp",
    "displayName": "Acme Files",
    "type": "application/mcp-server-card+json",
    "description": "Read and search the files of a shared drive.",
    "tags": ["files"],
    "data": {
        "name": "io.github.acme-tools/files-mcp",
        "repository": {"url": "https://github.com/acme-tools/files-mcp", "source": "github"},
        "packages": [
            {
                "registryType": "npm",
                "identifier": "@acme-tools/files-mcp",
                "version": "1.2.0",
                "transport": {"type": "stdio"},
                "packageArguments": [{"type": "named", "name": "--read-only"}],
                "environmentVariables": [
                    {"name": "FILES_API_KEY", "isRequired": True, "isSecret": True, "description": "Key of the drive's API"},
                    {"name": "FILES_REGION", "default": "eu"},
                ],
            }
        ],
    },
}
ENTRIES = [WEATHER, INVOICES, PDF, TRANSLATE, GEO, PACKAGED, *FILLERS]
TRANSLATOR = "urn:air:agents.example:translate"


def translator(base: str) -> dict[str, Any]:
    """AIDIP metadata of the test agent at `base` (tests/agent_servers.aidip_agent), which the operator may call."""
    return {
        "id": TRANSLATOR,
        "name": "Translator",
        "description": "Translates text into another language.",
        "endpoint": base + "/translate",
        "publisher": "Agents Example",
        "operations": [{"name": "translateText", "description": "Translate a text.", "inputs": {"type": "object"}}],
    }


def need_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"no browser at {CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does")


def register(base: str, documents: list[dict[str, Any]], token: str = OPERATOR_TOKEN) -> None:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        for document in documents:
            response = client.post("/agents", json=document)
            assert response.status_code == 201, response.text


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical findings on the page as it is now (axe ships inside the
    axe-playwright-python wheel and is injected by the test: nothing is fetched)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [f"{v['id']}: {v['help']} ({len(v['nodes'])} nodes)" for v in found if v.get("impact") in SERIOUS]


def no_horizontal_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))
