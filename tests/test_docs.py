"""The README stays a front door and the documentation site stays whole: the README fits on a few screens
and every link in it lands on a file (and a heading) that exists, every page it names is in the site's
navigation, and the two reference pages written at build time (`mkdocs_hooks.py`) cover every subcommand
and flag of the command line and every route and schema of `/openapi.json`. `mkdocs build --strict` in
`.ci/run` checks the links between the pages themselves."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import mkdocs_hooks
from ard_mcp.assembly.cli import COMMANDS
from ard_mcp.surfaces.cli.arguments import build_parser
from ard_mcp.surfaces.rest.openapi import build_openapi

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def _slug(heading: str) -> str:
    """A heading's anchor as MkDocs' toc extension (and GitHub) makes it: lower case, punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[\s]+", "-", text)


def _local_links(markdown: str) -> list[str]:
    return [target for target in LINK.findall(markdown) if not re.match(r"[a-z]+:", target)]


def test_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail into docs/ (at most {MAX_README_LINES})"


def test_readme_keeps_the_test_command_ci_runs() -> None:
    """`.ci/run` runs the line between the markers; the same sed expression must still find exactly one."""
    extract = r"sed -n '/<!-- test-command -->/,/<!-- \/test-command -->/p' README.md | grep -v -e '<!--' -e '```'"
    command = subprocess.run(["bash", "-c", extract], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    assert len(command.splitlines()) == 1
    assert command.startswith('pip install -e ".[test]" && python -m pytest')


def test_readme_links_land_on_existing_files_and_headings() -> None:
    readme = README.read_text(encoding="utf-8")
    links = _local_links(readme)
    assert any(link.startswith("docs/") for link in links), "the README should point into docs/"
    for link in links:
        path, _, anchor = link.partition("#")
        target = (REPO / path) if path else README
        assert target.is_file(), f"README.md links to {link}, which does not exist"
        if anchor:
            slugs = {_slug(h) for h in HEADING.findall(target.read_text(encoding="utf-8"))}
            assert anchor in slugs, f"README.md links to {link}, but {path or 'README.md'} has no heading #{anchor}"


def test_readme_pages_are_in_the_site_navigation() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [p for value in node.values() for p in pages(value)]
        if isinstance(node, list):
            return [p for item in node for p in pages(item)]
        return []

    nav = set(pages(config["nav"]))
    assert all((DOCS / page).is_file() for page in nav), "mkdocs.yml names a page docs/ lacks"
    linked = {link.partition("#")[0].removeprefix("docs/") for link in _local_links(README.read_text(encoding="utf-8"))}
    for page in sorted(p for p in linked if p.endswith(".md") and (DOCS / p).is_file()):
        assert page in nav, f"README.md links to docs/{page}, which the site's navigation leaves out"


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    return out.getvalue()


def _sections(markdown: str) -> dict[str, str]:
    """Each `### ard-mcp NAME` section of the CLI page, by NAME."""
    parts = re.split(r"^### ard-mcp ?(\S*)\s*$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_cli_reference_covers_every_subcommand_and_flag() -> None:
    page = mkdocs_hooks.cli_reference()
    sections = _sections(page)
    assert set(COMMANDS) <= set(sections), f"the CLI page lacks {sorted(set(COMMANDS) - set(sections))}"
    for name in COMMANDS:
        flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", _help([name, "--help"])))
        assert flags, name
        missing = sorted(flag for flag in flags if flag not in sections[name])
        assert not missing, f"the CLI page's `ard-mcp {name}` lacks {missing}"
    assert (DOCS / "cli.md").read_text(encoding="utf-8").count(mkdocs_hooks.CLI_MARKER) == 1


def test_cli_reference_shows_no_builder_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A setting in the builder's environment is not documented as the default."""
    monkeypatch.setenv("ARD_MCP_DATA_DIR", str(tmp_path / "builders-own"))
    monkeypatch.setenv("ARD_MCP_TRUST_POLICY", "demote")
    page = mkdocs_hooks.cli_reference()
    assert "builders-own" not in page
    assert "default ~/.local/share/ard-mcp" in re.sub(r"\s+", " ", page)
    assert re.search(r"ARD_MCP_TRUST_POLICY;\s+default\s+show", page)


def test_http_reference_covers_every_route_and_schema() -> None:
    document = build_openapi()
    page = mkdocs_hooks.openapi_reference(document)
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"### {method.upper()} `{path}`" in page, f"{method.upper()} {path} is missing from the HTTP reference"
    anchors = set(re.findall(r"\{ #(schema-[\w-]+) \}", page))
    assert {f"schema-{name.lower()}" for name in document["components"]["schemas"]} == anchors
    linked = set(re.findall(r"\]\(#(schema-[\w-]+)\)", page))
    assert linked <= anchors, f"links to schemas the page does not have: {sorted(linked - anchors)}"
    assert (DOCS / "http-reference.md").read_text(encoding="utf-8").count(mkdocs_hooks.OPENAPI_MARKER) == 1


def test_the_readmes_host_block_is_what_host_config_prints(tmp_path: Path) -> None:
    """The README shows what `ard-mcp host-config cursor` prints; the command itself, paths aside, must agree
    (it had moved on to `serve --shared` while the README still showed `serve`)."""
    readme = README.read_text(encoding="utf-8")
    shown = json.loads(re.search(r"What `ard-mcp host-config cursor` prints.*?```json\n(.*?)```", readme, re.S).group(1))  # type: ignore[union-attr]
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("ARD_MCP_DATA_DIR", None)
    printed = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "host-config", "cursor"], env=env, capture_output=True, text=True, check=True
    )
    made = json.loads(printed.stdout[: printed.stdout.rindex("}") + 1])
    (name, ours), (made_name, theirs) = shown["mcpServers"].popitem(), made["mcpServers"].popitem()
    assert (name, ours["args"], sorted(ours["env"])) == (made_name, theirs["args"], sorted(theirs["env"]))
    assert Path(theirs["command"]).name == Path(ours["command"]).name == "ard-mcp"
