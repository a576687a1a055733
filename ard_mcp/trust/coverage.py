"""What a trust manifest's signature says about the entry around it.

ARD §5.1 signs the trust manifest alone: a good signature proves the publisher wrote the manifest, not the
entry's description, url or data, so the same manifest copied onto another entry still verifies. Where the
signed manifest names the entry it belongs to, that is checked here, and the reason says what the
signature covers either way (`docs/trust.md`):

- a `provenance` item with relation `publishedFrom` names the artifact the entry was published from: its
  `sourceId` must be the entry's identifier or url, else the manifest belongs to another entry (`invalid`);
- its `sourceDigest` (`sha256:<hex>` or the SRI form `sha256-<base64>`) must be the digest of the entry's
  inline `data` in canonical JSON (RFC 8785), when the entry carries its artifact inline.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from ard_mcp.trust.canonical import canonical_json

MANIFEST_ONLY = "the signature covers the trust manifest only (ARD §5.1), not the entry's text, url or data"


def coverage(entry: Mapping[str, Any], manifest: Mapping[str, Any]) -> tuple[str | None, str]:
    """(a problem that makes the manifest not this entry's, or None; what the signature covers)."""
    named = [p for p in manifest.get("provenance") or [] if isinstance(p, Mapping) and p.get("relation") == "publishedFrom"]
    if not named:
        return None, MANIFEST_ONLY
    mine = {entry.get("identifier"), entry.get("url")} - {None}
    for item in named:
        source = item.get("sourceId")
        if source not in mine:
            return f"the signed manifest was published from {source!r}, which is neither this entry's identifier nor its url", ""
        digest = item.get("sourceDigest")
        if isinstance(digest, str) and isinstance(entry.get("data"), Mapping):
            matches = _matches(digest, entry["data"])
            if matches is False:
                return f"the signed manifest's sourceDigest {digest!r} is not the digest of this entry's data", ""
            if matches:
                return None, f"the signature covers the trust manifest, which names this entry ({source}) and the digest of its data"
    return None, f"the signature covers the trust manifest, which names this entry ({named[0].get('sourceId')}), not its text"


def _matches(digest: str, data: Mapping[str, Any]) -> bool | None:
    """Whether `digest` is the digest of `data`; None when it cannot be checked (another algorithm, data that is not I-JSON)."""
    try:
        sha = hashlib.sha256(canonical_json(data)).digest()
    except ValueError:
        return None
    if digest.startswith("sha256:"):
        return digest[len("sha256:") :].lower() == sha.hex()
    if digest.startswith("sha256-"):
        return digest[len("sha256-") :] == base64.b64encode(sha).decode()
    return None
