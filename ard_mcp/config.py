"""Where things live: the data directory, the model directory, the Chroma server and the registry's
public name. How the HTTP server runs is `ard_mcp.surfaces.rest.settings`.

Every CLI flag has an `ARD_MCP_*` environment fallback (MCP hosts configure servers through env vars).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path


def default_data_dir() -> Path:
    """The user's data directory, as each platform defines it."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "ard-mcp"


def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(f"ARD_MCP_{name}")
    return value if value not in (None, "") else default


@dataclass(frozen=True)
class Config:
    data_dir: Path
    model_dir: Path | None = None
    source_url: str | None = None
    chroma_url: str | None = None  # a `chroma run` server shared by several processes; None = embedded Chroma

    @cached_property
    def source(self) -> str:
        """The `source` of every result: the public URL when one is set, else this data directory."""
        return self.source_url or self.data_dir.resolve().as_uri()
