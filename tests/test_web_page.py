"""The web page in a real browser: `ard-mcp serve` on a loopback port, driven by headless Chromium through
search, facets, paging, an entry's page, the operator's pages and hostile entries, with axe-core's
accessibility check on each page at phone (375 px) and desktop (1440 px) widths. Screenshots go to a folder
the tests make (or to `ARD_MCP_SCREENSHOTS`, which is how docs/images/ was made)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from ard_mcp.formats.messages import fit_of
from tests.agent_servers import aidip_agent
from tests.agent_servers import serving as agent_serving
from tests.conftest import WEATHER
from tests.processes import serving
from tests.web_browser import (
    CHROMIUM,
    ENTRIES,
    FILLERS,
    GEO,
    HOSTILE,
    LONG_TAG,
    OPERATOR_TOKEN,
    PACKAGED,
    PUBLISHER_TOKEN,
    PWN,
    TOKEN_FILE,
    TRANSLATOR,
    need_chromium,
    no_horizontal_scroll,
    register,
    serious_violations,
    translator,
)
from tests.web_publisher import Publisher

pytestmark = pytest.mark.slow
HTML = {"Accept": "text/html"}
A2A = "application/a2a-agent-card+json"
MCP = "application/mcp-server-card+json"
LEGACY_MCP: dict[str, Any] = {  # registered with v0.5's type: served, and shown, under the v0.9 name
    "identifier": "urn:air:notes.example.net:server:notes",
    "displayName": "Plain Notes",
    "type": "application/mcp-server+json",
    "description": "Keep short plain-text notes and search them.",
    "tags": ["notes"],
    "data": {"name": "notes"},
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's URL; it federates with one upstream registry (a loopback site that
    answers every search with no results) and may call one agent (an AIDIP agent on another loopback port)."""
    need_chromium()
    root = tmp_path_factory.mktemp("web-page")
    tokens = root / "tokens.txt"
    tokens.write_text(TOKEN_FILE, encoding="utf-8")
    tokens.chmod(0o600)
    args = ("--transport", "streamable-http", "--token-file", str(tokens), "--allow-private-networks", "--allow-invocation")
    with Publisher() as upstream, agent_serving(lambda base: aidip_agent()) as agent:
        upstream.put("/search", {"results": []})
        with serving(root / "data", *args, "--upstream", upstream.origin) as base:
            register(base, [*ENTRIES, translator(agent), LEGACY_MCP])
            register(base, [HOSTILE], PUBLISHER_TOKEN)
            yield base


@pytest.fixture(scope="module")
def open_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second server: an empty registry on loopback with no token file, where anyone on the machine may write."""
    need_chromium()
    with serving(tmp_path_factory.mktemp("web-page-open") / "data", "--transport", "streamable-http") as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("ARD_MCP_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Tab:
    """A page in a fresh browser context, with every dialog and console error it met."""

    def __init__(self, browser: Any, base: str, width: int = 1440, javascript: bool = True) -> None:
        self.context = browser.new_context(base_url=base, viewport={"width": width, "height": 900}, java_script_enabled=javascript)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("response", self._response)

    def _console(self, message: Any) -> None:
        """Errors in the console (a CSP refusal among them); a page's own status is checked by the tests."""
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(message.text)

    def _response(self, response: Any) -> None:
        if response.status >= 400 and response.request.resource_type != "document":
            self.errors.append(f"{response.status} {response.url}")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any, site: str) -> Iterator[Tab]:
    opened = Tab(browser, site)
    yield opened
    assert opened.dialogs == [] and opened.errors == [], (opened.dialogs, opened.errors)
    opened.close()


def _sign_in(tab: Tab, token: str = OPERATOR_TOKEN) -> Any:
    tab.page.goto("/operator")
    assert urlsplit(tab.page.url).path == "/operator/login"
    tab.page.get_by_label("Operator token").fill(token)
    with tab.page.expect_navigation() as navigation:
        tab.page.get_by_role("button", name="Sign in").click()
    return navigation.value


