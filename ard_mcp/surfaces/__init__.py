"""The ways in, each a thin adapter over `ard_mcp.registry.Registry` that parses, calls the core and answers
in its format: the MCP server (`mcp`), the REST API (`rest`) and the command line (`cli`).

`sharing` is how several hosts use one data directory: the stdio server a host starts is a front-end
(`sharing.frontend`) to the one back-end that holds the registry (`sharing.backend`). What the surfaces
share sits here: who may write (`auth`, `oauth`), the services a serving registry keeps (`services`),
rate-limit refusals (`over_limit`), the Xu discovery request (`xu_discovery`) and the blocks that attach a
server to a host (`host_blocks`, `host_launch`), which the command line and the web page both give.
"""
