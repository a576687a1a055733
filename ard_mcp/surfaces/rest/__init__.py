"""The HTTP app: the REST surfaces of ARD, the Xu profile and AIDIP beside MCP over HTTP, on one port.

`operations` is the table of operations that routing, error dialects and `/openapi.json` are all derived
from, `routes` their handlers (with `requests` to read bodies and `manifest` for the well-known
manifest); `errors` the drafts' error objects; `guard` what is refused before any route; `app` puts them
together; `settings` is how the server was asked to run.
"""