# -- search ---------------------------------------------------------------------------------------------------
def test_a_task_typed_in_the_box_finds_the_agent_and_shows_why(tab: Tab, shots: Path) -> None:
    page = tab.page
    page.goto("/")
    page.get_by_label("What should it do?").fill("weather forecast for Paris tomorrow")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=weather"))
    first = page.locator("li.result").first
    assert first.locator("h3").inner_text() == WEATHER["displayName"]
    score = int(first.locator("meter").get_attribute("value") or -1)
    assert 0 < score <= 100 and first.locator(".score .number").inner_text() == str(score)
    assert first.locator(".fit").inner_text() == {"high": "likely fits", "medium": "may fit", "low": "unlikely fit"}[fit_of(score, True)]
    assert first.locator(".badge").inner_text() == "self-asserted" and "example.com" in first.locator(".publisher").inner_text()
    assert first.locator(".type").inner_text() == "MCP server" and first.locator(".type").get_attribute("title") == MCP
    marked = {m.lower() for m in first.locator("mark").all_inner_texts()}
    assert marked & {"weather", "forecast", "forecasts"}, marked
    assert first.locator(".evidence").count() == 1
    page.screenshot(path=str(shots / "search-1440.png"), full_page=True)


def test_facet_counts_are_explores_and_filters_are_removable_chips(tab: Tab, site: str) -> None:
    explored = httpx.post(f"{site}/explore", json={"resultType": {"facets": [{"field": "type"}, {"field": "tags"}]}}).json()["facets"]
    page = tab.page
    page.goto("/")

    def counts(heading: str) -> dict[str, int]:
        """Each value's count, keyed by the value itself (a type's link shows its word, its title the type)."""
        facet = page.locator("section.facet").filter(has=page.get_by_role("heading", name=heading, exact=True))
        links = facet.locator("li a").all()
        return {a.get_attribute("title") or a.locator("bdi").inner_text(): int(a.locator(".count").inner_text()) for a in links}

    assert counts("Type") == {b["value"]: b["count"] for b in explored["type"]["buckets"]}
    shown = page.locator("section.facet").filter(has=page.get_by_role("heading", name="Type")).locator("bdi").all_inner_texts()
    assert {"MCP server", "A2A agent", "agent (AIDIP)"} <= set(shown) and not [t for t in shown if "/" in t], shown
    tags = {b["value"]: b["count"] for b in explored["tags"]["buckets"]}
    assert len(counts("Tags")) == 8 < len(tags)  # the first eight, and a link to every one
    page.get_by_role("link", name="Show all tags").click()
    page.wait_for_url(re.compile(r"all=tag"))
    assert counts("Tags") == tags
    types = page.locator("section.facet").filter(has=page.get_by_role("heading", name="Type"))

    types.get_by_role("link", name="MCP server").click()
    page.wait_for_url(re.compile(r"type="))
    assert parse_qs(urlsplit(page.url).query)["type"] == [MCP]
    assert set(page.locator("li.result .type").all_inner_texts()) == {"MCP server"}
    chip = page.locator("a.chip")
    assert chip.count() == 1 and "Type: MCP server" in chip.inner_text() and chip.get_attribute("title") == MCP
    tags = page.locator("section.facet").filter(has=page.get_by_role("heading", name="Tags"))
    tags.get_by_role("link", name=re.compile("^maps")).click()  # a second filter narrows further (AND across fields)
    page.wait_for_url(re.compile(r"tag=maps"))
    assert page.locator("li.result h3").all_inner_texts() == [GEO["displayName"]] and page.locator("a.chip").count() == 2

    page.locator("a.chip").first.click()
    page.wait_for_url(lambda url: "type=" not in url)
    assert page.locator("a.chip").count() == 1 and "tag=maps" in page.url


def test_paging_goes_forward_and_back_and_the_url_holds_the_page(tab: Tab) -> None:
    page = tab.page
    page.goto("/?tag=filler")
    first = page.locator("li.result h3").all_inner_texts()
    assert len(first) == 10 and page.locator("h2#results-h .total").inner_text() == "(12)"
    page.get_by_role("link", name=re.compile("Next")).click()
    page.wait_for_url(re.compile(r"page=2"))
    second = page.locator("li.result h3").all_inner_texts()
    assert len(second) == 2 and not set(first) & set(second)
    assert page.get_by_role("link", name=re.compile("Next")).count() == 0
    page.goto(page.url)  # a bookmarked page 2 is page 2
    assert page.locator("li.result h3").all_inner_texts() == second
    page.get_by_role("link", name=re.compile("Previous")).click()
    page.wait_for_url(lambda url: "page=" not in url)
    assert page.locator("li.result h3").all_inner_texts() == first


