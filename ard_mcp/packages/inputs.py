"""What a package description asks of the command line and the environment: its arguments made into argv
items, its environment variables into `EnvVar`s, in either shape a record has (the current server.json's
`packageArguments` / `environmentVariables`, or the registry seed's `package_arguments` /
`environment_variables`).

An argument is `value`, else `default`; a named one becomes `--name value`, a positional one its value, a
named one with neither and no `valueHint` a bare flag (`--stdio`). A value that is a placeholder for
something the person must supply cannot be filled here: `<absolute_path_to_folder>`, `${input:apiKey}`,
`$REPOSITORY_DIRECTORY`, an unresolved `{variable}`, `YOUR_API_KEY`, `/path/to/...`, a Windows or home
directory path. A required one makes the package unusable (`Unfillable`, naming it); an optional one is left
out. Measured on the 471 seed records: 72 packages are unusable for such a placeholder. In a current
server.json, a required argument that takes a path of the person's (`format: filepath`, or words such as
folder, directory, path or file) is a slot instead (`FOLDER`, `FILE`): the person grants one when asked,
and it is mounted into the sandbox (`grants`). The seed's placeholders are source checkouts, not data.

The seed's arguments were copied from READMEs' host configurations, so some of them are the launcher's, not
the server's: uv's `--directory`, `--with`, `--from git+...`, `--python`, Python's `-m`, and script files of
a source checkout (`server.py`, `build/index.js`). Passed to the installed server these break its command
line, so in the seed shape they make the package unusable too (25 of the seed's packages), except a prefix
that only runs the package itself (`uvx NAME`, `uv --directory CHECKOUT run NAME`), which is left out
(`_after_launcher`). The seed writes a named argument whole in both `name` and `value` (`"--directory <path>"`), which is
read as the flag and its value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_PLACEHOLDERS = (
    (re.compile(r"<[^<>]+>"), "a <placeholder>"),
    (re.compile(r"\$\{[^}]*\}"), "a ${...} input"),
    (re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*"), "a $VARIABLE"),
    (re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}"), "an unfilled {variable}"),
    (re.compile(r"your", re.IGNORECASE), "a 'your ...' placeholder"),
    (re.compile(r"path/to\b|absolute[/_ -]path|full/path", re.IGNORECASE), "a /path/to/... placeholder"),
    (re.compile(r"(?:^|[\s=])(?:[A-Za-z]:[\\/]|~/|/Users/|/home/)"), "a path on someone's own machine"),
)
_LAUNCHER_FLAGS = {"--directory", "--with", "--with-editable", "--with-requirements", "--from", "--python", "-m"}
_LAUNCHER_WORDS = {"python", "python3", "uv", "uvx", "node", "npx", "run"}
_RUNS_THE_PACKAGE = {"--directory", "--with", "--with-editable", "--with-requirements"}  # launcher flags that still run it
_LAUNCHERS = {"uv", "uvx", "npx", "run"}
_SCRIPT = re.compile(r"\.(?:py|js|mjs|cjs|ts)$", re.IGNORECASE)
_SECRET_NAME = re.compile(r"(?:KEY|TOKEN)$|PASSWORD|PASSWD|SECRET|CREDENTIAL", re.IGNORECASE)
_INPUT = re.compile(r"^\s*\$\{input:[^}]*\}\s*$")
_PATHLIKE = re.compile(r"folder|director|(?:\b|_)dirs?\b|path|(?:\b|_)files?\b|(?:\b|_)roots?\b|vault|workspace", re.IGNORECASE)
_FILELIKE = re.compile(
    r"(?:\b|_)file\b|[._-]db\b|\bdb[._-]|sqlite|database|\.(?:db|sqlite3?|json|ya?ml|csv|graphqls?|txt|md)\b", re.IGNORECASE
)
FOLDER = "\0folder"  # in an argv: the folder the person grants (`packages.grants`); NUL is in no real argument
FILE = "\0file"  # ... a file the person grants, its folder mounted with it


class Unfillable(ValueError):
    """An argument the person would have to fill in (`kind` "needs-input"), or one meant for a launcher
    ("launcher"), or one that is not an argument ("malformed"): the message names it."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class EnvVar:
    name: str
    required: bool
    secret: bool
    description: str | None
    default: str | None


