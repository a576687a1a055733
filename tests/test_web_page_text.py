"""What the web page says, checked without a server or a browser (tests/test_web_page.py checks the pages in
Chromium): an entry's text escaped with matched words marked and invisible characters named (`ard_mcp.ui.text`);
media types, score signals, evidence labels and publishers in words (`labels`); the sort the URL asks for
(`search_view`); the package and host configurations of an MCP server (`hosts`); the last crawl's failures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.datastructures import QueryParams

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import media_types
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import AIDIP_TYPE, XU_TYPE
from ard_mcp.formats.messages import MatchedExample, ScoreComponents
from ard_mcp.invocation.policy import Limits
from ard_mcp.invocation.targets import target_of
from ard_mcp.packages.specs import PackageSpec, Unusable, package_of
from ard_mcp.ui.hosts import Hosts, hosts
from ard_mcp.ui.labels import example_label, publisher_label, signal_help, signal_label, type_label
from ard_mcp.ui.operator_view import LastCrawl
from ard_mcp.ui.search_view import PageState
from ard_mcp.ui.text import shown, visible
from ard_mcp.web.report import CrawlReport, SourceOutcome


def test_markup_in_an_entry_is_escaped_even_where_a_word_is_marked() -> None:
    assert str(shown('<script>alert("x")</script>')) == "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
    assert str(shown("<b>bold</b>", ["b"])) == "&lt;<mark>b</mark>&gt;<mark>bold</mark>&lt;/<mark>b</mark>&gt;"


def test_matched_words_are_marked_whole_with_their_inflections_and_any_case() -> None:
    assert str(shown("Reconcile overdue Invoices.", ["invoice", "overdue"])) == "Reconcile <mark>overdue</mark> <mark>Invoices</mark>."
    assert str(shown("subinvoice", ["invoice"])) == "subinvoice"  # not inside another word
    assert str(shown("c++ and c#", ["c++"])) == "<mark>c++</mark> and c#"  # a word is text, not a pattern


def test_invisible_characters_are_named_instead_of_rendered() -> None:
    out = str(shown("pay\u202egnp.exe ig\u200bnore", ["ignore"]))
    assert "\u202e" not in out and "\u200b" not in out
    assert "U+202E" in out and "U+200B" in out and 'class="invisible"' in out
    assert visible("book a \u202eletoh") == "book a [U+202E]letoh"
    assert str(shown("👨\u200d👩")) == "👨\u200d👩"  # a joiner inside an emoji sequence is no disguise


# -- words instead of machine strings (`ard_mcp.ui.labels`) ------------------------------------------------------
def test_media_types_read_as_what_they_are_and_unknown_ones_as_they_are() -> None:
    assert type_label(media_types.MCP_SERVER_CARD) == type_label(media_types.MCP_SERVER_V05) == "MCP server"
    assert type_label("Application/A2A-Agent-Card+JSON; version=1.0") == "A2A agent"
    assert type_label(media_types.AGENT_SKILLS_MARKDOWN) == type_label("application/ai-skill") == "skill"
    assert type_label("text/markdown") == "text/markdown"  # Markdown without the skills profile is no skill
    assert type_label(media_types.AI_CATALOG) == "AI catalog"
    assert (type_label(XU_TYPE), type_label(AIDIP_TYPE)) == ("agent (Xu)", "agent (AIDIP)")
    assert type_label("application/x-something+json") == "application/x-something+json"


def test_every_score_signal_has_words_and_says_what_it_measures() -> None:
    for name, field in ScoreComponents.model_fields.items():
        label = signal_label(name)
        assert label != name or name.islower(), name
        assert not any(c.isupper() for c in label), label  # no camelCase on the page
        assert signal_help(name) == field.description
    assert signal_label("secondExample") == "second-best example"


def test_an_evidence_label_is_shown_only_when_the_text_does_not_already_say_it() -> None:
    def label(kind: str, name: str, text: str) -> str | None:
        return example_label(MatchedExample.model_validate({"kind": kind, "label": name, "text": text, "similarity": 0.5}))

    question = "What are the opening hours of the Louvre tomorrow?"
    assert label("query", question[:20], question) is None  # was "query What are the op...: What are the op..."
    assert label("tool", "get_forecast", "get forecast: Daily temperature") is None
    assert label("description", "Weather", "Weather: forecasts") is None
    assert label("tool", "geocode", "Turn a street address into latitude and longitude") == "geocode"
    assert label("query", "lyon-turin", "how long is the drive from Lyon to Turin") == "lyon-turin"  # a Xu example's own id


def test_a_publisher_on_github_is_named_with_its_owner() -> None:
    def entry(identifier: str) -> CatalogEntry:
        return CatalogEntry.model_validate({"identifier": identifier, "displayName": "x", "type": media_types.MCP_SERVER_CARD, "data": {}})

    assert publisher_label(entry("urn:air:github.com:acme-tools:files-mcp")) == "github.com/acme-tools"
    assert publisher_label(entry("urn:ai:github.com:yan5236:bing-cn-mcp-server")) == "github.com/yan5236"  # v0.5's prefix
    assert publisher_label(entry("urn:air:github.com:files")) == "github.com"  # no owner in it
    assert publisher_label(entry("urn:air:example.com:weather:forecast")) == "example.com"


# -- sorting: the URL's `sort`, mapped to the registry's orders (`ard_mcp.ui.search_view`) -----------------------
def test_sorting_is_relevance_for_a_task_and_a_listing_order_without_one() -> None:
    browse = PageState.of(QueryParams("tag=filler"))
    assert browse.sort == "name" and browse.url(page=2) == "/?tag=filler&page=2"
    newest = PageState.of(QueryParams("tag=filler&sort=updated"))
    assert newest.sort == "updated" and newest.url(page=2) == "/?tag=filler&sort=updated&page=2"  # paging keeps the order
    assert [(k, current) for k, _, _, current in newest.sorts()] == [("name", False), ("updated", True)]
    task = PageState.of(QueryParams("q=weather&tag=filler&sort=updated"))
    assert task.sort == "relevance" and task.url() == "/?q=weather&tag=filler"  # a search has no other order
    offered = {k: url for k, _, url, _ in task.sorts()}
    assert list(offered) == ["relevance", "name", "updated"] and offered["name"] == "/?tag=filler&sort=name"
    with pytest.raises(InvalidArgument, match="sort: must be one of relevance, name, updated"):
        PageState.of(QueryParams("sort=size"))


# -- what packages need, read by the code that starts them (`ard_mcp.ui.hosts`) ----------------------------------
def _server(identifier: str, data: dict[str, Any]) -> CatalogEntry:
    return CatalogEntry.model_validate(
        {"identifier": identifier, "displayName": "Server", "type": media_types.MCP_SERVER_CARD, "data": data}
    )


def _hosts(entry: CatalogEntry) -> Hosts:
    return hosts(entry, target_of(entry.stored(), Limits()))


NPM_SERVER = {
    "name": "io.github.acme/files",
    "packages": [
        {
            "registryType": "npm",
            "identifier": "@acme/files",
            "version": "1.2.0",
            "runtimeHint": "node",
            "runtimeArguments": [{"type": "named", "name": "--max-old-space-size", "value": "512"}],
            "packageArguments": [{"type": "named", "name": "--root", "value": "/srv/files"}, {"type": "positional", "value": "serve"}],
            "environmentVariables": [
                {"name": "API_KEY", "isRequired": True, "isSecret": True},
                {"name": "REGION", "isRequired": True, "default": "eu"},
                {"name": "DEBUG", "description": "more logging"},
            ],
        }
    ],
}


def test_an_npm_servers_configuration_is_built_from_its_package_for_every_host() -> None:
    entry = _server("urn:air:github.com:acme:files", NPM_SERVER)
    spec = package_of(entry.stored())
    assert isinstance(spec, PackageSpec)
    found = _hosts(entry)
    assert found.package is not None and found.missing is None and found.package_problem is None
    assert found.package.command_line == "npx -y '--node-options=--max-old-space-size 512' @acme/files@1.2.0 --root /srv/files serve"
    assert [b.host.title for b in found.configs] == ["Claude Desktop", "Claude Code", "Cursor", "VS Code"]
    for config in found.configs:
        assert config.text is not None
        servers = json.loads(config.text)[config.host.key]
        assert list(servers) == ["files"]
        server = servers["files"]
        secret = "${input:files-API_KEY}" if config.host.id == "vscode" else "<your API_KEY>"  # VS Code asks for it
        assert server["command"] == "npx" and server["env"] == {"API_KEY": secret, "REGION": "eu"}  # the optional DEBUG is left out
        assert server["args"][-len(spec.package_arguments) :] == list(spec.package_arguments)  # what `call_agent` starts it with
        assert server.get("type") == ("stdio" if config.host.id in ("vscode", "claude-code") else None)


def test_a_pypi_servers_command_is_uvx_with_the_pinned_release() -> None:
    data = {"packages": [{"registryType": "pypi", "identifier": "Mcp_Server.Time", "version": "0.6.2", "packageArguments": []}]}
    found = _hosts(_server("urn:air:example.com:time", data))
    assert found.package is not None and found.package.command_line == "uvx mcp-server-time==0.6.2"
    assert json.loads(found.configs[0].text or "") == {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time==0.6.2"]}}}


def test_a_package_that_cannot_be_started_gets_its_reason_instead_of_a_configuration() -> None:
    container = {"packages": [{"registryType": "oci", "identifier": "acme/files", "version": "1.0"}]}
    needs_input = {
        "packages": [
            {
                "registryType": "npm",
                "identifier": "files",
                "version": "1.0.0",
                "packageArguments": [{"type": "positional", "isRequired": True, "value": "<your_team_id>"}],
            }
        ]
    }
    for data in (container, needs_input):
        entry = _server("urn:air:example.com:files", data)
        spec = package_of(entry.stored())
        assert isinstance(spec, Unusable)
        found = _hosts(entry)
        assert found.configs == [] and found.package is None
        assert found.package_problem == spec.reason and found.missing is not None and spec.reason in found.missing


def test_a_folder_the_person_gives_is_a_placeholder_in_the_command() -> None:
    data = {
        "packages": [
            {
                "registryType": "npm",
                "identifier": "files",
                "version": "1.0.0",
                "packageArguments": [{"type": "positional", "isRequired": True, "value": "<absolute_path>"}],
            }
        ]
    }
    found = _hosts(_server("urn:air:example.com:files", data))
    assert found.package is not None and found.package.command == ("npx", "-y", "files@1.0.0", "/path/to/your/folder")


def test_a_seed_package_of_no_named_registry_says_both_commands_and_configures_neither() -> None:
    data = {
        "packages": [
            {"registry_name": "unknown", "name": "agentql-mcp", "version": "1.0.0", "environment_variables": [{"name": "AGENTQL_API_KEY"}]}
        ]
    }
    found = _hosts(_server("urn:air:github.com:tinyfish-io:agentql-mcp", data))
    assert found.configs == [] and found.package is not None and found.package.command is None
    assert (found.registry or "").startswith("npm or PyPI") and [v.name for v in found.package.environment] == ["AGENTQL_API_KEY"]
    assert found.missing is not None and "npx -y agentql-mcp@1.0.0" in found.missing and "uvx agentql-mcp==1.0.0" in found.missing


def test_a_remote_server_is_configured_by_its_url_and_its_package_still_shown() -> None:
    data = {**NPM_SERVER, "remotes": [{"type": "sse", "url": "https://files.example.com/sse"}]}
    found = _hosts(_server("urn:air:example.com:files", data))
    vscode = next(b for b in found.configs if b.host.id == "vscode")
    assert json.loads(vscode.text or "") == {"servers": {"files": {"type": "sse", "url": "https://files.example.com/sse"}}}
    assert found.package is not None and found.package.command_line is not None
    agent = CatalogEntry.model_validate(
        {"identifier": "urn:air:example.com:a", "displayName": "A", "type": media_types.A2A_AGENT_CARD, "data": {}}
    )
    assert _hosts(agent) == Hosts(None, None, [], None)  # only an MCP server goes in an MCP host


# -- the operator's page keeps the last crawl's failures (`ard_mcp.ui.operator_view`) ----------------------------
def test_the_last_crawl_lists_what_failed() -> None:
    report = CrawlReport(
        sources=[
            SourceOutcome(url="https://a.example/.well-known/ai-catalog.json", via="well-known", status="server-error", error="HTTP 503"),
            SourceOutcome(url="https://b.example/.well-known/ai-catalog.json", via="well-known", status="ingested", entries=2),
        ],
        errors=["c.example: found no catalog"],
        rejected=["entries[3]: identifier: must be urn:air:..."],
    )
    crawl = LastCrawl.of("a.example", report)
    assert crawl.failures == [
        "c.example: found no catalog",
        "https://a.example/.well-known/ai-catalog.json: server-error (HTTP 503)",
        "rejected entries[3]: identifier: must be urn:air:...",
    ]
    assert not crawl.failed  # b.example's catalog was read
    stopped = LastCrawl.of("x", error="url: not a URL or a domain")
    assert stopped.failed and stopped.failures == ["url: not a URL or a domain"]
