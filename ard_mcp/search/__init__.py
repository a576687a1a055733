"""Reading the registry: the query and filter objects, tag criteria, Appendix A expressions, ranking,
selection, paging, ordering and browsing. Reads only; every write goes through `ard_mcp.index.indexer`."""
