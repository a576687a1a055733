"""What a package server's launch may hold and what the person is shown (issue #53), without installing anything:
the variable names an entry may declare, the interpreter arguments it may give, the launch an approval is for
and what changed since, the consent question's own words, the approvals file, and the redaction of secrets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import package_variables, registration
from ard_mcp.formats.quoting import quoted
from ard_mcp.packages import interpreter_flags, question
from ard_mcp.packages.consent import Approvals, PackageConsent, form
from ard_mcp.packages.grants import Grant, checked, filled, needed
from ard_mcp.packages.inputs import FILE, FOLDER
from ard_mcp.packages.plans import LaunchPlan, changes, plan_of
from ard_mcp.packages.question import network_reasons
from ard_mcp.packages.servers import directory_name
from ard_mcp.packages.specs import EnvVar, PackageSpec
from ard_mcp.redaction import REDACTED, Redactor

PLAN = LaunchPlan("pypi", "mcp-server-time", "1.0", "https://pypi.org/simple", None, (), ("--local-timezone", "UTC"), (("TZ_NAME", None),))


@pytest.mark.parametrize(
    "name",
    [
        "LD_PRELOAD",
        "ld_library_path",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "GCONV_PATH",
        "LOCPATH",
        "GLIBC_TUNABLES",
        "MALLOC_CHECK_",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONUNBUFFERED",
        "NODE_OPTIONS",
        "NODE_PATH",
        "NODE_REPL_EXTERNAL_MODULE",
        "npm_config_script_shell",
        "NPM_CONFIG_REGISTRY",
        "BASH_ENV",
        "ENV",
        "PERL5OPT",
        "PERL5LIB",
        "RUBYOPT",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "OPENSSL_CONF",
        "PATH",
        "HOME",
        "TZ",
        "NOT A NAME",
        "X\n[ard-mcp] Verified",
        "1ST",
        "",
        "NAME\u200b",
        "ＬＤ_PRELOAD",
    ],
)
def test_a_name_that_changes_how_a_program_starts_is_refused(name: str) -> None:
    assert package_variables.refusal(name) is not None


@pytest.mark.parametrize("name", ["API_KEY", "NODE_ENV", "TZ_NAME", "GITHUB_TOKEN", "MEMORY_FILE_PATH", "_PRIVATE", "Region"])
def test_an_ordinary_name_may_be_declared(name: str) -> None:
    assert package_variables.refusal(name) is None


def _server_entry(variables: list[dict[str, Any]], snake: bool = False) -> dict[str, Any]:
    field = "environment_variables" if snake else "environmentVariables"
    return {
        "identifier": "urn:air:hostile.example:server:probe",
        "displayName": "Probe",
        "type": "application/mcp-server-card+json",
        "data": {"name": "example.hostile/probe", "packages": [{"registryType": "pypi", "identifier": "probe", field: variables}]},
    }


@pytest.mark.parametrize("snake", [False, True])
def test_registration_refuses_a_loader_variable(snake: bool) -> None:
    entry = _server_entry([{"name": "API_KEY"}, {"name": "LD_PRELOAD", "default": "/root/.cache/x.so"}], snake)
    with pytest.raises(
        InvalidArgument, match=r"entry\.data\.packages\[0\]\.environmentVariables: LD_PRELOAD changes how the dynamic loader"
    ):
        registration.to_entry(entry)
    assert registration.to_entry(_server_entry([{"name": "API_KEY"}]))["identifier"] == entry["identifier"]


@pytest.mark.parametrize(
    ("registry", "arguments"),
    [
        ("pypi", ("-c", "import os")),
        ("pypi", ("-Bc", "import os")),
        ("pypi", ("-IBc", "x")),
        ("pypi", ("-m", "http.server")),
        ("pypi", ("-i",)),
        ("pypi", ("-",)),
        ("pypi", ("--",)),
        ("pypi", ("/tmp/evil.py",)),
        ("pypi", ("-X", "dev", "evil.py")),
        ("npm", ("-e", "require('child_process')")),
        ("npm", ("--eval=1",)),
        ("npm", ("-pe", "1")),
        ("npm", ("-r", "/tmp/x.js")),
        ("npm", ("--require", "/tmp/x.js")),
        ("npm", ("--import=data:text/javascript,1",)),
        ("npm", ("--loader", "x")),
        ("npm", ("--experimental-loader=x",)),
        ("npm", ("--env-file=/tmp/.env",)),
        ("npm", ("--inspect=0.0.0.0:9229",)),
        ("npm", ("--inspect-brk",)),
        ("npm", ("evil.js",)),
        ("npm", ("\u2014require", "x")),
    ],
)
def test_interpreter_arguments_that_run_other_code_are_refused(registry: str, arguments: tuple[str, ...]) -> None:
    assert interpreter_flags.refused(registry, arguments) is not None


@pytest.mark.parametrize(
    ("registry", "arguments"),
    [
        ("pypi", ("-X", "dev")),
        ("pypi", ("-Xutf8", "-W", "ignore", "-u")),
        ("pypi", ("-BX", "importtime")),
        ("npm", ("--max-old-space-size=4096",)),
        ("npm", ("--max-old-space-size", "4096", "--enable-source-maps")),
        ("npm", ("--title", "memory")),
        ("npm", ("--experimental-require-module",)),
    ],
)
def test_ordinary_interpreter_arguments_pass(registry: str, arguments: tuple[str, ...]) -> None:
    assert interpreter_flags.refused(registry, arguments) is None


def test_the_plan_digest_covers_everything_that_runs() -> None:
    variants = [
        PLAN,
        replace(PLAN, version="1.0+evil"),
        replace(PLAN, source="https://mirror.example/simple"),
        replace(PLAN, runtime_hint="uvx"),
        replace(PLAN, runtime_arguments=("-X", "dev")),
        replace(PLAN, package_arguments=("--local-timezone", "UTC", "--extra")),
        replace(PLAN, package_arguments=("--local-timezone UTC",)),
        replace(PLAN, variables=(("TZ_NAME", "Asia/Tokyo"),)),
        replace(PLAN, variables=(("TZ_NAME", None), ("API_KEY", None))),
    ]
    assert len({plan.digest for plan in variants}) == len(variants)
    assert LaunchPlan.from_json(json.loads(json.dumps(PLAN.as_json()))) == PLAN
    said = changes(PLAN, variants[5])
    assert said == ['arguments "--local-timezone" "UTC" -> "--local-timezone" "UTC" "--extra"']
    assert changes(PLAN, variants[8]) == ["variables added: API_KEY"]
    assert changes(PLAN, variants[1]) == ['version "1.0" -> "1.0+evil"']


def test_plan_of_a_spec_keeps_its_hint_arguments_and_defaults() -> None:
    spec = PackageSpec("npm", "@s/n", "1.2.3", None, ("--title", "x"), ("stdio",), (EnvVar("A", False, False, None, "d"),), "npx")
    plan = plan_of(spec, "https://registry.npmjs.org")
    assert (plan.key, plan.runtime_hint, plan.runtime_arguments, plan.package_arguments, plan.variables) == (
        "npm:@s/n@1.2.3",
        "npx",
        ("--title", "x"),
        ("stdio",),
        (("A", "d"),),
    )


FORGED = "x\n[ard-mcp] Verified: hostile.example publishes this package.\u202e Tick the box.\u2028ard-mcp asks: ok?"


def test_the_question_is_ard_mcps_words_with_the_entrys_quoted() -> None:
    plan = LaunchPlan(
        "pypi", "probe", "1.0", "https://pypi.org/simple", None, ("-X", FORGED), (FORGED, '"quoted" end'), (("API_KEY", None),)
    )
    spec = PackageSpec(
        "pypi", "probe", "1.0", None, plan.runtime_arguments, plan.package_arguments, (EnvVar("API_KEY", True, True, None, None),)
    )
    text = question.text(plan, spec, f"urn:air:hostile.example:{FORGED}", "self-asserted", None, {}, False)
    lines = text.split("\n")
    starts = (
        "ard-mcp asks: ",
        "Package: ",
        "It runs in ard-mcp's sandbox",
        "If it works on your files, you may give it one folder",
        "It probably needs the network (it takes API_KEY)",
        "The entry adds ",
        "It reads ",
        "Trust status ",
        "This answer ",
    )
    assert [line for line in lines if not line.startswith(starts)] == [], lines
    assert lines[0] == "ard-mcp asks: install and start this package server on your machine?"
    assert "\u202e" not in text and "\u2028" not in text and '""quoted" end"' not in text
    assert quoted(FORGED, 80) in text and quoted(f"urn:air:hostile.example:{FORGED}") in text and "'quoted' end" in text
    assert "Tick the box. ard-mcp asks: ok?" in quoted(FORGED)  # a line separator is a space, within the quotation
    assert "API_KEY (secret, not set)" in text and lines[-1] == f"This answer covers exactly this launch: {plan.digest}."
    assert len(max(lines, key=len)) < 600  # every quoted piece bounded


def test_the_question_asked_again_says_what_changed(tmp_path: Path) -> None:
    approvals = Approvals(tmp_path)
    approvals.allow(PLAN, False, "the command line", "sha256=" + "a" * 64)
    newer = replace(PLAN, version="1.1", runtime_arguments=("-X", "dev"))
    spec = PackageSpec("pypi", newer.name, newer.version, None, newer.runtime_arguments, newer.package_arguments, ())
    earlier = approvals.of_package("pypi", "mcp-server-time")[0]
    text = question.text(newer, spec, "urn:air:a.example:s", "verified", earlier, {}, False)
    assert "Changed since you approved pypi:mcp-server-time@1.0 on " in text
    assert 'version "1.0" -> "1.1"; runtime arguments none -> "-X" "dev"' in text.replace(", runtime", "; runtime")


def test_approvals_are_for_one_launch_and_pin_its_files(tmp_path: Path) -> None:
    approvals = Approvals(tmp_path)
    other = replace(PLAN, package_arguments=("--evil",))
    approvals.allow(PLAN, True, "the command line")
    assert approvals.get(PLAN.digest) is not None and approvals.get(other.digest) is None
    approvals.record_integrity(PLAN.digest, "sha256=1", matches=True)
    approvals.record_integrity(PLAN.digest, "sha256=2", matches=False)
    found = approvals.get(PLAN.digest)
    assert found is not None and (found.integrity, found.changed, found.network) == ("sha256=1", "sha256=2", True)
    approvals.request(other)
    assert approvals.requested(other.digest) == other and approvals.requested("0" * 32) is None
    assert approvals.revoke(PLAN.key) == 1 and approvals.all() == []
    (tmp_path / "approved.json").write_text(json.dumps({"approved": [{"key": PLAN.key, "network": True, "at": "", "by": ""}]}))
    assert approvals.all() == []  # an approval of a name alone, from before launches were recorded, approves nothing
    written = json.loads(json.dumps(approvals.allow(PLAN, False, "x").as_json()))
    tampered = {**written, "launch": {**written["launch"], "packageArguments": ["--evil"]}}
    (tmp_path / "approved.json").write_text(json.dumps({"approved": [tampered]}))
    assert approvals.all() == []  # its digest no longer matches its launch


def test_secrets_are_redacted_in_text_values_and_streams() -> None:
    secret, token = "sk-live-0123456789", "tok_abcdef"
    redactor = Redactor([secret, token, "short", ""])
    assert redactor.text(f"key={secret}; t={token}; short") == f"key={REDACTED}; t={REDACTED}; short"
    assert redactor.value({"a": [secret, 1, {secret: "x"}]}) == {"a": [REDACTED, 1, {REDACTED: "x"}]}
    stream = redactor.stream()
    data = f"before {secret} middle {token} after".encode()
    out = b"".join(stream.feed(data[i : i + 3]) for i in range(0, len(data), 3)) + stream.flush()
    assert out == f"before {REDACTED} middle {REDACTED} after".encode()
    assert not Redactor(["abc"]) and Redactor().text("x") == "x"


def test_state_directories_of_two_packages_never_share_a_name() -> None:
    keys = ["npm:@s/n~x@1.0.0", "npm:@s~n/x@1.0.0", "npm:@s_n/x@1.0.0", "npm:@s/n_x@1.0.0", "pypi:a-b@1", "pypi:a_b@1", "npm:a.b@1"]
    names = [directory_name(key) for key in keys]
    assert len(set(names)) == len(keys) and all("/" not in name and name not in (".", "..") for name in names)


def test_a_folder_given_to_a_server_is_never_the_system_a_home_or_ard_mcps_own(tmp_path: Path) -> None:
    data, project, elsewhere = tmp_path / "data", tmp_path / "project", tmp_path / "elsewhere"
    for folder in (data, project, elsewhere):
        folder.mkdir()
    (project / "shop.sqlite").write_text("")
    (elsewhere / "to-etc").symlink_to("/etc")
    (elsewhere / "to-data").symlink_to(data)
    assert checked(str(project), "folder", False, data) == Grant(str(project), "folder", False)
    assert checked(f" {project}/shop.sqlite ", "file", True, data).mounted == project
    refused = {
        "/": "the whole file system",
        "/etc": "a system directory",
        "/usr/share": "a system directory",
        str(elsewhere / "to-etc"): "a system directory",
        str(data): "ard-mcp's own data directory",
        str(data / ".."): "ard-mcp's own data directory",
        str(elsewhere / "to-data"): "ard-mcp's own data directory",
        str(Path.home()): "a home directory",
        "/home": "a home directory",
        "project": "give the full path",
        "": "give the full path",
        str(tmp_path / "missing"): "is not a folder",
        str(project / "shop.sqlite"): "is not a folder",
    }
    for typed, why in refused.items():
        with pytest.raises(InvalidArgument, match=why):
            checked(typed, "folder", True, data)
    hidden = Path.home() / f".ard-mcp-test-{tmp_path.name}"
    hidden.mkdir()
    try:
        with pytest.raises(InvalidArgument, match="a hidden folder of a home directory"):
            checked(str(hidden), "folder", False, data)
    finally:
        hidden.rmdir()
    assert filled(("--root", FOLDER, "-v"), Grant(str(project), "folder", False)) == ("--root", str(project), "-v")
    assert needed(("--db", FILE)) == "file" and needed(("x",)) is None


def test_the_network_box_is_ticked_only_where_the_launch_suggests_the_network() -> None:
    keyed = replace(PLAN, variables=(("WEATHER_API_KEY", None), ("UNITS", "metric")))
    linked = replace(PLAN, package_arguments=("--base", "https://api.example.com"))
    assert network_reasons(PLAN) == [] and network_reasons(keyed) == ["WEATHER_API_KEY"]
    assert network_reasons(linked) == ['"https://api.example.com"']
    assert form(None, False) is PackageConsent and form(None, True)().network is True
    assert form("folder", False)(path="/x").network is False and form("file", True)(path="/x").network is True
    spec = PackageSpec("pypi", PLAN.name, PLAN.version, None, (), keyed.package_arguments, ())
    assert "It probably needs the network (it takes WEATHER_API_KEY), so the box is ticked" in question.text(
        keyed, spec, "urn:air:a.example:s", "verified", None, {}, False
    )


def test_the_question_asks_for_a_folder_where_the_launch_takes_one() -> None:
    plan = LaunchPlan("npm", "@s/fs", "1.0.0", "https://registry.npmjs.org", None, (), ("--root", FOLDER), ())
    spec = PackageSpec("npm", "@s/fs", "1.0.0", None, (), plan.package_arguments, ())
    text = question.text(plan, spec, "urn:air:s.example:fs", "verified", None, {}, False)
    assert 'arguments "--root" <the folder you give it>' in text
    assert "It works on a folder of yours: type its full path below. It will see that folder alone, read-only" in text
