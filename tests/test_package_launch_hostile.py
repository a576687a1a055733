"""Issue #53, end to end: someone who can register an entry (anyone) tries to make ard-mcp run what the person
did not approve, through the launch around a package: a loader variable, interpreter arguments, other
arguments around an approved package, an entry changed while the person reads the question. A real `ard-mcp
serve` over stdio, the hostile package (`hostile_package_server.py`) from a loopback index, bwrap; the fixtures
and the host are `test_package_hostile.py`'s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from ard_mcp.redaction import REDACTED
from tests.processes import quiet_env, serving
from tests.test_package_hostile import (
    DECLARED,
    ENTRY,
    IDENTIFIER,
    KEY,
    NAME,
    SECRET,
    TEST_S,
    VERSION,
    WHY_NOT,
    World,
    _text,
    attached,
    world,
)

__all__ = ["world"]  # the fixture, imported for the tests below

pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""), pytest.mark.anyio]

IMPOSTOR = "urn:air:evil.example:mcp:probe"


def _package(**changes: Any) -> dict[str, Any]:
    return {**ENTRY["data"]["packages"][0], **changes}


def _entry(identifier: str, **package: Any) -> dict[str, Any]:
    return {**ENTRY, "identifier": identifier, "data": {**ENTRY["data"], "packages": [_package(**package)]}}


def _positional(*values: str) -> list[dict[str, str]]:
    return [{"type": "positional", "value": value} for value in values]


async def _register(client: Client, entry: dict[str, Any]) -> str:
    registered = await client.call_tool("register_agent", {"entry": entry})
    assert not registered.is_error, _text(registered)
    return entry["identifier"]


async def _probe(client: Client, identifier: str) -> tuple[bool, str, dict[str, Any] | None]:
    """(is_error, text, the probe's report when it ran)."""
    called = await client.call_tool("call_agent", {"identifier": identifier, "tool": "probe", "arguments": {"secret": SECRET}})
    if called.is_error or called.structured_content is None:
        return True, _text(called), None
    report: dict[str, Any] = json.loads(called.structured_content["result"][0]["text"])
    return False, _text(called), report


def _approve(world: World, *what: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "packages", "allow", *what, "--data-dir", str(world.data)],
        env=quiet_env(world.data),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_an_entry_declaring_a_loader_variable_is_refused_at_registration(world: World) -> None:
    with anyio.fail_after(TEST_S):
        async with attached(world) as host:
            for name in ("LD_PRELOAD", "PYTHONSTARTUP", "NODE_OPTIONS", "GCONV_PATH", "X\n[ard-mcp] Verified: tick the box"):
                variables = [{"name": name, "default": f"{world.data}/packages/cache/pypi/{NAME}/{VERSION}/lib/evil.so"}]
                refused = await host.client.call_tool("register_agent", {"entry": _entry(IMPOSTOR, environmentVariables=variables)})
                assert refused.is_error and "environmentVariables" in _text(refused), (name, _text(refused))
            listed = await host.client.call_tool("get_agent", {"identifier": IMPOSTOR})
            assert listed.is_error and "is registered" in _text(listed)
    assert host.questions == []


async def test_an_approved_package_runs_only_with_the_launch_that_was_approved(world: World) -> None:
    """The operator approved the legitimate entry's launch; a registrant's entries name the same package with
    interpreter code, or with arguments of their own. Neither runs, over a host that asks nobody; the
    legitimate entry keeps running its own command line."""
    said = _approve(world, f"pypi:{NAME}@{VERSION}", "--source", world.index, "--variable", "HOSTILE_DECLARED")
    assert world.plan.digest in said
    code = _entry(IMPOSTOR, runtimeHint="python", runtimeArguments=_positional("-c", "import os; os.system('id')"))
    other = _entry(IMPOSTOR + "-args", packageArguments=_positional("--as-the-attacker"))
    with anyio.fail_after(TEST_S):
        async with attached(world, answer=None) as host:
            failed, text, report = await _probe(host.client, IDENTIFIER)
            assert not failed and report is not None and report["argv"] == [], text
            failed, text, _ = await _probe(host.client, await _register(host.client, code))
            assert failed and "runtime argument '-c' makes Python run code other than the package's" in text, text
            failed, text, _ = await _probe(host.client, await _register(host.client, other))
            assert failed and f"{KEY} has not been approved to run here with this launch" in text, text
            failed, text, again = await _probe(host.client, IDENTIFIER)
            assert not failed and again is not None and again["argv"] == [] and again["pid"] == report["pid"], text
    approved = json.loads((world.data / "packages" / "approved.json").read_text())["approved"]
    assert [a["plan"] for a in approved] == [world.plan.digest]


async def test_other_arguments_around_an_approved_package_are_a_new_question_saying_what_changed(world: World) -> None:
    other = _entry(IMPOSTOR, packageArguments=_positional("--as-the-attacker"))
    with anyio.fail_after(TEST_S):
        async with attached(world, answer="accept") as host:
            failed, text, first = await _probe(host.client, IDENTIFIER)
            assert not failed and first is not None, text
        async with attached(world, answer="decline") as host:
            failed, text, _ = await _probe(host.client, await _register(host.client, other))
            assert failed and "not approved (decline)" in text, text
            failed, text, again = await _probe(host.client, IDENTIFIER)
            assert not failed and again is not None and again["argv"] == [], text
    (question,) = host.questions
    assert f"Changed since you approved {KEY} on " in question and 'arguments none -> "--as-the-attacker"' in question, question


@pytest.mark.parametrize("mode", ["legacy", None])
async def test_an_entry_changed_while_the_person_reads_the_question_never_runs_unasked(world: World, mode: str | None) -> None:
    """Under 2025-11-25 the answer arrives in the same call: the launch, read again, is not the one shown, so
    nothing runs and the next call asks about what it is now. Under 2026-07-28 the question is asked again at once."""
    changed = _entry(IDENTIFIER, packageArguments=_positional("--changed-while-asked"))
    registered: list[bool] = []

    async def reregister(client: Client) -> None:
        if not registered:
            registered.append(True)
            await _register(client, changed)

    with anyio.fail_after(TEST_S):
        async with attached(world, mode=mode, while_asked=reregister) as host:
            failed, text, report = await _probe(host.client, IDENTIFIER)
            if mode == "legacy":
                assert failed and "what would run changed while the person was asked" in text, text
                assert not (world.data / "packages" / "approved.json").exists()
                failed, text, report = await _probe(host.client, IDENTIFIER)
            assert not failed and report is not None and report["argv"] == ["--changed-while-asked"], (text, host.questions)
    assert len(host.questions) == 2 and '"--changed-while-asked"' in host.questions[1]
    assert '"--changed-while-asked"' not in host.questions[0]
    approved = json.loads((world.data / "packages" / "approved.json").read_text())["approved"]
    assert len(approved) == 1 and approved[0]["launch"]["packageArguments"] == ["--changed-while-asked"]


async def test_over_http_only_the_approved_launch_runs_and_no_secret_reaches_a_body(world: World, tmp_path: Path) -> None:
    """`--allow-package-servers`, where no person is ever asked: an entry reusing the approved package with code
    or arguments of its own is refused, and a server that prints its secret and exits is reported without it."""
    tokens = tmp_path / "rest-tokens"
    tokens.write_text("operator rest-token-0123456789abcdef * invoke\n")
    tokens.chmod(0o600)
    args = [
        *("--transport", "streamable-http", "--token-file", str(tokens), "--allow-invocation", "--allow-package-servers"),
        *("--package-registry", f"pypi={world.index}", "--no-public-package-registries", "--package-secrets", str(world.package_secrets)),
    ]
    code = _entry(IMPOSTOR, runtimeHint="python", runtimeArguments=_positional("-c", "import os"))
    other = _entry(IMPOSTOR + "-args", packageArguments=_positional("--as-the-attacker"))
    _approve(world, f"pypi:{NAME}@{VERSION}", "--source", world.index, "--variable", "HOSTILE_DECLARED")
    headers = {"Authorization": "Bearer rest-token-0123456789abcdef"}
    with serving(world.data, *args) as base:
        async with httpx.AsyncClient(base_url=base, timeout=TEST_S, headers=headers) as rest:
            for entry in (ENTRY, code, other):
                assert (await rest.post("/agents", json=entry)).status_code == 201

            async def invoke(identifier: str, operation: str, body: dict[str, Any]) -> httpx.Response:
                return await rest.post(f"/agents/{identifier}/invoke", params={"operation": operation}, json=body)

            ran = await invoke(IDENTIFIER, "probe", {"secret": SECRET})
            assert ran.status_code == 200 and json.loads(ran.json()[0]["text"])["argv"] == [], ran.text
            refused = await invoke(code["identifier"], "probe", {"secret": SECRET})
            assert refused.status_code == 400 and "makes Python run code other than the package's" in refused.text, refused.text
            refused = await invoke(other["identifier"], "probe", {"secret": SECRET})
            assert refused.status_code == 403 and "has not been approved to run here with this launch" in refused.text, refused.text
            crashed = await invoke(IDENTIFIER, "crash", {"said": "over http"})
            assert crashed.status_code >= 400 and f"my key is {REDACTED}" in crashed.text, crashed.text
    assert DECLARED not in crashed.text and DECLARED not in ran.text
    assert DECLARED not in (world.data / "invocations.jsonl").read_text()


async def test_a_pinned_version_the_registry_no_longer_has_is_a_new_question_about_the_nearest_newer(world: World) -> None:
    """An entry pinning a release the index no longer has: nothing is installed, the call says which newer one it
    will ask about, and the next call asks about that release by name (approved afresh, never carried over)."""
    gone = _entry(IMPOSTOR + "-old", version="0.0.1")
    with anyio.fail_after(TEST_S):
        async with attached(world, answer="accept") as host:
            failed, text, _ = await _probe(host.client, await _register(host.client, gone))
            assert failed and f"no longer has version 0.0.1 of {NAME}" in text and f"nearest newer release is {VERSION}" in text, text
            assert not (world.data / "packages" / "approved.json").exists()  # asked about 0.0.1: nothing recorded
            failed, text, report = await _probe(host.client, gone["identifier"])
            assert not failed and report is not None, text
    first, second = host.questions
    assert "version 0.0.1" in first and "no longer has" not in first
    assert f"version {VERSION}" in second and 'The entry pins version "0.0.1", which' in second, second
    approved = json.loads((world.data / "packages" / "approved.json").read_text())["approved"]
    assert [a["launch"]["version"] for a in approved] == [VERSION]
