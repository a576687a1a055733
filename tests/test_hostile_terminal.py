"""Terminal escapes in what the command line prints (issue #44): a caller without the invoke scope put
`\\x1b]0;PWNED\\x07\\x1b[2J` into an identifier, the refused call was logged, and `ard-mcp invocations`
printed it raw, as it did tool names agents' callers sent. Every character that is not text reaches the
terminal escaped; `--json` output stays the same JSON. The calls are real (the app over HTTP with a token
file), the command line a real process."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import unicodedata
from pathlib import Path
from urllib.parse import quote

import pytest

from ard_mcp.invocation.audit import AuditLog
from ard_mcp.invocation.policy import InvocationPolicy
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.cli.log_setup import EscapingFormatter
from ard_mcp.surfaces.cli.terminal_text import shown, shown_json
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.http_support import running
from tests.processes import quiet_env
from tests.web_publisher import Publisher

ESCAPES = "\x1b]0;PWNED\x07\x1b[2J"
HOSTILE = [ESCAPES, "\u202e", "\x9b31m", "\x7f", "\x00", "\r", "\n", "\u200b", "\u2028", "\U000e0041"]
READER = "reader-token-0123456789ab"


def not_text(output: str) -> list[str]:
    """The characters of `output` a terminal would act on or render misleadingly (line breaks between lines aside)."""
    return [c for c in output if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_shown_escapes_every_character_that_is_not_text(hostile: str) -> None:
    text = f"urn:air:evil.example:x{hostile}y"
    assert not_text(shown(text)) == [] and "\n" not in shown(text)
    assert shown(text).startswith("urn:air:evil.example:x\\") and shown(text).endswith("y")
    document = json.dumps({"identifier": text, "list": [1, 2]}, indent=2, ensure_ascii=False)
    assert not_text(shown_json(document)) == []
    assert json.loads(shown_json(document)) == json.loads(document)  # the same JSON, the same strings


def test_text_that_is_text_is_left_alone() -> None:
    for text in ("Café ☕ 東京 مرحبا", "plain ascii", "100 % ok"):
        assert shown(text) == text
    assert shown(ESCAPES) == "\\x1b]0;PWNED\\x07\\x1b[2J"
    assert shown("\u202eevil") == "\\u202eevil"


def test_a_log_record_is_one_escaped_line_whatever_it_quotes() -> None:
    formatter = EscapingFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord("ard_mcp", logging.WARNING, __file__, 1, "fetched %s", (f"https://x/{ESCAPES}\nINFO forged",), None)
    line = formatter.format(record)
    assert not_text(line) == [] and "\n" not in line
    assert line == "WARNING fetched https://x/\\x1b]0;PWNED\\x07\\x1b[2J\\x0aINFO forged"


def invocations(data: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "invocations", "--data-dir", str(data), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.anyio
async def test_ard_mcp_invocations_prints_a_refused_callers_escapes_escaped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    identifier, tool = f"urn:air:agents.example:x{ESCAPES}", f"forecast\u202e{ESCAPES}"
    tokens = TokenStore({READER: Principal("reader", ("agents.example",))})
    settings = HttpSettings(tokens=tokens, invocation=InvocationPolicy(enabled=True))
    async with running(data, settings) as client:
        refused = await client.post(
            f"/agents/{quote(identifier, safe=':')}/invoke",
            params={"operation": tool},
            json={},
            headers={"Authorization": f"Bearer {READER}"},
        )
    assert refused.status_code in (403, 404), refused.text  # no invoke scope, and no such agent
    logged = AuditLog(data).newest(1)
    assert [(r.identifier, r.tool) for r in logged] == [(identifier, tool)]  # the log keeps what was sent
    assert logged[0].outcome in ("refused", "not-found")

    table = invocations(data)
    assert not_text(table) == []
    assert "urn:air:agents.example:x\\x1b]0;PWNED\\x07\\x1b[2J forecast\\u202e\\x1b]0;PWNED" in table
    lines = invocations(data, "--json")
    assert not_text(lines) == []
    assert [(r["identifier"], r["tool"]) for r in map(json.loads, lines.splitlines())] == [(identifier, tool)]


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [False, True])
def test_ard_mcp_crawl_prints_what_a_site_sent_escaped(tmp_path: Path, as_json: bool) -> None:
    """A header value may carry C1 controls (`\\x9b` is CSI to a terminal in 8-bit mode), and the report quotes it."""
    with Publisher() as site:
        site.put("/catalog.json", {"entries": []}, content_type="text/\x9b2J\x85x")
        command = [sys.executable, "-m", "ard_mcp", "crawl", "--allow-private-networks", site.url("/catalog.json")]
        command += ["--data-dir", str(tmp_path / "data"), *(["--json"] if as_json else [])]
        done = subprocess.run(command, env=quiet_env(tmp_path / "data"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # the one document failed
    assert not_text(done.stdout) == [] and not_text(done.stderr) == []
    if as_json:
        assert "content type text/\x9b2j\x85x is not one of" in json.loads(done.stdout)["sources"][0]["error"]
    else:
        assert "content type text/\\x9b2j\\x85x is not one of" in done.stdout
