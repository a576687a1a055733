"""The catalog store: entries as registered, filter values, examples with their vectors, full-text data
and the change feed. `sqlite` is the embedded store; `schema` defines and migrates its tables."""
