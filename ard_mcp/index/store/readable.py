"""Stored rows as reads get them: a row that cannot be read is left out, never an error.

Every read of an entry goes through `agent_of`, which decodes the stored document and checks it against
today's `CatalogEntry` (what every surface then builds from it). A row that fails, written by an older
version under looser rules or edited by hand, is left out of every answer and logged once by identifier,
so one bad value cannot take the registry down: before this, one `metadata.expiresAt` that overflowed on
conversion to UTC failed every read of a store, after every restart (issue #30). `ard-mcp check` lists
such rows and removes or repairs them; deleting one by its identifier always works, since a delete needs
only the identifier column.
"""

from __future__ import annotations

import logging
import zlib
from typing import Any

from pydantic import ValidationError

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.formats.catalog import CatalogEntry, describe_validation_error
from ard_mcp.index.records import StoredAgent

log = logging.getLogger(__name__)
MAX_STORED_BYTES = 64 * 1024 * 1024  # far over any entry an --max-entry-bytes would let in
_reported: set[str] = set()  # identifiers already logged by this process


def decoded(blob: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The stored document as a JSON object, or None and why it is not one. It is read by the one bounded
    reader (`bounded_json`), as a document from outside is: a row an older version wrote with `NaN`, an
    unpaired surrogate or 252 levels of nesting would otherwise fail the read that serialises it."""
    try:
        document = read_json(zlib.decompress(blob), max_bytes=MAX_STORED_BYTES)
    except (zlib.error, UnreadableJson) as exc:
        return None, f"the stored document cannot be decoded ({exc})"
    if not isinstance(document, dict):
        return None, "the stored document is not a JSON object"
    return document, None


def problem_of(blob: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The stored document and, when a read cannot use it, why (`None` when it can)."""
    document, problem = decoded(blob)
    if document is None:
        return None, problem
    try:
        CatalogEntry.model_validate(document)
    except ValidationError as exc:
        return document, describe_validation_error(exc, "entry")
    except Exception as exc:
        return document, f"entry: cannot be read ({type(exc).__name__}: {exc})"
    return document, None


def stored_document(identifier: str, blob: bytes) -> dict[str, Any] | None:
    """The stored document of a row reads can use; None (logged once) for one they cannot."""
    document, problem = problem_of(blob)
    if problem is None:
        return document
    if identifier not in _reported:
        _reported.add(identifier)
        log.warning("%s is stored but cannot be read, so it is left out of every answer: %s; run `ard-mcp check`", identifier, problem)
    return None


def agent_of(row: Any) -> StoredAgent | None:
    entry = stored_document(row["identifier"], row["entry"])
    if entry is None:
        return None
    return StoredAgent(row["id"], row["identifier"], entry, row["content_hash"], row["updated_at"], row["created_at"], row["indexed_at"])