def test_search_and_reading_work_without_javascript(browser: Any, site: str) -> None:
    tab = Tab(browser, site, javascript=False)
    page = tab.page
    page.goto("/")
    page.get_by_label("What should it do?").fill("geocode a street address")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"q=geocode"))
    page.get_by_role("link", name=GEO["displayName"]).first.click()
    page.wait_for_url(re.compile(r"/entry\?"))
    assert page.get_by_role("heading", name="What it offers").count() == 1
    assert "geocode" in page.locator("article.callable").first.inner_text()
    tab.close()


def test_a_bad_page_number_is_a_clear_400_page(site: str) -> None:
    response = httpx.get(f"{site}/?q=x&page=zero", headers=HTML)
    assert response.status_code == 400 and "page: must be a whole number" in response.text


def test_a_client_asking_the_root_for_no_page_is_told_where_everything_is(site: str) -> None:
    """It got a bare 404 (issue #55): a person trying the server with curl learnt nothing from it."""
    for accept in ("application/json", "*/*"):
        response = httpx.get(f"{site}/", headers={"Accept": accept})
        said = response.json()
        assert response.status_code == 200 and said["mcp"] == {"url": f"{site}/mcp", "transport": "streamable-http"}, said
        assert said["rest"]["openapi"] == "/openapi.json" and "/attach" in said["attach"]


def test_a_result_reads_at_a_glance_type_publisher_and_evidence_in_words(tab: Tab) -> None:
    page = tab.page
    page.goto("/?q=read+and+search+the+files+of+a+shared+drive")
    row = page.locator("li.result", has=page.locator("h3", has_text=PACKAGED["displayName"]))
    assert row.locator(".type").inner_text() == "MCP server"
    assert row.locator(".publisher").inner_text() == "by github.com/acme-tools"  # not the bare "by github.com"
    assert row.locator(".publisher").get_attribute("title") == "publisher github.com"
    page.goto("/?" + urlencode({"q": GEO["representativeQueries"][0]}))
    evidence = page.locator("li.result", has=page.locator("h3", has_text=GEO["displayName"])).locator(".evidence").inner_text()
    assert evidence.startswith("Best match, query:") and evidence.count(GEO["representativeQueries"][0]) == 1, evidence


def _names(page: Any) -> list[str]:
    return page.locator("li.result h3").all_inner_texts()


def _listed(site: str, order_by: str, token: str | None = None) -> tuple[list[str], str | None]:
    """The names `GET /agents` lists in `order_by` order, a page of 10, and the next page's token."""
    params = {"orderBy": order_by, "pageSize": "10", **({"pageToken": token} if token else {})}
    body = httpx.get(f"{site}/agents", params=params).json()
    return [item["displayName"] for item in body["items"]], body.get("pageToken")