def field(item: Mapping[str, Any], camel: str, snake: str) -> Any:
    """A field in the current spelling, else the seed's."""
    return item[camel] if camel in item else item.get(snake)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def placeholder(text: str) -> str | None:
    """What kind of placeholder `text` holds, or None when it is a value as it stands."""
    return next((what for pattern, what in _PLACEHOLDERS if pattern.search(text)), None)


def _substituted(value: str, variables: Any) -> str:
    """`{name}` replaced by its variable's `value`, else its `default`; others are left as they are."""
    if not isinstance(variables, Mapping):
        return value

    def one(match: re.Match[str]) -> str:
        variable = variables.get(match[1])
        filled = (_text(variable.get("value")) or _text(variable.get("default"))) if isinstance(variable, Mapping) else None
        return filled if filled is not None else match[0]

    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", one, value)


def _same_name(a: str, b: str) -> bool:
    return re.sub(r"[-_.]+", "-", a).lower() == re.sub(r"[-_.]+", "-", b).lower()


def _launcher_reason(items: list[str], package: str) -> str | None:
    first = items[0].split()[0] if items and items[0].split() else ""
    if any(item.startswith(("git+", "git@")) for item in items):
        return "is the launcher's (a git source to build from, as `uvx --from` takes)"
    if len(items) == 1 and _same_name(first, package.rpartition("/")[2]):
        return "is the launcher's (the package's own name, as `uvx NAME` or `npx NAME` takes it)"
    if first in _LAUNCHER_FLAGS:
        return f"is the launcher's ({first} belongs to uv or python, not to the server)"
    if first in _LAUNCHER_WORDS:
        return f"is the launcher's ({first!r} names a program, not an argument of the server)"
    if any(_SCRIPT.search(item) for item in items):
        return "names a script file of a source checkout, which an installed package does not have"
    return None


def _slot(argument: Mapping[str, Any]) -> str | None:
    """`FOLDER` or `FILE` where a current server.json argument takes a path of the person's (`format: filepath`, or
    a hint, name or description that says folder, directory, path or file), else None."""
    words = " ".join(str(argument.get(key) or "") for key in ("name", "valueHint", "description", "value"))
    if argument.get("format") != "filepath" and not _PATHLIKE.search(words):
        return None
    return FILE if _FILELIKE.search(words) else FOLDER


def _written(kind: Any, name: str | None, value: str, seed: bool) -> list[str]:
    """The argv items an argument with `value` is: `name value` (named) or the value (positional); a seed flag
    written whole in `name` and `value` alike (`"--directory <path>"`) read as the flag and its value."""
    written_whole = value == name or value.startswith((f"{name} ", f"{name}=")) or " " in str(name)
    if seed and kind == "named" and name is not None and written_whole:
        return value.split(None, 1)
    return [str(name), value] if kind == "named" else [value]


def _items(argument: Mapping[str, Any], seed: bool, package: str) -> list[str]:
    """The argv items of one argument; [] when it is optional and has no value; Unfillable when it cannot be filled."""
    kind = argument.get("type")
    name = _text(argument.get("name"))
    value = _text(argument.get("value"))
    value = value if value is not None else _text(argument.get("default"))
    shown = name or value or _text(field(argument, "valueHint", "value_hint")) or "(unnamed)"
    required = field(argument, "isRequired", "is_required") is True
    if kind == "named" and name is None:
        raise Unfillable(f"a named argument without a name ({shown!r})", "malformed")
    if kind not in ("named", "positional"):
        raise Unfillable(f"argument {shown!r} has type {kind!r}, neither named nor positional", "malformed")
    slot = None if seed else _slot(argument)
    hint = field(argument, "valueHint", "value_hint")
    if value is None:
        if required and slot is not None and (kind == "positional" or hint is not None or argument.get("format") == "filepath"):
            return [str(name), slot] if kind == "named" else [slot]
        if kind == "named" and hint is None:
            items = [str(name)]
        elif required:
            raise Unfillable(f"argument {shown!r} needs a value from the person, and the record gives none", "needs-input")
        else:
            return []
    else:
        items = _written(kind, name, _substituted(value, argument.get("variables")), seed)
    found = next((what for item in items if (what := placeholder(item))), None)
    if found is not None:
        if required and slot is not None:
            return [str(name), slot] if kind == "named" else [slot]
        if not required:
            return []
        raise Unfillable(f"argument {' '.join(items)!r} is {found} the person has to fill in", "needs-input")
    if seed and (reason := _launcher_reason(items, package)):
        raise Unfillable(f"argument {' '.join(items)!r} {reason}", "launcher")
    return items


