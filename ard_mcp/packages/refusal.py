"""Why a package was not installed: one exception for every refusal, its message the whole reason.

A refusal is the operator's or the person's to act on (pin a version, allow a registry, pick another
server), so the message says what was refused and why, with the installer's last words where it failed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


class InstallRefused(Exception):
    """Not installed: an unpinned version, a registry not allowed, no wheel for this platform (source builds
    run the publisher's code), no such package or version, a name on both registries or neither, a failed or
    timed-out install."""


_CERTIFICATE = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|CERT_HAS_EXPIRED|"
    r"certificate verify failed"
)


def certificate(key: str, tail: str, where: str, setting: str) -> InstallRefused | None:
    """Why an install failed when the registry's TLS certificate could not be verified (pip and npm both said
    only that nothing matched, measured behind a proxy that re-signs TLS: issue #54); None when it was not that."""
    if not _CERTIFICATE.search(tail):
        return None
    return InstallRefused(
        f"{key}: the TLS certificate of {where} could not be verified. Where a proxy re-signs TLS (as on many company "
        f"networks), set {setting} in ard-mcp's environment to the CA bundle that verifies it"
    )


def pointed_elsewhere(key: str, pointed: Sequence[str], kinds: str, where: str, asked: str, refused: str) -> InstallRefused | None:
    """Why an install stopped when a dependency pointed outside the allowed registry `where`: `pointed`, the
    dependencies the installer named (`kinds` says what they may be); `refused`, what the egress proxy refused
    (`asked` for it: "npm", "pip"); None when neither happened."""
    also = f"; refused: {refused}" if refused and pointed else ""
    if pointed:
        return InstallRefused(
            f"{key}: its dependency {', '.join(pointed)} is not a release on {where} ({kinds}): such dependencies are not installed{also}"
        )
    if refused:
        return InstallRefused(
            f"{key}: {asked} asked for {refused}, which is not on {where} (refused): a dependency that points elsewhere is not installed"
        )
    return None