def test_sorting_by_name_recency_and_relevance_works_without_javascript(browser: Any, site: str) -> None:
    """The sort control is links: each order is the registry's own (`GET /agents` with orderBy, a search's
    ranking), and paging keeps it."""
    tab = Tab(browser, site, javascript=False)
    page = tab.page
    sort = page.get_by_role("navigation", name="Sort")
    page.goto("/")
    assert sort.locator("[aria-current]").inner_text() == "Name"  # browsing lists by name unless told otherwise
    assert sort.get_by_role("link", name="Relevance").count() == 0  # only a task has a relevance
    by_name, _ = _listed(site, "displayName")
    assert _names(page) == by_name
    sort.get_by_role("link", name="Recently updated").click()
    page.wait_for_url(re.compile(r"sort=updated"))
    newest, token = _listed(site, "updatedAt DESC")
    assert _names(page) == newest and WEATHER["displayName"] in newest[:2]  # it says when it was updated (a copy of it is crawled later)
    page.get_by_role("link", name=re.compile("Next")).click()
    page.wait_for_url(re.compile(r"sort=updated.*page=2"))
    assert _names(page) == _listed(site, "updatedAt DESC", token)[0]
    page.goto("/?tag=filler&sort=updated")
    assert sort.locator("[aria-current]").inner_text() == "Recently updated"
    sort.get_by_role("link", name="Name").click()
    page.wait_for_url(lambda url: parse_qs(urlsplit(url).query) == {"tag": ["filler"], "sort": ["name"]})
    assert _names(page) == sorted(f["displayName"] for f in FILLERS)[:10]
    page.get_by_label("What should it do?").fill("weather forecast")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"q=weather"))
    assert sort.locator("[aria-current]").inner_text() == "Relevance"
    sort.get_by_role("link", name="Name").click()  # a listing order lists every entry the filters select
    page.wait_for_url(lambda url: "q=" not in url and "sort=name" in url)
    assert page.locator("h2#results-h").inner_text().startswith("All entries")
    assert httpx.get(f"{site}/?sort=size", headers=HTML).status_code == 400
    tab.close()


# -- an entry's page ------------------------------------------------------------------------------------------
def test_an_entry_page_shows_what_it_offers_why_it_matched_and_how_to_add_it(tab: Tab, shots: Path) -> None:
    page = tab.page
    page.goto("/?q=plan+a+driving+route")
    page.get_by_role("link", name=GEO["displayName"]).first.click()
    page.wait_for_url(re.compile(r"/entry\?"))
    assert page.locator("h1").inner_text() == GEO["displayName"]
    assert page.get_by_role("link", name=GEO["representativeQueries"][0]).count() == 1
    offers = page.locator("article.callable")
    assert offers.locator("code").all_inner_texts() == ["geocode", "route"]
    offers.first.locator("summary").click()
    assert '"address"' in offers.first.locator("pre").inner_text()
    assert page.locator("#trust-h + dl").inner_text().count("self-asserted") == 1
    assert "no trust manifest" in page.locator("section", has=page.locator("#trust-h")).inner_text()
    # every evidence signal for the task in the URL
    assert page.get_by_role("searchbox", name="Task").input_value() == "plan a driving route"
    evidence = page.locator("section", has=page.locator("#evidence-h"))
    assert evidence.locator("table tbody tr").count() >= 1 and evidence.locator("mark").count() >= 1
    signals = evidence.locator("dt", has_text="Signal:")
    assert {"Signal: best example", "Signal: second-best example", "Signal: words in common"} <= set(signals.all_inner_texts())
    assert not [t for t in signals.all_inner_texts() if re.search(r"[a-z][A-Z]", t)]  # no camelCase left
    assert "second-best example" in (evidence.locator("dt", has_text="second-best").get_attribute("title") or "")
    configs = page.locator("article.host")
    assert configs.locator("h3").all_inner_texts() == ["Claude Desktop", "Claude Code", "Cursor", "VS Code"]
    assert all("https://maps.example.net/mcp" in text for text in configs.all_inner_texts())
    assert "Connectors" in configs.nth(0).inner_text()  # Claude Desktop adds a remote server in its settings
    assert '"type": "http"' in page.locator("article.host[data-host=vscode] pre").inner_text()
    page.locator("details", has=page.locator("summary", has_text="Raw JSON")).locator("summary").click()
    assert GEO["identifier"] in page.locator("#raw-h ~ details pre").inner_text()
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "entry-1440.png"))  # the top of the page: what a reader sees first


