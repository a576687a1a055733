"""ard-mcp: an agent discovery registry (ARD v0.9) served over MCP."""

__version__ = "0.1.0"
