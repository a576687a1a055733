"""The consent question: ard-mcp's own words, with whatever an entry wrote set apart as quoted data.

Every line starts with ard-mcp's text. What comes from the registry's own checks (the package's registry,
name and version, each matched against what that registry can hold; the allowed registry URL; variable
names, which only pass `formats.package_variables`; the trust status) is shown as it is. What an entry
chose freely (its identifier, its arguments) is quoted and bounded (`formats.quoting`), under words that
say the entry claims it: a variable name or argument can no longer add a line that reads as ard-mcp's
(issue #53). The last line names the launch's digest: the answer counts only for that launch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ard_mcp.formats.quoting import one_line, quoted
from ard_mcp.packages.consent import Approval
from ard_mcp.packages.grants import needed
from ard_mcp.packages.inputs import FILE, FOLDER
from ard_mcp.packages.plans import LaunchPlan, changes
from ard_mcp.packages.specs import PackageSpec

MAX_SHOWN = 12  # arguments or variables listed before "and N more"
_ARGUMENT_CHARS = 80


def _some(items: list[str]) -> str:
    extra = len(items) - MAX_SHOWN
    return ", ".join(items[:MAX_SHOWN]) + (f" and {extra} more" if extra > 0 else "")


def _argument(item: str) -> str:
    return {FOLDER: "<the folder you give it>", FILE: "<the file you give it>"}.get(item) or quoted(item, _ARGUMENT_CHARS)


def _arguments(plan: LaunchPlan) -> str:
    parts = [
        f"{label} {' '.join(_argument(a) for a in items[:MAX_SHOWN])}"
        + (f" and {len(items) - MAX_SHOWN} more" if len(items) > MAX_SHOWN else "")
        for label, items in (("runtime arguments", plan.runtime_arguments), ("arguments", plan.package_arguments))
        if items
    ]
    return f"The entry adds to its command line: {'; '.join(parts)}." if parts else "The entry adds no arguments to its command line."


def _state(value: str | None, default: str | None) -> str:
    if value is None:
        return "not set"
    return f"the entry's default {quoted(default, _ARGUMENT_CHARS)}" if default is not None and value == default else "set by the operator"


def _variables(spec: PackageSpec, values: Mapping[str, str]) -> str | None:
    if not spec.environment:
        return None
    shown = [
        f"{v.name} ({', '.join(['secret'] * v.secret + [_state(values.get(v.name), v.default)] + ['optional'] * (not v.required))})"
        for v in spec.environment
    ]
    return f"It reads these environment variables, never typed here: {_some(shown)}."


def _wants(kind: str | None) -> str:
    if kind is None:
        return (
            "If it works on your files, you may give it one folder below (optional): it will see that folder alone, "
            'given to it as its root, read-only unless you tick "Let it change files there"; empty: none of your files.'
        )
    return (
        f"It works on a {kind} of yours: type its full path below. It will see that {kind} alone"
        f'{" (and the folder it is in)" if kind == "file" else ""}, read-only unless you tick "Let it change files there".'
    )


_NETWORK_NAME = re.compile(r"(?:URL|URI|HOST|ENDPOINT|SERVER|DOMAIN|API_?KEY|TOKEN|ACCESS_KEY|CLIENT_ID|WEBHOOK)", re.IGNORECASE)


def network_reasons(plan: LaunchPlan) -> list[str]:
    """What in a launch suggests its server reaches the network: variables named for a URL, a host or an API
    key, arguments holding a URL. The box is ticked by default only then; the person decides either way."""
    found = [name for name, _ in plan.variables if _NETWORK_NAME.search(name)]
    found += [quoted(a, 60) for a in (*plan.runtime_arguments, *plan.package_arguments) if "://" in a]
    return found


def _network(plan: LaunchPlan) -> str:
    reasons = network_reasons(plan)
    if not reasons:
        return "Nothing in its launch says it needs the network, so the box is off: tick it if it should reach the internet."
    return f"It probably needs the network (it takes {_some(reasons)}), so the box is ticked: untick it to keep it offline."


def _since(plan: LaunchPlan, earlier: Approval | None) -> str | None:
    if earlier is None:
        return None
    if earlier.digest == plan.digest:
        return f"Its files are not the ones you approved on {earlier.at}: approved {earlier.integrity}, now {earlier.changed}."
    return f"Changed since you approved {earlier.key} on {earlier.at}: {_some(changes(earlier.plan, plan)) or 'nothing shown'}."


def text(
    plan: LaunchPlan,
    spec: PackageSpec,
    identifier: str,
    trust: str,
    earlier: Approval | None,
    values: Mapping[str, str],
    found_by_name: bool,
    replaced: str | None = None,
) -> str:
    """The question for `plan` (`spec`, its resolved package; `values`, the variables' values as they would be set;
    `earlier`, this launch's approval whose files changed or the newest approval of another launch of the package;
    `found_by_name`: the record named no registry; `replaced`: the version the entry pins, where the registry no
    longer has it and `plan` is its nearest newer release)."""
    lines = [
        "ard-mcp asks: install and start this package server on your machine?",
        f"Package: {plan.registry} {plan.name}, version {one_line(plan.version, 40) or '(the newest)'}, from {plan.source}.",
        "It runs in ard-mcp's sandbox: no access to your files, and the network only if the box below is ticked.",
        _wants(needed(plan.package_arguments)),
        _network(plan),
        _arguments(plan),
        _variables(spec, values),
        _since(plan, earlier),
        f"Its record names no registry: ard-mcp found the name on {plan.registry} only." if found_by_name else None,
        (
            f"The entry pins version {quoted(replaced)}, which {plan.source} no longer has: this is its nearest newer release."
            if replaced
            else None
        ),
        f"Trust status of the entry, as ard-mcp checked it: {trust}. The entry claims to be {quoted(identifier)}.",
        f"This answer covers exactly this launch: {plan.digest}.",
    ]
    return "\n".join(line for line in lines if line)