def test_a_package_servers_page_shows_its_command_variables_and_host_configs(tab: Tab, shots: Path) -> None:
    page = tab.page
    page.goto("/entry?" + urlencode({"id": PACKAGED["identifier"]}))
    assert page.locator(".meta .type").inner_text() == "MCP server" and "github.com/acme-tools" in page.locator(".meta").inner_text()
    repository = page.locator("dl.facts").first.get_by_role("link", name=PACKAGED["data"]["repository"]["url"])
    assert repository.is_visible() and repository.get_attribute("href") == PACKAGED["data"]["repository"]["url"]  # not only in the raw JSON
    package = page.locator("section", has=page.locator("#package-h"))
    assert package.locator("code.command").inner_text() == "npx -y @acme-tools/files-mcp@1.2.0 --read-only"
    variables = package.get_by_role("region", name="Environment variables").locator("tbody tr").all_inner_texts()
    assert "FILES_API_KEY" in variables[0] and "secret" in variables[0] and "required" in variables[0]
    assert "FILES_REGION" in variables[1] and "optional" in variables[1]
    configs = page.locator("article.host")
    assert configs.locator("h3").all_inner_texts() == ["Claude Desktop", "Claude Code", "Cursor", "VS Code"]
    for host in ("claude-desktop", "claude-code", "cursor"):
        text = page.locator(f"article.host[data-host={host}] pre").first.inner_text()
        assert '"FILES_API_KEY": "<your FILES_API_KEY>"' in text and '"@acme-tools/files-mcp@1.2.0"' in text and '"--read-only"' in text
    vscode = page.locator("article.host[data-host=vscode] pre").inner_text()
    assert '"FILES_API_KEY": "${input:files-mcp-FILES_API_KEY}"' in vscode and '"password": true' in vscode  # VS Code asks for it
    command = page.locator("article.host[data-host=claude-code] pre.command").inner_text()
    assert command.startswith("claude mcp add --scope user --env 'FILES_API_KEY=<your FILES_API_KEY>' files-mcp -- npx -y ")
    page.screenshot(path=str(shots / "entry-package-1440.png"), full_page=True)


def test_an_unknown_entry_is_a_404_page(site: str) -> None:
    response = httpx.get(f"{site}/entry", params={"id": "urn:air:nowhere.example:none"}, headers=HTML)
    assert response.status_code == 404 and "Cannot show that" in response.text


# -- hostile entries ------------------------------------------------------------------------------------------
def _inert(tab: Tab) -> None:
    """Nothing the entry carried ran, and its markup is on the page as text."""
    page = tab.page
    assert page.evaluate(f"typeof {PWN}") == "undefined" and tab.dialogs == []
    assert page.locator("script").evaluate_all("els => els.map(e => e.getAttribute('src'))") == [f"/assets/app.js?v={_version()}"]
    assert page.locator("img, svg, iframe, b").count() == 0
    hrefs = page.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href') || '')")
    assert not [h for h in hrefs if h.strip().lower().startswith(("javascript:", "data:"))]
    text = page.locator("body").inner_text()
    assert "\u202e" not in text and "\u200b" not in text


def _version() -> str:
    from ard_mcp import __version__

    return __version__


def test_hostile_entries_are_shown_inert_in_results_and_on_their_page(tab: Tab, site: str) -> None:
    page = tab.page
    response = page.goto("/?q=book+a+hotel+room")
    assert response is not None and "script-src 'self'" in response.headers["content-security-policy"]
    result = page.locator("li.result", has=page.locator("h3", has_text="Hotel"))
    assert result.locator("h3").inner_text() == HOSTILE["displayName"]  # the markup, as text
    assert "javascript:" in result.locator(".description").inner_text()
    _inert(tab)
    result.locator("h3 a").click()
    page.wait_for_url(re.compile(r"/entry\?"))
    assert page.locator("h1").inner_text() == HOSTILE["displayName"]
    assert "<b onmouseover=" in page.locator("article.callable").first.inner_text()
    page.locator("details", has=page.locator("summary", has_text="Raw JSON")).locator("summary").click()
    assert "<iframe src=javascript:" in page.locator("#raw-h ~ details pre").inner_text()
    _inert(tab)  # the registry removed the invisible characters as it stored the entry; none reached the page


def test_invisible_characters_a_link_carries_are_named_not_rendered(tab: Tab) -> None:
    """Text no entry holds can still reach a page through a shared link: the id an error names, the task."""
    page = tab.page
    response = page.goto("/entry?" + urlencode({"id": "urn:air:evil.example:\u202egnp.exe\u200b", "q": "ho\u200btel"}))
    assert response is not None and response.status == 404
    said = page.get_by_role("alert").inner_text()
    assert "U+202E" in said and "U+200B" in said and "\u202e" not in said and "\u200b" not in said
    page.goto("/?" + urlencode({"q": "book a \u202eletoh\u202c room"}))
    assert "\u202e" not in page.title() and "U+202E" in page.title()
    _inert(tab)


