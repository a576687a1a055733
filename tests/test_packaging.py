"""What we publish: server.json for the MCP registry, the example catalog, and a wheel that carries the model.

The schemas are the vendored, pinned copies in `tests/specs/` (see its README).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

import ard_mcp
from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import parse_entry
from tests.conftest import ARD_SCHEMAS, SPECS

REPO = Path(__file__).resolve().parents[1]
SERVER_SCHEMA = SPECS / "mcp-registry" / "server.schema.json"
CATALOG_SCHEMA = ARD_SCHEMAS / "ai-catalog.schema.json"  # ARD v0.9
EXAMPLE_CATALOG = REPO / "examples" / "ai-catalog.json"
NESTED_CATALOG = "application/ai-catalog+json"

# jsonschema checks "uri" and "date-time" only with optional extra packages; check them here so a bad URL or
# timestamp in a published file fails the test instead of passing silently.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    return bool(re.fullmatch(r"[a-zA-Z][a-zA-Z0-9+.-]*", parts.scheme)) and bool(parts.netloc or parts.path) and not re.search(r"\s", value)


@FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339.match(value):
        return False
    datetime.fromisoformat(value.replace("z", "Z"))  # raises (and so fails the check) on e.g. month 13
    return True


def _validator(schema_path: Path) -> jsonschema.protocols.Validator:
    """A validator of the draft the schema itself declares in `$schema`, with format checking on."""
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=FORMATS)


def _errors(validator: jsonschema.protocols.Validator, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(instance)]


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _all_entries(manifest: dict[str, Any], where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every entry with its location, members of nested catalog bundles included."""
    found = []
    for i, entry in enumerate(manifest["entries"]):
        location = f"{where}entries[{i}]"
        found.append((location, entry))
        if entry.get("type") == NESTED_CATALOG and isinstance(entry.get("data"), dict):
            found.extend(_all_entries(entry["data"], f"{location}.data."))
    return found


# --- server.json -------------------------------------------------------------------------------------------


def test_server_json_validates_against_mcp_registry_schema() -> None:
    validator = _validator(SERVER_SCHEMA)
    assert _errors(validator, _load(REPO / "server.json")) == []


def test_server_json_schema_url_is_the_schemas_own_id() -> None:
    assert _load(REPO / "server.json")["$schema"] == _load(SERVER_SCHEMA)["$id"]


def test_server_schema_check_is_not_vacuous() -> None:
    """The validator used above does reject a broken server.json (bad name, long description, no transport)."""
    validator = _validator(SERVER_SCHEMA)
    broken = copy.deepcopy(_load(REPO / "server.json"))
    broken["name"] = "ard-mcp"  # no namespace slash
    broken["description"] = "x" * 101
    del broken["packages"][0]["transport"]
    broken["repository"]["url"] = "not a url"
    messages = " | ".join(_errors(validator, broken))
    assert "name" in messages and "description" in messages and "transport" in messages and "repository/url" in messages


def test_server_json_versions_match_the_package() -> None:
    server = _load(REPO / "server.json")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert server["version"] == ard_mcp.__version__ == pyproject["project"]["version"]
    (package,) = [p for p in server["packages"] if p["registryType"] == "pypi"]
    assert package["identifier"] == pyproject["project"]["name"]
    assert package["version"] == ard_mcp.__version__


def test_server_json_package_runs_the_stdio_server_with_documented_env_vars() -> None:
    (package,) = _load(REPO / "server.json")["packages"]
    assert package["transport"] == {"type": "stdio"}
    assert package["runtimeHint"] == "uvx"
    # `ard-mcp` alone only prints usage: the package must be started with the `serve` subcommand.
    assert [a.get("value") for a in package.get("packageArguments", [])] == ["serve"]
    env = {v["name"]: v for v in package["environmentVariables"]}
    assert {"ARD_MCP_DATA_DIR", "ARD_MCP_MODEL_DIR"} <= set(env)
    serve_help = subprocess.run([sys.executable, "-m", "ard_mcp", "serve", "--help"], capture_output=True, text=True, check=True).stdout
    assert all(f"({name}" in " ".join(serve_help.split()) for name in env), "every documented variable is one `serve` reads"
    assert all(v["description"] and not v.get("isRequired", False) for v in env.values())
    assert [name for name, v in env.items() if v.get("isSecret")] == ["ARD_MCP_STORE_URL"]  # it may carry a password


