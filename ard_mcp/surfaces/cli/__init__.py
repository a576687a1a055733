"""The command line's parts: its flags (`arguments` and the `*_arguments` / `*_settings` modules beside
it), what it prints (`console`, `terminal_text`), its commands (`search`, `host_config`,
`snapshot_command`), and `serve` in a terminal (`terminal`); `ard_mcp.assembly.cli` puts them together."""
