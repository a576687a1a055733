"""One registry for all of a person's hosts: the stdio server each host starts is a thin front-end
(`frontend`) to the one per-user back-end of the data directory (`backend`), which holds the model, the
index and the package servers and serves every host's MCP session over a Unix socket."""
