"""The MCP server: discovery and invocation tools and the `ard://agents/{identifier}` resource (`server`),
with the tool schemas and answers hosts see (`tool_schemas`, `tool_results`, `protocol`), refusals
(`refusals`), consent questions (`consent`) and what a called server may ask of the host (`host`)."""
