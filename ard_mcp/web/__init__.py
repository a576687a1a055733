"""Discovery from the web (not built yet): crawling publishers' catalogs found by well-known URI, DNS,
robots.txt and links (ARD §6), importing MCP registries and A2A agent cards, and keeping them fresh.

A crawler feeds what it finds to `ard_mcp.index.indexer.Indexer` exactly as `ard-mcp ingest` does.
"""
