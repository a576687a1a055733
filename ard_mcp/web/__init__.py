"""Discovery from the web (ARD §6): crawling publishers' catalogs found by well-known URI, DNS, robots.txt
and links, importing MCP registries, A2A agent cards and MCP server descriptions, and keeping them fresh.

Fetching is the network layer's (`ard_mcp.net`). Here, each its own module: the readers of what is fetched
(`html_links`, `dns_discovery`, `documents`) under `crawler` (targets → documents → the ingest path, with
`sources` remembering each document) and `mcp_registry`; `service` runs one request for every surface and
`refresh` keeps a serving registry fresh. A crawler feeds what it finds to `ard_mcp.index.indexer.Indexer`
exactly as `ard-mcp ingest` does.
"""
