"""Talk to `ard-mcp serve` over stdio with the MCP Python SDK: register a catalog, search it, count facets.

    python examples/search_client.py                                   # fresh temporary registry, default query
    python examples/search_client.py "find a time for a team meeting"  # your own query
    python examples/search_client.py --data-dir ~/ard-demo             # keep the registry between runs

The server is started as a subprocess (`python -m ard_mcp serve`), exactly as an MCP host such as an IDE or a
desktop assistant would start it, so everything below goes through the real MCP protocol.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

CATALOG = Path(__file__).resolve().parent / "ai-catalog.json"
DEFAULT_QUERY = "convert my expense spreadsheet into a PDF I can email"
NESTED_CATALOG = "application/ai-catalog+json"


def catalog_entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Every entry of a manifest, with the members of nested catalog bundles after the bundle itself."""
    entries = []
    for entry in manifest["entries"]:
        entries.append(entry)
        if entry.get("type") == NESTED_CATALOG and isinstance(entry.get("data"), dict):
            entries.extend(catalog_entries(entry["data"]))
    return entries


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool and return its structured result; a tool error (e.g. an invalid entry) stops the script."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        message = " ".join(getattr(block, "text", "") for block in result.content)
        raise SystemExit(f"{tool} failed: {message}")
    assert result.structured_content is not None
    return result.structured_content


async def run(data_dir: Path, query: str) -> None:
    # `sys.executable -m ard_mcp` runs the server from the same environment as this script; an MCP host
    # would usually run the `ard-mcp` console script (or `uvx ard-mcp`) instead. --no-snapshot: the registry holds
    # the example catalog alone, not the public MCP servers a new registry over stdio starts with.
    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data_dir), "--no-snapshot"])
    async with Client(server) as client:
        # 1. Publish every entry of the example catalog. register_agent is an upsert, so running the script
        #    twice on the same --data-dir reports the entries as "unchanged" instead of duplicating them.
        manifest = json.loads(CATALOG.read_text(encoding="utf-8"))
        for entry in catalog_entries(manifest):
            registered = await call(client, "register_agent", {"entry": entry})
            print(f"{registered['status']:>9}  {registered['entry']['identifier']}")

        # 2. Search in plain words. By default each result is one brief line (detail=compact): identifier,
        #    name, the description's first sentence, a 0-100 score and the best evidence (`match`: the
        #    indexed tool, skill, sample query or words that came closest). `confidence` is low when nothing
        #    fits well and these are only the closest entries.
        found = await call(client, "search_agents", {"text": query, "pageSize": 3})
        print(f"\nsearch: {query!r} ({found['totalResults']} results, confidence {found.get('confidence', '-')})")
        for hit in found["results"]:
            print(f"  {hit['score']:3d}  {hit['identifier']}  ({hit['displayName']})")
            if hit.get("match"):
                print(f"       best match: {hit['match']}")
        if not found["results"]:
            print("  nothing registered fits this query")

        # 3. The whole entry of the best result, with its inline data, is one call away.
        if found["results"]:
            entry = await call(client, "get_agent", {"identifier": found["results"][0]["identifier"]})
            print(f"\nget_agent: {entry['displayName']}, {len(json.dumps(entry))} bytes of catalog entry")

        # 4. Facets: how many entries of each type and tag the registry holds (ARD explore).
        explored = await call(client, "explore_facets", {"facets": [{"field": "type"}, {"field": "tags"}]})
        for field, facet in explored["facets"].items():
            buckets = ", ".join(f"{bucket['value']} ({bucket['count']})" for bucket in facet["buckets"])
            more = f", +{facet['otherCount']} more" if facet["otherCount"] else ""
            print(f"\n{field}: {buckets}{more}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", nargs="?", default=DEFAULT_QUERY, help="what to search for (default: %(default)r)")
    parser.add_argument("--data-dir", type=Path, default=None, help="registry directory (default: a new temporary one)")
    args = parser.parse_args()

    if args.data_dir is not None:
        anyio.run(run, args.data_dir, args.query)
    else:
        with tempfile.TemporaryDirectory(prefix="ard-mcp-example-") as tmp:
            anyio.run(run, Path(tmp), args.query)


if __name__ == "__main__":
    main()
