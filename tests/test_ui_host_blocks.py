"""The page and `ard-mcp host-config` offer the same block for every host (issue #55): each entry's page, served
by the whole app, against the command's output for the same entry, for an npm package with a secret, a PyPI
package, a seed record whose arguments are its launcher's, a remote server over streamable HTTP and over SSE,
and ard-mcp itself (`/attach` against `host-config --url`). Also what the blocks say: VS Code's `inputs` prompt
for a secret, `npx`/`uvx` read from the seed's launcher words, and `/` for a client that asks for no page."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.surfaces.cli.arguments import build_parser
from ard_mcp.surfaces.cli.host_config import host_config_command
from ard_mcp.surfaces.host_blocks import HOSTS
from ard_mcp.surfaces.host_launch import PackageRun, package_run
from tests.http_support import BASE_URL, seeded

MCP = "application/mcp-server-card+json"


def _server(identifier: str, data: dict[str, Any]) -> dict[str, Any]:
    name = identifier.rsplit(":", 1)[-1].title()
    return {"identifier": identifier, "displayName": name, "type": MCP, "description": "A server.", "data": data}


NPM_SECRET = _server(
    "urn:air:acme.example:server:files",
    {
        "name": "io.github.acme/files",
        "packages": [
            {
                "registryType": "npm",
                "identifier": "@acme/files",
                "version": "1.2.0",
                "transport": {"type": "stdio"},
                "packageArguments": [{"type": "named", "name": "--read-only"}],
                "environmentVariables": [
                    {"name": "FILES_API_KEY", "isRequired": True, "isSecret": True, "description": "Key of the drive's API"},
                    {"name": "FILES_REGION", "isRequired": True, "default": "eu"},
                    {"name": "DEBUG", "description": "more logging"},
                ],
            }
        ],
    },
)
PYPI = _server(
    "urn:air:time.example:server:time",
    {"packages": [{"registryType": "pypi", "identifier": "mcp-server-time", "version": "0.6.2", "transport": {"type": "stdio"}}]},
)
SEED_LAUNCHER = _server(  # as the MCP registry seed writes `uvx mcp-google-sheets`, with the secret the seed names
    "urn:air:xing5.github.io:server:mcp-google-sheets",
    {
        "packages": [
            {
                "registry_name": "pypi",
                "name": "mcp-google-sheets",
                "version": "0.4.1",
                "package_arguments": [{"type": "positional", "value": "mcp-google-sheets", "is_required": True}],
                "environment_variables": [{"name": "SERVICE_ACCOUNT_TOKEN", "description": "the service account's token"}],
            }
        ]
    },
)
REMOTE = _server("urn:air:maps.example:server:maps", {"remotes": [{"type": "streamable-http", "url": "https://maps.example.net/mcp"}]})
REMOTE_SSE = _server("urn:air:news.example:server:news", {"remotes": [{"type": "sse", "url": "https://news.example.net/sse"}]})
ENTRIES = [NPM_SECRET, PYPI, SEED_LAUNCHER, REMOTE, REMOTE_SSE]


def _page_blocks(text: str) -> dict[str, dict[str, str]]:
    """Each host's block on a page: its JSON text, its command line and its note, as a reader sees them."""
    found: dict[str, dict[str, str]] = {}
    for host, body in re.findall(r'<article class="host" data-host="([^"]+)">(.*?)</article>', text, re.DOTALL):
        parts = {"text": r'<pre class="code" id="host-[a-z-]+" [^>]*>(.*?)</pre>', "command": r'<pre class="code command"[^>]*>(.*?)</pre>'}
        shown = {k: html.unescape(m[1]) for k, pattern in parts.items() if (m := re.search(pattern, body, re.DOTALL))}
        note = re.search(r'<p class="note">(.*?)\.</p>', body, re.DOTALL)
        found[host] = shown | ({"note": html.unescape(note[1])} if note else {})
    return found


def _command_blocks(capsys: pytest.CaptureFixture[str], tmp_path: Path, *what: str) -> dict[str, dict[str, str]]:
    """`ard-mcp host-config HOST ...` for every host, parsed by the command line's own parser."""
    found = {}
    for host in HOSTS:
        args = build_parser().parse_args(["host-config", host, *what, "--path", str(tmp_path / "unused.json")])
        status = host_config_command(args)
        out, err = capsys.readouterr()
        said: dict[str, str] = {}
        if status == 1:  # no block for this host: what to do instead
            said["note"] = err.strip().removeprefix("# ")
        else:
            assert status == 0, err
            said["text"] = out.rstrip("\n")
            command = re.search(r"^# or: (.*)$", err, re.MULTILINE)
            said |= {"command": command[1]} if command else {}
        found[host] = said
    return found