def arguments(raw: Any, seed: bool, package: str = "") -> tuple[str, ...]:
    """The argv items of an argument list (anything but a list is none); Unfillable naming the first that cannot
    be filled. `package`, the package's name, is how a seed record's launcher command (`uvx NAME`) is told apart."""
    listed = raw if isinstance(raw, list) else []
    if not all(isinstance(argument, Mapping) for argument in listed):
        raise Unfillable(f"an argument that is not an object ({next(a for a in listed if not isinstance(a, Mapping))!r})", "malformed")
    found: list[str] = []
    for argument in _after_launcher(listed, package) if seed else listed:
        found += _items(argument, seed, package)
    return tuple(found)


def _after_launcher(listed: list[Mapping[str, Any]], package: str) -> list[Mapping[str, Any]]:
    """A seed record's arguments after its launcher's, where the launcher runs the package itself. The seed
    copied READMEs' host configurations, some of which start the package through uv or npx: `uvx NAME`, `uvx
    --with X NAME`, `uv --directory CHECKOUT run NAME`. ard-mcp installs the package and starts its own entry
    point, which is what those run, so a prefix made only of such words and ending with the package's own name
    is left out, the server's own arguments after it kept. Any other launcher word leaves the record as it is
    (refused, `_launcher_reason`): `--from X CMD` and `-m MODULE` name another program of the package, `--python`
    a version, a script file or `node` a source checkout's program, `git+` another package (the page's host
    command reads those, `surfaces.host_launch`). Measured on the seed: usable 244 -> 264 of 471."""
    for position, argument in enumerate(listed):
        name, value = _text(argument.get("name")), _text(argument.get("value"))
        items = _written(argument.get("type"), name, value, seed=True) if value is not None else [name] if name else []
        if len(items) == 1 and _same_name(items[0], package.rpartition("/")[2]):
            return listed[position + 1 :]
        if not items or not (items[0] in _RUNS_THE_PACKAGE or (len(items) == 1 and items[0] in _LAUNCHERS)):
            return listed
    return listed


def environment(raw: Any, seed: bool) -> tuple[EnvVar, ...]:
    """The declared variables. The seed has no `isRequired`: a variable it lists is one the person must give
    (its `description` often holds an example value, or `${input:apiKey}`, which is no description and is dropped).
    A fixed `value` is the default; one that still holds a placeholder is the person's to supply."""
    found: dict[str, EnvVar] = {}
    for item in raw if isinstance(raw, list) else []:
        name = _text(item.get("name")) if isinstance(item, Mapping) else None
        if name is None:
            continue
        description = _text(item.get("description"))
        value = _text(item.get("value"))
        value = _substituted(value, item.get("variables")) if value is not None else _text(item.get("default"))
        if value is not None and placeholder(value) is not None:
            value = None
        required = seed or field(item, "isRequired", "is_required") is True or (item.get("value") is not None and value is None)
        secret = field(item, "isSecret", "is_secret") is True or _SECRET_NAME.search(name) is not None
        if description is not None and _INPUT.match(description):
            description = None
        found.setdefault(name, EnvVar(name, required, secret, description, value))
    return tuple(found.values())
