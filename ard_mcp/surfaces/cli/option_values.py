"""How a flag's environment fallback is read (`ARD_MCP_*`): a switch, a number, a comma-separated list."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ard_mcp.config import env

N = TypeVar("N", int, float)


def env_number(name: str, default: N, kind: Callable[[str], N]) -> N:
    value = env(name)
    try:
        return kind(value) if value is not None else default
    except ValueError:
        raise SystemExit(f"ard-mcp: ARD_MCP_{name} must be a number (got {value!r})") from None


def truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def csv_list(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())