def test_the_page_and_host_config_give_the_same_block_for_every_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def pages() -> tuple[dict[str, str], str]:
        async with seeded(tmp_path / "data", ENTRIES) as (client, _):
            by_id = {}
            for entry in ENTRIES:
                response = await client.get("/entry", params={"id": entry["identifier"]}, headers={"Accept": "text/html"})
                assert response.status_code == 200, response.text
                by_id[entry["identifier"]] = response.text
            attach = await client.get("/attach", headers={"Accept": "text/html"})
            assert attach.status_code == 200
            return by_id, attach.text

    by_id, attach = anyio.run(pages)
    for entry in ENTRIES:
        saved = tmp_path / "entry.json"
        saved.write_text(json.dumps(entry), encoding="utf-8")
        page = _page_blocks(by_id[entry["identifier"]])
        assert list(page) == list(HOSTS), entry["identifier"]  # every host, in one order
        assert page == _command_blocks(capsys, tmp_path, "--entry", str(saved)), entry["identifier"]
    ours = _page_blocks(attach)  # ard-mcp itself, served over HTTP
    assert ours == _command_blocks(capsys, tmp_path, "--url", f"{BASE_URL}/mcp")
    assert json.loads(ours["vscode"]["text"]) == {"servers": {"ard": {"type": "http", "url": f"{BASE_URL}/mcp"}}}
    assert ours["claude-code"]["command"] == f"claude mcp add --scope user --transport http ard {BASE_URL}/mcp"


def test_an_entry_of_the_bundled_snapshot_is_named_by_its_identifier(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    said = _command_blocks(capsys, tmp_path, "--entry", "urn:air:xing5.github.io:server:mcp-google-sheets")
    server = json.loads(said["cursor"]["text"])["mcpServers"]["mcp-google-sheets"]
    assert server["command"] == "uvx" and server["args"][0].startswith("mcp-google-sheets")
    args = build_parser().parse_args(["host-config", "cursor", "--entry", "urn:air:nowhere.example:none"])
    assert host_config_command(args) == 2 and "neither a file nor an entry of the bundled snapshot" in capsys.readouterr().err


def test_vscode_asks_for_a_secret_and_the_others_get_a_placeholder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    saved = tmp_path / "entry.json"
    saved.write_text(json.dumps(NPM_SECRET), encoding="utf-8")
    said = _command_blocks(capsys, tmp_path, "--entry", str(saved))
    vscode = json.loads(said["vscode"]["text"])
    assert vscode["servers"]["files"]["env"] == {"FILES_API_KEY": "${input:files-FILES_API_KEY}", "FILES_REGION": "eu"}
    described = "FILES_API_KEY for files: Key of the drive's API"
    assert vscode["inputs"] == [{"type": "promptString", "id": "files-FILES_API_KEY", "description": described, "password": True}]
    for host in ("claude-desktop", "claude-code", "cursor"):
        document = json.loads(said[host]["text"])
        assert "inputs" not in document and document["mcpServers"]["files"]["env"]["FILES_API_KEY"] == "<your FILES_API_KEY>"
    assert said["claude-code"]["command"] == (
        "claude mcp add --scope user --env 'FILES_API_KEY=<your FILES_API_KEY>' --env FILES_REGION=eu files -- "
        "npx -y @acme/files@1.2.0 --read-only"
    )


def test_writing_vscodes_block_adds_its_inputs_and_keeps_the_persons_own(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    saved, path = tmp_path / "entry.json", tmp_path / ".vscode" / "mcp.json"
    saved.write_text(json.dumps(NPM_SECRET), encoding="utf-8")
    path.parent.mkdir()
    mine = {"type": "promptString", "id": "mine", "description": "my token", "password": True}
    path.write_text('{\n  // mine\n  "inputs": [' + json.dumps(mine) + '],\n  "servers": {},\n}\n', encoding="utf-8")
    args = build_parser().parse_args(["host-config", "vscode", "--entry", str(saved), "--write", "--path", str(path)])
    assert host_config_command(args) == 0 and "added the server 'files'" in capsys.readouterr().err
    written = path.read_text(encoding="utf-8")
    document = json.loads(re.sub(r"//[^\n]*|,(?=\s*[}\]])", "", written))
    assert "// mine" in written and [i["id"] for i in document["inputs"]] == ["mine", "files-FILES_API_KEY"]
    assert document["servers"]["files"]["env"]["FILES_API_KEY"] == "${input:files-FILES_API_KEY}"
    assert host_config_command(args) == 0 and "unchanged" in capsys.readouterr().err


def test_a_remote_server_is_added_in_claude_desktops_settings_not_its_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    saved = tmp_path / "entry.json"
    saved.write_text(json.dumps(REMOTE_SSE), encoding="utf-8")
    said = _command_blocks(capsys, tmp_path, "--entry", str(saved))
    assert "text" not in said["claude-desktop"] and "https://news.example.net/sse" in said["claude-desktop"]["note"]
    assert json.loads(said["cursor"]["text"]) == {"mcpServers": {"news": {"url": "https://news.example.net/sse"}}}
    assert json.loads(said["claude-code"]["text"]) == {"mcpServers": {"news": {"type": "sse", "url": "https://news.example.net/sse"}}}


# -- npx / uvx read from what a seed record's launcher says (`surfaces.host_launch`) -------------------------------
def _seed(name: str, registry: str, *values: str, version: str = "1.0.0") -> dict[str, Any]:
    arguments = [{"type": "positional", "value": v, "is_required": True} for v in values]
    package = {"registry_name": registry, "name": name, "version": version, "package_arguments": arguments}
    return CatalogEntry.model_validate(_server("urn:air:x.example:server:s", {"packages": [package]})).stored()


@pytest.mark.parametrize(
    ("entry", "command"),
    [
        (_seed("mcp-google-sheets", "pypi", "mcp-google-sheets"), "uvx mcp-google-sheets==1.0.0"),
        (_seed("blender-mcp", "pypi", "uvx", "blender-mcp"), "uvx blender-mcp==1.0.0"),
        (_seed("Office_PPT", "pypi", "--from office-ppt", "ppt_mcp_server"), "uvx --from office-ppt==1.0.0 ppt_mcp_server"),
        (_seed("terminal", "pypi", "-m terminal_controller"), "uvx --from terminal==1.0.0 python -m terminal_controller"),
        (_seed("mcp-ch", "pypi", "--with mcp-ch", "--python 3.13", "mcp-ch"), "uvx --python 3.13 mcp-ch==1.0.0"),
        (_seed("coin-api-mcp", "unknown", "-m coin_api_mcp"), "uvx --from coin-api-mcp==1.0.0 python -m coin_api_mcp"),
        (_seed("@scope/tool", "unknown", "start"), "npx -y @scope/tool@1.0.0 start"),
        (_seed("tool", "npm", "npx", "-y", "tool", "--stdio"), "npx -y tool@1.0.0 --stdio"),
    ],
)
def test_a_seed_packages_launcher_words_make_the_command_a_host_runs(entry: dict[str, Any], command: str) -> None:
    found = package_run(entry)
    assert isinstance(found, PackageRun) and found.command_line == command


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (_seed("bitrise-mcp", "unknown", "--from git+https://github.com/bitrise-io/bitrise-mcp", "bitrise-mcp"), "git source"),
        (_seed("mcp-server", "pypi", "server.py"), "source checkout"),
        (_seed("mcp-paradex", "pypi", "--from mcpdoc", "mcpdoc"), "runs the package mcpdoc"),
        (_seed("llm-context", "pypi", "--from llm-context"), "names no command"),
        (_seed("mystery", "unknown", "serve"), "does not say whether mystery is an npm or a PyPI package"),
    ],
)
def test_what_needs_a_checkout_or_another_package_gets_its_reason(entry: dict[str, Any], why: str) -> None:
    found = package_run(entry)
    said = found.problem if isinstance(found, PackageRun) else found.reason
    assert found.command is None if isinstance(found, PackageRun) else True
    assert said is not None and why in said


