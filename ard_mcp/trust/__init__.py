"""Trust (ARD §5): whether an entry's trust manifest backs the publisher its identifier names.

Layers, each its own module: `status` (the outcome, `TrustResult`, and the identity rules: trust domains
and their alignment with the URN publisher) and `canonical` (RFC 8785 JCS, the bytes a signature covers)
under `signatures` (detached JWS, checked and made with PyJWT) and `keys` (publishers' key sets and DID
documents, fetched through the crawler's `ard_mcp.web.fetcher.Fetcher` and cached), all under `verifier`,
which turns one entry into `verified`, `unverified`, `self-asserted` or `invalid` with a reason.
"""

from ard_mcp.trust.keys import CachePolicy, KeyStore
from ard_mcp.trust.signatures import SignatureError, sign_manifest, verify_detached
from ard_mcp.trust.status import TrustResult, TrustStatus, aligned, identity_domain
from ard_mcp.trust.verifier import Verifier

__all__ = [
    "CachePolicy",
    "KeyStore",
    "SignatureError",
    "TrustResult",
    "TrustStatus",
    "Verifier",
    "aligned",
    "identity_domain",
    "sign_manifest",
    "verify_detached",
]
