"""The wire formats: ARD catalog entries and manifests, Xu Agent Metadata, AIDIP agent metadata and the
discovery operations' messages, each defined once as pydantic models, and how each maps to an ARD entry.

Nothing here stores, ranks or serves: the index, search and surfaces build on these definitions.
"""
