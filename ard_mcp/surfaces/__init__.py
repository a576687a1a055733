"""The ways in: the MCP server (`mcp_server`), the REST API (`rest`) and the command line (`cli`). Each is
a thin adapter over `ard_mcp.registry.Registry`: it parses, calls the core, and answers in its format."""
