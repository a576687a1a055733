"""The web page `ard-mcp serve` answers at `/` on its HTTP transports: search with facets, an entry's page,
and the operator's pages, rendered on the server (Jinja2, autoescaped) with one small script that only adds
conveniences, so searching and reading work without JavaScript. Every route is a thin adapter over the same
registry calls the REST routes make; every asset ships in the wheel (no CDN)."""