def test_a_client_asking_slash_for_no_page_is_told_where_everything_is(tmp_path: Path) -> None:
    async def asked() -> Any:
        async with seeded(tmp_path / "data", []) as (client, _):
            response = await client.get("/", headers={"Accept": "application/json"})
            assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
            return response.json()

    said = anyio.run(asked)
    assert said["mcp"] == {"url": f"{BASE_URL}/mcp", "transport": "streamable-http"} and said["rest"]["openapi"] == "/openapi.json"


def test_a_snapshot_entry_says_it_is_from_the_bundled_snapshot_and_its_catalogs() -> None:
    from ard_mcp.index.snapshot import read
    from ard_mcp.ui.entry_view import provenance

    bundled = read()
    listed = next(e for e in bundled.entries if "," in str(e["metadata"].get("catalogs") or ""))
    rows = dict(provenance(listed["identifier"], listed["metadata"]))
    titles = {s["name"]: s["title"] for s in bundled.sources}
    named = ", ".join(titles[c.strip()] for c in listed["metadata"]["catalogs"].split(","))
    assert rows["Source"] == f"from the bundled snapshot of public MCP servers ({named})" and rows["Snapshot"] == bundled.id
    claimed = dict(provenance("urn:air:evil.example:server:x", {"snapshot": bundled.id, "source": "mcp-registry-seed"}))
    assert "Source" not in claimed and claimed["Snapshot, as the entry states it"] == bundled.id  # anyone can write the key
