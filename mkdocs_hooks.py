"""MkDocs hooks: the two reference pages are written from the program itself at build time, so they cannot
drift from it. `docs/cli.md` gets every subcommand's `--help` from the CLI's own argparse parser;
`docs/http-reference.md` gets every route, parameter, status and schema from the OpenAPI document the app
serves at `/openapi.json` (`build_openapi`), and that document itself is published beside the pages.

A page asks for a reference with a marker line, `<!-- generated: cli -->` or `<!-- generated: openapi -->`.
The renderers are plain functions (no MkDocs import) so a test can check what they produce.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CLI_MARKER = "<!-- generated: cli -->"
OPENAPI_MARKER = "<!-- generated: openapi -->"
OPENAPI_FILE = "openapi.json"
HELP_COLUMNS = "100"


@contextmanager
def _neutral_environment() -> Iterator[None]:
    """Defaults read from the environment (`ARD_MCP_*`, the data directory under the builder's home) are the builder's,
    not the reader's: build the parser as on a fresh account, with help wrapped at a fixed width."""
    saved = dict(os.environ)
    try:
        for name in [n for n in os.environ if n.startswith("ARD_MCP_") or n == "XDG_DATA_HOME"]:
            del os.environ[name]
        os.environ.update(XDG_DATA_HOME="~/.local/share", COLUMNS=HELP_COLUMNS)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's name → (its one-line help, its parser). argparse has no public way to walk them."""
    found: dict[str, tuple[str, argparse.ArgumentParser]] = {}
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}  # noqa: SLF001
            found.update({name: (helps.get(name, ""), sub) for name, sub in action.choices.items()})
    return found


def cli_reference() -> str:
    """Markdown for every subcommand: its one-line purpose and its `--help` as the program prints it."""
    from ard_mcp.surfaces.cli.arguments import build_parser

    with _neutral_environment():
        parser = build_parser()
        lines = ["### ard-mcp", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, (summary, sub) in subcommands(parser).items():
            lines += [f"### ard-mcp {name}", "", f"{summary[:1].upper()}{summary[1:].rstrip('.')}.", ""]
            lines += ["```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _anchor(name: str) -> str:
    return f"schema-{name.lower()}"


def schema_type(schema: dict[str, Any]) -> str:
    """A JSON Schema as a short phrase: `string`, `array of [Query](#schema-query)`, `"a" or "b"`."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in schema:
            joiner = " and " if combined == "allOf" else " or "
            return joiner.join(schema_type(part) for part in schema[combined])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {schema_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {schema_type(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "any")


def _body_schema(content: dict[str, Any]) -> str:
    return schema_type(content.get("application/json", {}).get("schema", {}))


def _operation(path: str, method: str, op: dict[str, Any]) -> list[str]:
    lines = [f"### {method.upper()} `{path}`", "", f"{op.get('summary', '').rstrip('.')}.", ""]
    lines.append(f"Operation `{op['operationId']}`" + (", needs a bearer token when the server has tokens." if op.get("security") else "."))
    lines.append("")
    if op.get("parameters"):
        lines += ["| parameter | in | type | what it is |", "|---|---|---|---|"]
        for p in op["parameters"]:
            required = " (required)" if p.get("required") else ""
            kind = schema_type(p.get("schema", {}))
            lines.append(f"| `{p['name']}`{required} | {p['in']} | {kind} | {_cell(p.get('description', ''))} |")
        lines.append("")
    if "requestBody" in op:
        body = op["requestBody"]
        note = f": {_cell(body['description'])}" if body.get("description") else ""
        lines += [f"Request body: {_body_schema(body['content'])}{note}", ""]
    lines += ["| status | meaning | body |", "|---|---|---|"]
    for status, response in op["responses"].items():
        lines.append(f"| {status} | {_cell(response['description'])} | {_body_schema(response.get('content', {}))} |")
    return [*lines, ""]


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name} {{ #{_anchor(name)} }}", ""]
    if schema.get("description"):
        lines += [_cell(schema["description"]), ""]
    properties = schema.get("properties", {})
    if not properties:
        return [*lines, f"Type: {schema_type(schema)}.", ""]
    required = set(schema.get("required", []))
    lines += ["| field | type | required | default | what it is |", "|---|---|---|---|---|"]
    for field, spec in properties.items():
        default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ""
        needed = "yes" if field in required else ""
        lines.append(f"| `{field}` | {schema_type(spec)} | {needed} | {_cell(default)} | {_cell(spec.get('description', ''))} |")
    if schema.get("additionalProperties") is False:
        lines += ["", "No other fields are accepted."]
    return [*lines, ""]


def openapi_document() -> dict[str, Any]:
    from ard_mcp.surfaces.rest.openapi import build_openapi

    return build_openapi()


def openapi_reference(document: dict[str, Any]) -> str:
    """Markdown for every route (grouped by draft) and every schema of the OpenAPI document."""
    info = document["info"]
    lines = [f"Generated from the {info['title']} {info['version']} OpenAPI document ([{OPENAPI_FILE}]({OPENAPI_FILE})).", ""]
    lines += [_cell(info["description"]), ""]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            by_tag.setdefault(op["tags"][0], []).append((path, method, op))
    for tag, operations in by_tag.items():
        lines += [f"## {tag} routes", ""]
        for path, method, op in operations:
            lines += _operation(path, method, op)
    lines += ["## Schemas", ""]
    for name, schema in sorted(document["components"]["schemas"].items()):
        lines += _schema(name, schema)
    return "\n".join(lines)


# --- MkDocs events -------------------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Publish /openapi.json beside the pages, so the reference can link to the document it was made from."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, OPENAPI_FILE, content=json.dumps(openapi_document(), indent=2)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if OPENAPI_MARKER in markdown:
        markdown = markdown.replace(OPENAPI_MARKER, openapi_reference(openapi_document()))
    return markdown
