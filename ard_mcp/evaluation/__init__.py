"""Retrieval-quality evaluation behind `ard-mcp eval` and `bench/quality.py`: labelled queries
(`judgements`), the ranking metrics (`metrics`) and running and reporting them (`report`)."""
