"""Federation: answering a search with what upstream registries know (ARD §8, Xu §10), merging their
rankings with the local one, and stopping request loops between registries.

`settings` (which upstreams) and `hops` (the path a request carries, the searches in flight) under `client`
(asking one upstream) and `breaker`; `answer` reads what comes back (a page of it, leniently); `screening`
and `evidence` make its rows results this registry vouches for; `merge` fuses rankings; `service.Federation`
runs none / referrals / auto for every surface.
"""
