"""What the registry tells its operator about itself: Prometheus metrics (`metrics`, scraped through
`exposition`), OpenTelemetry traces (`tracing`), and which request each log line belongs to (`requests`,
`json_logs`); docs/monitoring.md is the operator's side.

Every layer records into it (a search's stages, a crawl's documents, an upstream's answer, an agent's call), so
it stands on nothing of the registry, and every part is off until serving turns it on: until then this package
imports neither prometheus_client nor OpenTelemetry's SDK (chromadb, under the vector index, imports the SDK for
itself, and exports nothing), and a record costs one check of a module variable."""
