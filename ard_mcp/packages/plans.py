"""Exactly what runs when an entry's package server is started: the subject of the person's approval.

An approval keyed by registry, name and version alone covered whatever command line an entry put around
the package: a registrant's entry naming an approved package with its own runtime arguments ran its own
code with the approval's network access and the secret the operator scoped to that package, and the
cached launch then ran it for the legitimate entry too (issue #53). So the approval, the install cache of a
launch and the running servers are all keyed by the `LaunchPlan`'s digest: registry, name, exact version,
the registry it is installed from, the runtime hint, every runtime and package argument, and each declared
variable's name and the entry's own default value (the operator's values are the operator's, not the
entry's). The installed files' integrity is pinned to the approval on its first install (`consent`), and
network access and granted folders are the person's answer, kept beside it.

`changes` says what differs from an earlier approval of the same package, for the question that asks again.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ard_mcp.packages.specs import PackageSpec

DIGEST_CHARS = 32  # 128 bits of sha256, hex: what `ard-mcp packages allow plan:...` takes
PREFIX = "plan:"


@dataclass(frozen=True)
class LaunchPlan:
    registry: str  # npm | pypi (resolved)
    name: str
    version: str  # "" where the operator allows unpinned versions and none is pinned: the newest, pinned at install
    source: str  # the registry URL it is installed from
    runtime_hint: str | None
    runtime_arguments: tuple[str, ...]
    package_arguments: tuple[str, ...]
    variables: tuple[tuple[str, str | None], ...]  # declared names, each with the entry's default value

    @property
    def key(self) -> str:
        return f"{self.registry}:{self.name}" + (f"@{self.version}" if self.version else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "runtimeHint": self.runtime_hint,
            "runtimeArguments": list(self.runtime_arguments),
            "packageArguments": list(self.package_arguments),
            "variables": [{"name": name, "default": default} for name, default in self.variables],
        }

    @functools.cached_property
    def digest(self) -> str:
        canonical = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_CHARS]

    @classmethod
    def from_json(cls, raw: Any) -> LaunchPlan:
        """A plan as `as_json` wrote it; ValueError when it is not one."""
        if not isinstance(raw, dict):
            raise ValueError("a launch is a JSON object")
        try:
            return cls(
                registry=_text(raw["registry"]),
                name=_text(raw["name"]),
                version=_text(raw["version"]),
                source=_text(raw["source"]),
                runtime_hint=None if raw.get("runtimeHint") is None else _text(raw["runtimeHint"]),
                runtime_arguments=tuple(map(_text, raw["runtimeArguments"])),
                package_arguments=tuple(map(_text, raw["packageArguments"])),
                variables=tuple((_text(v["name"]), None if v.get("default") is None else _text(v["default"])) for v in raw["variables"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a launch without {exc}") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string where {type(value).__name__} is")
    return value


def plan_of(spec: PackageSpec, source: str) -> LaunchPlan:
    """The plan for a resolved `spec` installed from `source`."""
    return LaunchPlan(
        registry=spec.registry,
        name=spec.name,
        version=spec.version or "",
        source=source,
        runtime_hint=spec.runtime_hint,
        runtime_arguments=spec.runtime_arguments,
        package_arguments=spec.package_arguments,
        variables=tuple((v.name, v.default) for v in spec.environment),
    )


def _listed(items: tuple[str, ...]) -> str:
    return " ".join(json.dumps(item, ensure_ascii=False) for item in items) or "none"


def changes(before: LaunchPlan, now: LaunchPlan) -> list[str]:
    """What `now` changes from `before` (one phrase each, values JSON-quoted), for the question asked again."""
    found: list[str] = []
    for label, old, new in (
        ("version", before.version or "newest", now.version or "newest"),
        ("registry", before.source, now.source),
        ("runtime hint", before.runtime_hint or "none", now.runtime_hint or "none"),
    ):
        if old != new:
            found.append(f"{label} {json.dumps(old)} -> {json.dumps(new)}")
    for label, old_items, new_items in (
        ("runtime arguments", before.runtime_arguments, now.runtime_arguments),
        ("arguments", before.package_arguments, now.package_arguments),
    ):
        if old_items != new_items:
            found.append(f"{label} {_listed(old_items)} -> {_listed(new_items)}")
    old_vars, new_vars = dict(before.variables), dict(now.variables)
    added = [name for name in new_vars if name not in old_vars]
    removed = [name for name in old_vars if name not in new_vars]
    changed = [name for name in new_vars if name in old_vars and new_vars[name] != old_vars[name]]
    for label, names in (("variables added", added), ("variables removed", removed), ("variable defaults changed", changed)):
        if names:
            found.append(f"{label}: {', '.join(names)}")
    return found