# --- examples/ai-catalog.json ------------------------------------------------------------------------------


def test_example_catalog_validates_against_ard_schema() -> None:
    validator = _validator(CATALOG_SCHEMA)
    manifest = _load(EXAMPLE_CATALOG)
    assert _errors(validator, manifest) == []
    bundles = [e for e in manifest["entries"] if e["type"] == NESTED_CATALOG and "data" in e]
    assert bundles, "the example catalog should show a nested catalog bundle"
    for bundle in bundles:
        assert _errors(validator, bundle["data"]) == [], bundle["identifier"]
        assert len(bundle["data"]["entries"]) == 2


def test_ard_schema_check_is_not_vacuous() -> None:
    """The same validator rejects an entry with both url and data, a bad identifier and a bad timestamp."""
    validator = _validator(CATALOG_SCHEMA)
    manifest = copy.deepcopy(_load(EXAMPLE_CATALOG))
    first = manifest["entries"][0]
    first["url"] = "https://example.com/also-a-url.json"
    first["identifier"] = "weather-forecast"
    first["updatedAt"] = "yesterday"
    paths = {e.split(":")[0] for e in _errors(validator, manifest)}
    assert {"entries/0", "entries/0/identifier", "entries/0/updatedAt"} <= paths


EXAMPLE_ENTRIES = _all_entries(_load(EXAMPLE_CATALOG))


@pytest.mark.parametrize(("location", "entry"), EXAMPLE_ENTRIES, ids=[location for location, _ in EXAMPLE_ENTRIES])
def test_example_entry_passes_our_validator(location: str, entry: dict[str, Any]) -> None:
    parsed = parse_entry(entry, location)
    assert parsed.identifier == entry["identifier"]
    assert parsed.wire() == entry  # nothing dropped or rewritten


def test_our_validator_rejects_a_broken_example_entry() -> None:
    entry = copy.deepcopy(_load(EXAMPLE_CATALOG)["entries"][0])
    entry["identifier"] = "urn:air:nodot:weather:forecast"  # publisher is not a domain name
    with pytest.raises(InvalidArgument, match=r"entries\[0\]\.identifier"):
        parse_entry(entry, "entries[0]")


def test_example_catalog_covers_the_documented_features() -> None:
    entries = [e for _, e in EXAMPLE_ENTRIES]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_type.setdefault(e["type"], []).append(e)
    a2a = [e for e in by_type["application/a2a-agent-card+json"] if "data" in e]
    assert len(a2a) >= 2 and all(s.keys() >= {"id", "name", "description", "tags", "examples"} for e in a2a for s in e["data"]["skills"])
    mcp = [e for e in by_type["application/mcp-server-card+json"] if "data" in e]
    assert len(mcp) >= 3 and all(t.keys() >= {"name", "description", "inputSchema"} for e in mcp for t in e["data"]["tools"])
    assert all("url" in e for e in by_type['text/markdown; profile="urn:air:agent-skills"'])
    assert any(2 <= len(e.get("representativeQueries", [])) <= 5 for e in entries)
    assert any(a["type"] == "SOC2-Type2" for e in entries for a in e.get("trustManifest", {}).get("attestations", []))
    assert len({e["identifier"] for e in entries}) == len(entries), "identifiers must be unique"


# --- the wheel ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # builds a wheel
def test_wheel_bundles_the_embedding_model_and_the_web_page(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = tmp_path.glob("ard_mcp-*.whl")
    assert wheel.name.startswith(f"ard_mcp-{ard_mcp.__version__}-")

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        page = [p.relative_to(REPO).as_posix() for folder in ("templates", "static") for p in (REPO / "ard_mcp" / "ui" / folder).iterdir()]
        assert page and sorted(set(page) - names) == []  # the page's templates and assets: nothing comes from a CDN
        assert "ard_mcp/data/public-mcp-servers.snapshot.xz" in names  # what a new registry starts with: nothing downloads
        for model in ("", "tools/"):  # the bundled model, and the encoder trained for tool retrieval beside it
            manifest = json.loads((REPO / "models" / model / "model.json").read_text(encoding="utf-8"))
            assert json.loads(zf.read(f"ard_mcp/bundled_model/{model}model.json")) == manifest
            for name, expected in manifest["files"].items():
                digest = hashlib.sha256()
                with zf.open(f"ard_mcp/bundled_model/{model}{name}") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
                assert digest.hexdigest() == expected, f"{name} in the wheel does not match models/{model}model.json"
