"""Builders that turn public tool-use benchmarks into ARD catalogs and labelled queries (see `build_sources.py`)."""
