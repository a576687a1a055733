"""`ard-mcp host-config`: the entry it prints starts this very install (a real MCP client starts it from the
host's file and searches), `--write` merges it into each host's file in its usual place, keeping a backup
and every other server, and a file it cannot read is never replaced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
OTHER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}


def _run(home: Path, *args: str, cwd: Path | None = None, argv0: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """`ard-mcp host-config ARGS` as a person runs it, with `home` as their home directory."""
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "APPDATA": str(home / "AppData")}
    command = argv0 or [sys.executable, "-m", "ard_mcp"]
    return subprocess.run([*command, "host-config", *args], env=env, cwd=cwd or home, capture_output=True, text=True, timeout=60)


def _where(home: Path, host: str) -> Path:
    if host == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        return (home / "AppData" if sys.platform == "win32" else home / ".config") / "Claude" / "claude_desktop_config.json"
    return {"claude-code": home / ".claude.json", "cursor": home / ".cursor" / "mcp.json", "vscode": home / ".vscode" / "mcp.json"}[host]


def test_it_prints_this_installs_own_executable_and_data_dir(tmp_path: Path) -> None:
    run = _run(tmp_path, "cursor", "--data-dir", "registry")
    assert run.returncode == 0, run.stderr
    entry = json.loads(run.stdout)["mcpServers"]["ard"]
    command = Path(entry["command"])
    assert command.is_absolute() and command.is_file() and os.access(command, os.X_OK)
    assert command.name in ("ard-mcp", "ard-mcp.exe") and entry["args"] == ["serve", "--shared"]
    assert entry["env"] == {"ARD_MCP_DATA_DIR": str(tmp_path / "registry")}  # relative to where it was asked, made absolute
    assert not _where(tmp_path, "cursor").exists()  # printing writes nothing
    assert str(_where(tmp_path, "cursor")) in run.stderr


@pytest.mark.parametrize("host", ["claude-desktop", "claude-code", "cursor", "vscode"])
def test_write_merges_into_the_hosts_file_and_keeps_a_backup(tmp_path: Path, host: str) -> None:
    path = _where(tmp_path, host)
    key = "servers" if host == "vscode" else "mcpServers"
    path.parent.mkdir(parents=True, exist_ok=True)
    before = {"theme": "dark", key: {"memory": OTHER, "ard": {"command": "stale"}}}
    path.write_text(json.dumps(before), encoding="utf-8")

    run = _run(tmp_path, host, "--write", "--data-dir", str(tmp_path / "d"))
    assert run.returncode == 0, run.stderr
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["theme"] == "dark" and after[key]["memory"] == OTHER  # nothing else in the file changes
    assert after[key]["ard"] == json.loads(run.stdout)[key]["ard"]
    assert after[key]["ard"]["env"]["ARD_MCP_DATA_DIR"] == str(tmp_path / "d")
    assert (after[key]["ard"].get("type") == "stdio") == (host in ("vscode", "claude-code"))
    assert json.loads(path.with_name(path.name + ".bak").read_text(encoding="utf-8")) == before
    assert f"replaced the server 'ard' in {path}" in run.stderr


def test_write_creates_a_missing_file(tmp_path: Path) -> None:
    run = _run(tmp_path, "vscode", "--write", "--name", "registry")
    assert run.returncode == 0, run.stderr
    written = json.loads(_where(tmp_path, "vscode").read_text(encoding="utf-8"))
    assert list(written["servers"]) == ["registry"] and "added the server" in run.stderr


def test_comments_and_trailing_commas_are_read_and_kept(tmp_path: Path) -> None:
    """VS Code's files may hold comments and trailing commas, which it accepts: the entry goes in, the rest of the
    text stays as written."""
    path = _where(tmp_path, "vscode")
    path.parent.mkdir(parents=True)
    text = '{\n  // my servers\n  "servers": {\n    "memory": {"command": "npx"}, /* the one I use */\n  },\n}\n'
    path.write_text(text, encoding="utf-8")
    run = _run(tmp_path, "vscode", "--write")
    assert run.returncode == 0, run.stderr
    written = path.read_text(encoding="utf-8")
    assert "// my servers" in written and "/* the one I use */" in written and '"memory": {"command": "npx"},' in written
    assert path.with_name("mcp.json.bak").read_text(encoding="utf-8") == text


def test_a_second_write_changes_nothing_and_the_backup_stays_the_original(tmp_path: Path) -> None:
    path = _where(tmp_path, "cursor")
    path.parent.mkdir(parents=True)
    original = json.dumps({"mcpServers": {"memory": OTHER}})
    path.write_text(original, encoding="utf-8")
    assert "added the server 'ard'" in _run(tmp_path, "cursor", "--write").stderr
    first = path.read_text(encoding="utf-8")
    again = _run(tmp_path, "cursor", "--write")
    assert again.returncode == 0 and "unchanged" in again.stderr and path.read_text(encoding="utf-8") == first
    changed = _run(tmp_path, "cursor", "--write", "--data-dir", str(tmp_path / "elsewhere"))
    assert "replaced the server 'ard'" in changed.stderr
    assert path.with_name("mcp.json.bak").read_text(encoding="utf-8") == original  # the person's, not a merged one


def test_a_file_it_cannot_read_is_never_replaced(tmp_path: Path) -> None:
    path = _where(tmp_path, "vscode")
    path.parent.mkdir(parents=True)
    for text in ('{"servers": {"memory": {"command": "npx"}', '["servers"]', '{"servers": ["memory"]}'):
        path.write_text(text, encoding="utf-8")
        run = _run(tmp_path, "vscode", "--write")
        assert run.returncode == 2 and "nothing was written" in run.stderr, text
        assert path.read_text(encoding="utf-8") == text and not path.with_name("mcp.json.bak").exists()


def test_help_names_the_windows_folder_as_windows_writes_it(tmp_path: Path) -> None:
    said = _run(tmp_path, "--help").stdout
    assert "%APPDATA%" in " ".join(said.split()) and "%%" not in said


@pytest.mark.slow
def test_the_written_entry_starts_a_working_server(tmp_path: Path) -> None:
    """Started as a host starts it (the file's command, args and env, from another directory, with a PATH
    that lacks this virtual environment), it answers a real MCP client."""
    assert _run(tmp_path, "claude-desktop", "--write", "--data-dir", str(tmp_path / "d")).returncode == 0
    entry = json.loads(_where(tmp_path, "claude-desktop").read_text(encoding="utf-8"))["mcpServers"]["ard"]

    async def listed() -> dict[str, Any]:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ARD_MCP_NO_SNAPSHOT": "1", "ARD_MCP_BACKEND_IDLE": "1", **entry["env"]}
        server = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(tmp_path))
        async with Client(server) as client:
            result = await client.call_tool("list_agents", {"pageSize": 1})
            assert result.structured_content is not None
            return result.structured_content

    assert anyio.run(listed)["total"] == 0
    assert (tmp_path / "d" / "catalog.sqlite3").is_file()  # the data directory the entry names


def test_started_as_its_console_script_it_names_that_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "ard-mcp"
    if not script.is_file():
        pytest.skip(f"no console script beside {sys.executable} (not installed with pip install -e .)")
    run = _run(tmp_path, "cursor", argv0=[str(script)])
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["mcpServers"]["ard"]["command"] == str(script)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"servers": {"ard": {"command": "x"}}}),
        ('{"theme": "dark",}', {"theme": "dark", "servers": {"ard": {"command": "x"}}}),
        ('{"servers": {}}', {"servers": {"ard": {"command": "x"}}}),
        ('{"servers": {"ard": {"command": "old", "args": ["//", "/*"]}}} // tail', {"servers": {"ard": {"command": "x"}}}),
        (
            '{"a": "// not a comment", "servers": {"b": 1, "ard": 2,},}',
            {"a": "// not a comment", "servers": {"b": 1, "ard": {"command": "x"}}},
        ),
    ],
)
def test_one_member_is_set_in_jsonc_text(text: str, expected: dict[str, Any]) -> None:
    from ard_mcp.surfaces.cli import jsonc

    written = jsonc.with_member(text, ("servers", "ard"), {"command": "x"})
    assert jsonc.parsed(written) == expected
    assert ("// tail" in written) == ("// tail" in text) and ("// not a comment" in written) == ("// not a comment" in text)
