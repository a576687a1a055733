"""Federation (not built yet): answering a search with what upstream registries know (ARD §8, Xu §9.2),
merging their rankings with the local one, and stopping request loops between registries.

A federation client wraps `ard_mcp.registry.Registry.search`; the surfaces pass the request's
`federation` mode through.
"""
