"""Storage and indexing: the SQLite store (the source of truth), the Chroma vector index derived from it,
the embedding model, the lexical terms and example texts an entry is indexed under, and the one place
that writes (`indexer`).
"""
