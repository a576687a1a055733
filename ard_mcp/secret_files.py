"""Reading a file of secrets (the token file, the agents' credentials): a file that cannot be read is an
error naming it, never "no secrets", and one other users can read is warned about at start."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

log = logging.getLogger(__name__)


def read_secrets(path: Path, what: str) -> str:
    """The file's text; ValueError naming `what` and the file when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{what} {path}: {exc.strerror or exc}") from None
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("%s %s is readable by other users; chmod 600 it", what, path)
    return text