def test_a_javascript_url_never_becomes_an_entrys_link(site: str) -> None:
    refused = httpx.post(
        f"{site}/agents", json={**HOSTILE, "url": f"javascript:{PWN}=1"}, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}
    )
    assert refused.status_code == 400 and "http or https" in refused.text


# -- the operator's pages -------------------------------------------------------------------------------------
def test_operator_pages_need_an_operator_token(tab: Tab) -> None:
    page = tab.page
    for token, status, says in (("not-a-token-of-this-registry", 401, "not a token"), (PUBLISHER_TOKEN, 403, "every publisher")):
        response = _sign_in(tab, token)
        assert response.status == status and says in page.get_by_role("alert").inner_text()
        assert page.context.cookies() == [c for c in page.context.cookies() if c["name"] != "ard_session"]
    _sign_in(tab)
    assert urlsplit(page.url).path == "/operator"
    session = next(c for c in page.context.cookies() if c["name"] == "ard_session")
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
    page.goto("/operator")
    assert urlsplit(page.url).path == "/operator/login"


def test_an_operator_adds_a_catalog_and_sees_the_crawler_and_registrations(tab: Tab, shots: Path) -> None:
    page = tab.page
    _sign_in(tab)
    entry = {**WEATHER, "identifier": "urn:air:crawled.example:weather:radar", "displayName": "Rain Radar", "description": "Rain radar."}
    with Publisher() as catalog:
        catalog.put("/.well-known/ai-catalog.json", {"specVersion": "1.0", "host": {"displayName": "Crawled"}, "entries": [entry]})
        page.get_by_label("Catalog URL or domain").fill(catalog.origin + "/")
        with page.expect_navigation():
            page.get_by_role("button", name="Crawl it").click()
        report = page.locator(".report").inner_text()
        assert "1 added" in report and "ingested" in report
        progress = page.locator("ol.progress li").all_inner_texts()  # the lines streamed while it ran
        assert any(catalog.url("/.well-known/ai-catalog.json") in line for line in progress), progress
        assert serious_violations(page) == [] and no_horizontal_scroll(page)
        page.get_by_role("link", name="Back to the operator's page").click()
        page.wait_for_url(lambda url: urlsplit(url).path == "/operator")
        sources = page.locator("section", has=page.locator("#sources-h"))
        row = sources.locator("tr", has_text=catalog.url("/.well-known/ai-catalog.json"))
        assert row.count() == 1 and "ok" in row.inner_text()
    assert page.locator(".recent li").first.inner_text().startswith("Rain Radar")
    page.screenshot(path=str(shots / "operator-1440.png"), full_page=True)
    page.goto("/?source=" + catalog.url("/.well-known/ai-catalog.json"))  # the crawl source facet
    assert page.locator("li.result h3").all_inner_texts() == ["Rain Radar"]


def test_an_operator_tries_an_agent_from_its_page_and_sees_the_call_logged(tab: Tab) -> None:
    page = tab.page
    page.goto("/entry?" + urlencode({"id": TRANSLATOR}))
    assert page.get_by_role("heading", name="Try it").count() == 0  # not for anonymous visitors
    _sign_in(tab)
    page.goto("/entry?" + urlencode({"id": TRANSLATOR}))
    page.get_by_label("Tool, skill or operation").select_option("translateText")
    page.get_by_label("Arguments (a JSON object)").fill('{"text": "<b>hello</b>", "target_language": "fr"}')
    with page.expect_navigation():
        page.get_by_role("button", name="Call it").click()
    assert '"translated_text": "[fr] <b>hello</b>"' in page.locator("pre").inner_text() and page.locator("b").count() == 0
    assert serious_violations(page) == []
    page.go_back()
    page.get_by_label("Arguments (a JSON object)").fill("[1, 2]")
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Call it").click()
    assert navigation.value.status == 400 and "must be a JSON object" in page.get_by_role("alert").inner_text()
    page.goto("/operator")
    audit = page.get_by_role("region", name="Invocation audit log").locator("tbody tr").first.inner_text()
    assert TRANSLATOR in audit and "translateText" in audit and "operator" in audit and "ok" in audit


