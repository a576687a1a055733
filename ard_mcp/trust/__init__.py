"""Trust (ARD §5): whether an entry's trust manifest backs the publisher its identifier names.

Layers, each its own module: `status` (the outcome, `TrustResult`, and the identity rules: trust domains
and their alignment with the URN publisher) and `canonical` (RFC 8785 JCS, the bytes a signature covers)
under `signatures` (detached JWS, checked and made with PyJWT) and `keys` (publishers' key sets and DID
documents, fetched through the network layer's `ard_mcp.net.fetcher.Fetcher` and cached), all under `verifier`,
which turns one entry into `verified`, `unverified`, `self-asserted` or `invalid` with a reason.
`service` checks entries as they arrive, and `policy` says what a registry does with the outcome.

Nothing is imported here: `policy` is read at start-up (the server's settings name it), and the rest
brings PyJWT and httpx, which only a check needs.
"""
