"""Hostile documents (issue #44): 10,000 levels of nesting, a 10,000-digit integer, an unpaired surrogate,
NaN. Each is read by the one bounded reader (`ard_mcp.formats.bounded_json`) wherever a document comes
from (a crawl, an ingested file, a peer's answer, an agent's answer, a JWS header, a request body, a row
stored by an older version) and is one rejected document or entry with its reason: never a 500, a
traceback, or the good documents of the same crawl or file failing with it."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.errors import AgentUnreachable
from ard_mcp.federation.answer import read_answer
from ard_mcp.formats.bounded_json import MAX_DEPTH, NotJson, UnreadableJson, check_value, read_json
from ard_mcp.invocation.calls import Target
from ard_mcp.invocation.clients.http_agent import ANY_OPERATION, HttpAgentClient
from ard_mcp.invocation.policy import Limits
from ard_mcp.net.guard import GuardedTransport, NetworkPolicy, SystemResolver
from ard_mcp.registry import Registry
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.oauth import JwtVerifier
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.trust.signatures import SignatureError, jws_header
from ard_mcp.web.settings import CrawlSettings
from tests.conftest import INVOICES, PDF, SAMPLE, TRANSLATE, WEATHER
from tests.http_support import running
from tests.test_cli import ard
from tests.test_hostile_values import _store_as_an_older_version_did
from tests.web_publisher import Publisher

DEEP = b"[" * 10_000 + b"]" * 10_000
DIGITS = b"9" * 10_000
UNPAIRED = b'"\\ud800"'
# each hostile value, and the reason the reader gives for it
HOSTILE = [
    (DEEP, f"nested deeper than {MAX_DEPTH} levels of objects and arrays"),
    (DIGITS, "an integer of more than 100 digits, which is not read"),
    (UNPAIRED, r"a string holds an unpaired surrogate (\ud800), which is not Unicode"),
    (b"NaN", "NaN is not JSON (numbers must be finite)"),
    (b"-1e999", "number -1e999 is not JSON (numbers must be finite)"),
]
IDS = ["deep", "digits", "unpaired", "nan", "overflow"]
LOCAL = CrawlSettings(allow_private_networks=True)


def _manifest_text(*entries: bytes) -> bytes:
    """A manifest written by hand, so an entry can hold what `json.dumps` would never write."""
    return b'{"specVersion": "1.0", "host": {"displayName": "Hostile"}, "entries": [' + b", ".join(entries) + b"]}"


def _hiding(value: bytes, base: dict[str, Any] = TRANSLATE) -> bytes:
    """An otherwise good entry whose `data` holds `value`."""
    return json.dumps({**base, "data": {"x": 0}}).encode().replace(b'"x": 0', b'"x": ' + value)


# -- the reader -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "reason"), HOSTILE, ids=IDS)
def test_the_reader_refuses_each_hostile_value_with_its_reason(value: bytes, reason: str) -> None:
    with pytest.raises(UnreadableJson) as caught:
        read_json(b'{"entry": ' + value + b"}", max_bytes=1_000_000)
    assert caught.value.reason == reason


def test_the_reader_refuses_what_is_not_json_and_what_is_too_big() -> None:
    for data, reason in [
        (b"\xff{}", "not valid JSON: not UTF-8 (byte 0xff at offset 0)"),
        (b'{"a": 1} {"b": 2}', "not valid JSON (extra data at line 1, column 10)"),
        (b'{"a": [1, 2}', "not valid JSON (Expecting ',' delimiter at line 1, column 12)"),
        (b"[" + b"1," * 100 + b"1]", "larger than 100 bytes"),
    ]:
        with pytest.raises(NotJson) as caught:
            read_json(data, max_bytes=100)
        assert caught.value.reason == reason
    assert read_json('\ufeff{"emoji": "\\ud83d\\ude00"}'.encode(), max_bytes=100) == {"emoji": "\U0001f600"}  # a pair is one character


def test_a_manifest_is_read_entry_by_entry_and_a_hostile_entry_is_its_reason_in_place() -> None:
    text = _manifest_text(json.dumps(WEATHER).encode(), *(_hiding(value) for value, _ in HOSTILE), b'"text, with ] and }"')
    entries = read_json(text, max_bytes=len(text), each_of="entries")["entries"]
    assert entries[0] == WEATHER and entries[-1] == "text, with ] and }"
    assert [e.at("entries[i]") if isinstance(e, UnreadableJson) else e for e in entries[1:-1]] == [
        f"entries[i]: {HOSTILE[0][1]}",  # refused while decoding: no place inside it is known
        f"entries[i]: {HOSTILE[1][1]}",
        f"entries[i].data.x: {HOSTILE[2][1]}",  # refused once decoded: the place is named
        f"entries[i]: {HOSTILE[3][1]}",
        f"entries[i]: {HOSTILE[4][1]}",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"data": {"t": math.nan}}, "entry.data.t: NaN is not JSON (numbers must be finite)"),
        ({"tags": [1, -math.inf]}, "entry.tags[1]: -Infinity is not JSON (numbers must be finite)"),
        ({"data": {"n": 10**200}}, "entry.data.n: an integer of more than 100 digits, which is not read"),
        ({"\udfff": 1}, r"entry: a key holds an unpaired surrogate (\udfff), which is not Unicode"),
    ],
)
def test_a_value_decoded_elsewhere_is_held_to_the_same_rules(value: dict[str, Any], message: str) -> None:
    with pytest.raises(UnreadableJson) as caught:
        check_value(value)
    assert caught.value.at("entry") == message


# -- where documents come from: a peer's answer, a JWS header, an OAuth issuer, an agent's answer -------------------
def test_a_peers_hostile_rows_are_left_out_with_a_note_and_the_rest_are_read() -> None:
    rows = [json.dumps({"identifier": "urn:air:example.com:a:good"}).encode(), DEEP, b'{"displayName": ' + UNPAIRED + b"}"]
    answer = read_answer(b'{"results": [' + b", ".join(rows) + b"]}", "application/json", 10, max_bytes=1_000_000)
    assert answer.rows == [{"identifier": "urn:air:example.com:a:good"}]
    assert answer.notes == [
        f"left out results[1]: {HOSTILE[0][1]}",
        f"left out results[2]: displayName: {HOSTILE[2][1]}",
    ]


def test_a_jws_header_nested_10000_deep_is_a_malformed_signature() -> None:
    header = base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).rstrip(b"=").decode()
    with pytest.raises(SignatureError, match="not a JSON object") as caught:
        jws_header(f"{header}..c2ln")
    assert caught.value.problem == "malformed"


@pytest.mark.parametrize(("metadata", "keys"), [(DEEP, b"{}"), (None, b'{"keys": ' + DEEP + b"}"), (None, b"[]")])
def test_an_issuers_hostile_document_is_no_keys_not_a_crash(metadata: bytes | None, keys: bytes) -> None:
    with Publisher() as issuer:
        found = {"issuer": issuer.origin, "jwks_uri": issuer.url("/jwks.json")}
        issuer.put("/.well-known/openid-configuration", metadata or json.dumps(found).encode())
        issuer.put("/jwks.json", keys)
        with pytest.raises(ValueError, match="no signing keys could be fetched"):
            JwtVerifier(issuer.origin, "https://registry.example.com/").prefetch()


@pytest.mark.anyio
@pytest.mark.parametrize(("value", "reason"), HOSTILE[:3], ids=IDS[:3])
async def test_an_agents_hostile_answer_is_its_malformed_answer(value: bytes, reason: str) -> None:
    with Publisher() as agent:
        agent.put("/agent", b'{"answer": ' + value + b"}", content_type="application/json")
        target = Target("http", agent.url("/agent"), limits=Limits(connect=5, total=20, max_bytes=1_000_000))
        transport = lambda: GuardedTransport(NetworkPolicy(allow_private=True), SystemResolver())  # noqa: E731
        with pytest.raises(AgentUnreachable) as caught:
            await HttpAgentClient().call(target, transport, ANY_OPERATION, {}, None)
    assert caught.value.message.startswith("the agent answered 200 with malformed JSON: ")
    assert caught.value.message.endswith(reason)


# -- a crawl: the hostile document is one failed source, the good ones are ingested -----------------------------
def _hostile_site(site: Publisher) -> list[str]:
    """A site with a good manifest, a manifest with hostile entries beside a good one, and three documents
    that are hostile as a whole; the targets, in that order."""
    site.put("/good.json", json.dumps({"specVersion": "1.0", "entries": [WEATHER, PDF]}), content_type="application/json")
    site.put("/mixed.json", _manifest_text(_hiding(DEEP), _hiding(DIGITS), _hiding(UNPAIRED), json.dumps(INVOICES).encode()))
    for name, body in [("deep", DEEP), ("digits", b'{"identifier": ' + DIGITS + b"}"), ("unpaired", b'{"name": ' + UNPAIRED + b"}")]:
        site.put(f"/{name}.json", body, content_type="application/json")
    return [site.url(f"/{name}.json") for name in ("good", "mixed", "deep", "digits", "unpaired")]


def _assert_one_rejection_each(report: dict[str, Any], targets: list[str]) -> None:
    good, mixed, *whole = targets
    assert report["added"] == 3  # WEATHER and PDF, and INVOICES beside the hostile entries
    by_url = {s["url"]: s for s in report["sources"]}
    assert by_url[good]["status"] == by_url[mixed]["status"] == "ingested"
    assert [by_url[url]["error"] for url in whole] == [
        f"{whole[0]}: {HOSTILE[0][1]}",
        f"{whole[1]}: identifier: {HOSTILE[1][1]}",
        f"{whole[2]}: name: {HOSTILE[2][1]}",
    ]
    assert [by_url[url]["status"] for url in whole] == ["failed"] * 3
    assert report["rejected"] == [
        f"{mixed}.entries[0]: {HOSTILE[0][1]}",
        f"{mixed}.entries[1]: {HOSTILE[1][1]}",
        f"{mixed}.entries[2].data.x: {HOSTILE[2][1]}",
    ]


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_crawl_over_rest_reports_each_hostile_document_and_ingests_the_good_ones(data_dir: Path) -> None:
    with Publisher() as site:
        targets = _hostile_site(site)
        async with running(data_dir, HttpSettings(crawl=LOCAL)) as client:
            crawled = await client.post("/crawl", json={"targets": targets})
            assert crawled.status_code == 200, crawled.text
            _assert_one_rejection_each(crawled.json(), targets)
            listed = (await client.get("/agents")).json()["items"]
    assert {e["identifier"] for e in listed} == {WEATHER["identifier"], PDF["identifier"], INVOICES["identifier"]}


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_crawl_tool_reports_each_hostile_document_and_ingests_the_good_ones(data_dir: Path) -> None:
    with Publisher() as site:
        targets = _hostile_site(site)
        async with Client(build_server(Config(data_dir), warm=False, crawl=LOCAL)) as client:
            crawled = await client.call_tool("crawl_catalogs", {"targets": targets})
    assert not crawled.is_error and crawled.structured_content is not None, crawled.content
    _assert_one_rejection_each(crawled.structured_content, targets)


# -- ingest: the hostile entries are rejected with their reasons, the rest ingested ------------------------------
@pytest.mark.slow
def test_ingest_rejects_each_hostile_entry_and_file_and_ingests_the_rest(tmp_path: Path) -> None:
    mixed, whole = tmp_path / "mixed.json", tmp_path / "whole.json"
    mixed.write_bytes(_manifest_text(json.dumps(WEATHER).encode(), *(_hiding(value) for value, _ in HOSTILE), json.dumps(PDF).encode()))
    whole.write_bytes(b'{"host": {"displayName": ' + UNPAIRED + b'}, "entries": [' + json.dumps(INVOICES).encode() + b"]}")
    done = ard("ingest", str(mixed), str(whole), "--json", data_dir=tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == 2
    places = ["entries[1]", "entries[2]", "entries[3].data.x", "entries[4]", "entries[5]"]
    assert report["rejected"] == [
        *(f"{mixed}: {place}: {reason}" for place, (_, reason) in zip(places, HOSTILE, strict=True)),
        f"{whole}: host.displayName: {HOSTILE[2][1]}",  # the manifest's own field: the file is refused, naming it
    ]


# -- rows an older version stored: left out, never a failed read ---------------------------------------------------
@pytest.mark.slow
@pytest.mark.sqlite_only  # rows rewritten in SQLite's own SQL
@pytest.mark.anyio
async def test_a_stored_row_holding_nan_an_unpaired_surrogate_or_deep_nesting_fails_no_read(data_dir: Path) -> None:
    deep: dict[str, Any] = {"leaf": True}
    for _ in range(251):
        deep = {"x": deep}
    hostile = {  # each valid but for the one value
        INVOICES["identifier"]: {"metadata": {"rate": math.nan}},
        PDF["identifier"]: {"metadata": {"note": "\ud800"}},
        TRANSLATE["identifier"]: {"data": deep},
    }
    registry = Registry(Config(data_dir))
    try:
        registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
        for identifier, changes in hostile.items():
            _store_as_an_older_version_did(registry, identifier, changes, {})
    finally:
        registry.close()
    async with running(data_dir) as client:
        reads = [
            await client.get("/agents", params={"pageSize": "100"}),
            await client.post("/search", json={"query": {"text": "merge pdf files, send invoices, translate text"}}),
            await client.get("/.well-known/ai-catalog.json"),
            await client.post("/explore", json={"resultType": {"facets": [{"field": "type"}]}}),
        ]
        assert [r.status_code for r in reads] == [200] * len(reads), [r.text[:200] for r in reads]
        assert {e["identifier"] for e in reads[0].json()["items"]} == {WEATHER["identifier"], SAMPLE[4]["identifier"]}
        for identifier in hostile:
            assert (await client.get(f"/agents/{identifier}")).status_code == 404
