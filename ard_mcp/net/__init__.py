"""The network layer: how the registry reaches other hosts, under every room that does (`web`'s crawler,
`trust`'s key fetches, `federation`'s upstream searches), so none of them imports another to fetch.

Layers, each its own module: `guard` (which addresses may be connected to, checked where each socket
opens, after DNS) under `fetcher` (one bounded, polite, conditional GET), which reads `robots` (what
robots.txt allows, RFC 9309) and `limits` (timeouts, size cap, redirects, politeness). It needs nothing
of the registry: only the package's version, for the User-Agent.
"""
