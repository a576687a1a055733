"""Where things live: the data directory, the model directory, the Chroma server and the registry's
public name and identity. How the HTTP server runs is `ard_mcp.surfaces.rest.settings`.

Every CLI flag has an `ARD_MCP_*` environment fallback (MCP hosts configure servers through env vars).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

from ard_mcp.errors import ModelMismatch
from ard_mcp.formats.identifiers import NID, is_publisher_domain
from ard_mcp.formats.limits import DEFAULT_LIMITS, EntryLimits


def bundled_model_dir() -> Path:
    """Where the model ships: inside the wheel (`ard_mcp/bundled_model`) or at the top of a checkout."""
    package = Path(__file__).resolve().parent  # ard_mcp/
    for candidate in (package / "bundled_model", package.parent / "models"):
        if (candidate / "model.json").is_file():
            return candidate
    raise ModelMismatch(f"the bundled model is missing: neither {package / 'bundled_model'} nor {package.parent / 'models'} has model.json")


DEFAULT_MODEL = "tools"
"""The model a registry searches with unless told otherwise: the encoder trained for tool retrieval
(`models/tools/`). Measured from outside on seven held-out sets none of its training came from, it beat the
general-purpose model on all seven (nDCG@10 +0.008 to +0.085), and on a 491-server catalog it vouched for far
fewer tasks that have no answer (0.176 to 0.055)."""
GENERAL_MODEL = "minilm"  # the general-purpose all-MiniLM-L6-v2 at the top of `models/`, by name


def shipped_model_dir(name: str) -> Path | None:
    """A model that ships with ard-mcp, by name: `tools` (the default) or `minilm` (the general-purpose model
    the trained one started from, kept selectable); None when no such model ships."""
    candidate = bundled_model_dir() if name == GENERAL_MODEL else bundled_model_dir() / name
    return candidate if (candidate / "model.json").is_file() else None


def default_model_dir() -> Path:
    """The model a registry uses when none is named (`DEFAULT_MODEL`); the general one in an install without it."""
    return shipped_model_dir(DEFAULT_MODEL) or bundled_model_dir()


def shipped_model_named(model_id: str) -> Path | None:
    """The shipped model whose model.json has the id `model_id`, if one does: what an index built before a
    change of default was built with."""
    for name in (DEFAULT_MODEL, GENERAL_MODEL):
        directory = shipped_model_dir(name)
        if directory is not None and _model_id(directory) == model_id:
            return directory
    return None


def _model_id(directory: Path) -> str | None:
    try:
        found = json.loads((directory / "model.json").read_text(encoding="utf-8")).get("id")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


LOCAL_PUBLISHER = "ard-mcp.localhost"
"""The publisher of a registry with no public name. The naming guide (§2) forbids `localhost` as a
publisher and recommends a name under the RFC 2606 `.localhost` TLD for local-only registries."""


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


THIRD_PARTY_DEMOTED = ("third-party",)
"""Ranked lower under every trust policy: a third-party claim comes below comparable publisher-served entries (`trust.origin`)."""


@dataclass(frozen=True)
class Config:
    data_dir: Path
    model_dir: Path | None = None
    rerank_dir: Path | None = None  # a cross-encoder that rescores the top candidates (`ard_mcp.search.rerank`); None: off
    source_url: str | None = None
    chroma_url: str | None = None  # a `chroma run` server shared by several processes; None = embedded Chroma
    store_url: str | None = None  # a PostgreSQL store shared by several processes; None = SQLite in data_dir
    limits: EntryLimits = DEFAULT_LIMITS
    demote_trust: tuple[str, ...] = THIRD_PARTY_DEMOTED  # trust statuses ranked lower (`--trust-policy demote` adds invalid, self-asserted)
    starter: Path | None = None  # a snapshot a new data directory is given as its registry opens (`ard_mcp.index.snapshot`); None: none

    @cached_property
    def identifier(self) -> str:
        """This registry's own ARD identifier: anchored to the host of its URL when that is a domain
        name, else the local placeholder (an IP address or `localhost` cannot be a publisher)."""
        host = urlsplit(self.source_url).hostname if self.source_url else None
        publisher = host if host and is_publisher_domain(host) and host != "localhost" else LOCAL_PUBLISHER
        return f"{NID}{publisher}:registry:ard-mcp"

    @cached_property
    def source(self) -> str:
        """The `source` of every result (ARD: "the registry where this entry was indexed"): the URL the
        registry is reached at, or for a registry only reached over stdio its identifier (a URI too)."""
        return self.source_url or self.identifier
