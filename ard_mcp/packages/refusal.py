"""Why a package was not installed: one exception for every refusal, its message the whole reason.

A refusal is the operator's or the person's to act on (pin a version, allow a registry, pick another
server), so the message says what was refused and why, with the installer's last words where it failed.
"""

from __future__ import annotations


class InstallRefused(Exception):
    """Not installed: an unpinned version, a registry not allowed, no wheel for this platform (source builds
    run the publisher's code), no such package or version, a name on both registries or neither, a failed or
    timed-out install."""