def test_the_operator_sees_whether_upstreams_answer(tab: Tab, site: str) -> None:
    httpx.post(f"{site}/search", json={"query": {"text": "weather"}, "federation": "auto"}, timeout=60).raise_for_status()
    _sign_in(tab)
    upstreams = tab.page.get_by_role("region", name="Upstream registries")
    cells = upstreams.locator("tbody tr").first.locator("td").all_inner_texts()
    assert cells[1:4] == ["the operator", "closed", "0"] and re.fullmatch(r"\d+\.\d ms", cells[4]), cells


def test_an_empty_registry_says_how_to_add_entries(browser: Any, open_site: str, shots: Path) -> None:
    for width in (375, 1440):
        tab = Tab(browser, open_site, width=width)
        page = tab.page
        page.goto("/")
        empty = page.locator("section.empty-state")
        assert empty.get_by_role("heading").inner_text() == "This registry holds no entries yet"
        commands = empty.locator("code").all_inner_texts()
        assert {"ard-mcp ingest FILE", "ard-mcp crawl URL", "POST /crawl", "POST /agents", "register_agent", "crawl_catalogs"} <= set(
            commands
        )
        assert empty.get_by_role("link", name="Add a catalog").get_attribute("href") == "/operator"
        assert page.locator("section.facet, ol.rows, nav.sort").count() == 0  # no "All entries (0)", no five facets saying "none"
        assert serious_violations(page) == [] and no_horizontal_scroll(page)
        page.screenshot(path=str(shots / f"empty-{width}.png"), full_page=True)
        page.goto("/?q=weather")  # a search of it is a search: no results, said as always
        assert page.locator("section.empty-state").count() == 0 and page.locator("li.empty").count() == 1
        tab.close()


def test_an_open_registrys_operator_page_says_it_is_open_and_keeps_a_failed_crawl(browser: Any, open_site: str, shots: Path) -> None:
    tab = Tab(browser, open_site, width=375)
    page = tab.page
    page.goto("/operator")  # no sign-in: with no token file anyone on this machine is the operator
    assert urlsplit(page.url).path == "/operator"
    warning = page.locator("#open-registry").inner_text()
    assert "no token file" in warning and "anyone on this machine" in warning and "--token-file" in warning
    assert page.get_by_role("heading", name="Last crawl from this page").count() == 0
    with Publisher() as catalog:  # a loopback address, which this registry (no --allow-private-networks) refuses to crawl
        page.get_by_label("Catalog URL or domain").fill(catalog.origin + "/")
        with page.expect_navigation():
            page.get_by_role("button", name="Crawl it").click()
    said = page.locator(".report, [role=alert]").inner_text()
    page.get_by_role("link", name="Back to the operator's page").click()
    page.wait_for_url(lambda url: urlsplit(url).path == "/operator")
    last = page.locator("section", has=page.get_by_role("heading", name="Last crawl from this page"))
    assert catalog.origin in last.inner_text() and last.locator(".badge").inner_text() == "failed"
    failures = last.locator("ul.failures li").all_inner_texts()
    assert failures and all(line.strip() for line in failures) and any(line.split(" (")[0] in said for line in failures), (failures, said)
    assert serious_violations(page) == [] and no_horizontal_scroll(page)
    page.screenshot(path=str(shots / "operator-open-375.png"), full_page=True)
    assert tab.dialogs == [] and tab.errors == []
    tab.close()


