"""Package servers: MCP servers published as npm or PyPI packages, installed without running publisher code
(`install`), started in a sandbox (`sandbox`) once the person has consented (`consent`), kept running while
used (`servers`). A room beside `invocation`, which calls what these start as it calls remote servers."""
