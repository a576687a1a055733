"""Why a package was not installed: one exception for every refusal, its message the whole reason.

A refusal is the operator's or the person's to act on (pin a version, allow a registry, pick another
server), so the message says what was refused and why, with the installer's last words where it failed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from packaging.requirements import Requirement

from ard_mcp.packages.lookup import PypiFile


class InstallRefused(Exception):
    """Not installed: an unpinned version, a registry not allowed, no wheel for this platform (source builds
    run the publisher's code), no such package or version, a name on both registries or neither, a failed or
    timed-out install."""


class VersionGone(InstallRefused):
    """The pinned version is not on the registry (deleted, as issue #54 found four times in 25, or never published
    there), while the package is. `newer` is its nearest newer release, or None: a consent flow can offer it as
    a new question (the same launch with `version` replaced by `newer`, which the person approves afresh), since
    an approval covers one version and is never carried over to another."""

    def __init__(self, key: str, where: str, registry: str, name: str, version: str, newer: str | None) -> None:
        self.registry, self.name, self.version, self.newer = registry, name, version, newer
        offer = (
            f"; its nearest newer release is {newer}: to run that one, a server description has to pin {registry}:{name}@{newer} "
            f"(asked about afresh, or approved with 'ard-mcp packages allow {registry}:{name}@{newer}')"
            if newer
            else "; it has no newer release"
        )
        super().__init__(f"{key}: {where} has no version {version} of {name} (deleted, or never published there){offer}")


_CERTIFICATE = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|"
    r"UNABLE_TO_GET_ISSUER_CERT|CERT_HAS_EXPIRED|"
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


@dataclass(frozen=True)
class AsOf:
    """The moment PyPI dependencies are resolved as of (`--uploaded-prior-to` its `bound`, `slack` after it: what
    was on the index then) and what it is, in words ("the release date of x 1.0")."""

    moment: datetime
    what: str
    slack: timedelta

    @property
    def bound(self) -> datetime:
        return self.moment + self.slack


def dependency_unavailable(
    wanted: Requirement, listed: list[PypiFile] | None, index: str, as_of: AsOf | None, our_python: str
) -> tuple[str, datetime | None] | None:
    """Why pip found no release of the dependency `wanted` among the files `listed` for it (None: the index has
    no such project): not on the index, none in its range, no wheel (or none for this platform or Python), or
    none uploaded by `as_of`; with the last, the first moment one was (`mcp-rquest` 0.1.13 of 2025-03-22 needs
    `rnet>=2.0.0`, first released 2025-08-02: pip called it "no wheel fits"). None where the files say nothing
    of why."""
    its = f"its dependency {wanted}"
    if listed is None:
        return f"{its} is not on {index}", None
    matching = [f for f in listed if wanted.specifier.contains(f.version, prereleases=True) and not f.yanked]
    wheels = [f for f in matching if f.is_wheel]
    fitting = [f for f in wheels if f.fits]
    if not matching:
        return f"{its}: {index} has no release of {wanted.name} in that range", None
    if not wheels:
        return f"{its}: no wheel, only source distributions, and building one runs the publisher's code (not done here)", None
    if not any(f.fits_tags for f in wheels):
        return f"{its}: no wheel of it fits this platform ({', '.join(sorted({f.filename for f in wheels})[-3:])})", None
    if not fitting:
        return f"{its} needs Python {next(f.requires_python for f in wheels if not f.fits_python)}, {our_python}", None
    if as_of is None or any(f.uploaded is None or f.uploaded <= as_of.bound for f in fitting):
        return None
    first = min(f.uploaded for f in fitting if f.uploaded is not None)
    version = next(f.version for f in fitting if f.uploaded == first)
    return (
        f"{its} has no release on or before {as_of.moment:%Y-%m-%d} ({as_of.what}, which dependencies are resolved as of); "
        f"its first is {version} of {first:%Y-%m-%d}"
    ), first