def test_forms_refuse_cross_site_posts(site: str) -> None:
    with httpx.Client(base_url=site) as client:
        csrf = client.get("/operator/login", headers=HTML).cookies["ard_csrf"]
        form = {"csrf": csrf, "token": OPERATOR_TOKEN}
        foreign = client.post("/operator/login", data=form, headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403 and "may not post this registry's forms" in foreign.text
        assert client.post("/operator/login", json=form).status_code == 415
        missing = client.post("/operator/login", data={"token": OPERATOR_TOKEN}, headers={"Origin": site})
        assert missing.status_code == 403 and "CSRF" in missing.text and "ard_session" not in missing.cookies
        signed = client.post("/operator/login", data=form, headers={"Origin": site})
        assert signed.status_code == 303 and signed.headers["location"] == "/operator"
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie


# -- accessibility and layout ---------------------------------------------------------------------------------
PAGES = (
    "/?q=convert+a+pdf",
    "/?tag=filler&page=2",
    f"/entry?id={GEO['identifier']}&q=geocode",
    f"/entry?id={PACKAGED['identifier']}",
    "/attach",
    "/operator/login",
    "/entry?id=none",
)


@pytest.mark.parametrize("width", [375, 1440])
def test_every_page_passes_axe_and_fits_the_width(browser: Any, site: str, shots: Path, width: int) -> None:
    tab = Tab(browser, site, width=width)
    found = {}
    for path in PAGES:
        tab.page.goto(path)
        found[path] = serious_violations(tab.page)
        assert no_horizontal_scroll(tab.page), f"{path} scrolls sideways at {width} px"
    _sign_in(tab)
    found["/operator"] = serious_violations(tab.page)
    assert no_horizontal_scroll(tab.page)
    tab.page.goto(PAGES[0])
    tab.page.screenshot(path=str(shots / f"search-{width}.png"), full_page=True)
    assert {p: v for p, v in found.items() if v} == {}
    assert tab.dialogs == [] and tab.errors == []
    tab.close()


# The lines each element's text is laid out on (a flex item is stretched to its row, so its own height says nothing).
LINES = """els => els.map(e => {
  const range = document.createRange();
  range.selectNodeContents(e);
  return [e.textContent.trim(), new Set([...range.getClientRects()].map(r => Math.round(r.top))).size];
})"""
# Each word of each element's text, as the browser laid it out: a word split across lines has more than one box.
SPLIT_WORDS = """els => els.flatMap(e => {
  const split = [];
  const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const word of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (lines.size > 1) split.push(word[0]);
    }
  }
  return split;
})"""


@pytest.mark.parametrize("width", [375, 1440])
def test_facet_counts_and_table_headers_are_never_broken(browser: Any, site: str, width: int) -> None:
    """A count stays one number beside a value too long for the sidebar ("52" over "6" read as two numbers), and a
    table header keeps its words whole on a phone: the table scrolls in its own region instead."""
    with Publisher() as catalog:  # a crawl source, so the operator's widest table is there
        catalog.put("/.well-known/ai-catalog.json", {"specVersion": "1.0", "host": {"displayName": "Empty"}, "entries": []})
        crawled = httpx.post(
            f"{site}/crawl", json={"targets": [catalog.origin]}, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}, timeout=60
        )
        assert crawled.status_code == 200, crawled.text
    tab = Tab(browser, site, width=width)
    page = tab.page
    page.goto("/?tag=filler")
    counts = page.locator(".facet .count").evaluate_all(LINES)
    assert [c for c in counts if c[1] != 1] == [] and ["12", 1] in counts, counts
    long_tag = page.locator(".facet a", has_text=LONG_TAG)
    assert long_tag.locator(".count").inner_text() == "12"
    page.goto(f"/entry?id={GEO['identifier']}&q=geocode+an+address")
    headers = page.locator("th").evaluate_all(SPLIT_WORDS)
    _sign_in(tab)
    assert page.get_by_role("region", name="Crawl sources", exact=True).count() == 1
    headers += page.locator("th").evaluate_all(SPLIT_WORDS)
    assert headers == [], f"headers broken inside a word at {width} px: {headers}"
    assert no_horizontal_scroll(page)
    tab.close()


def test_the_keyboard_reaches_the_skip_link_first_and_focus_is_visible(tab: Tab) -> None:
    page = tab.page
    page.goto("/?q=weather")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main" or page.url.endswith("#main")


def test_the_accessibility_check_finds_what_it_looks_for(browser: Any) -> None:
    """Not vacuous: on a page with an unlabelled field and an image without alt text, axe reports both."""
    context = browser.new_context()
    page = context.new_page()
    page.set_content('<html lang="en"><body><main><h1>x</h1><img src="data:,"><input type="text"></main></body></html>')
    found = " ".join(serious_violations(page))
    context.close()
    assert "image-alt" in found and "label" in found
