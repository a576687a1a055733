"""Calling the agents the registry found (AIDIP §5, MCP tools/call, A2A message/send): one attached server
that both finds and calls. `targets` reads where and how an entry is called, `clients` speak each protocol
under the network rules, `policy` decides who may call what, `service` ties them together for the surfaces."""
