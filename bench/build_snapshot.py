"""Build the snapshot of public MCP catalogs that a new registry starts with (`ard_mcp/data/`).

    python bench/build_snapshot.py \\
        --seed ../shared/data/mcp-registry-seed \\
        --docker DOCKER_GIT_DIR --servers SERVERS_GIT_DIR \\
        [--out ard_mcp/data/public-mcp-servers.snapshot.xz]

Three public catalogs, each read at a pinned commit:

- the official MCP registry's public seed (`modelcontextprotocol/registry` data/seed_2025_05_16.json, MIT),
  as the workspace keeps it in `mcp-registry-seed/` (catalog.json, LICENSE.txt, SOURCE.txt): each entry's
  `data` is the registry's server.json record, read as `ard-mcp crawl --mcp-registry` reads a record, so a
  crawl of the live registry later updates the same identifiers in place;
- Docker's MCP catalog (`docker/mcp-registry`, MIT): servers/*/server.yaml (`type: server` is a container
  image, `remote` a hosted endpoint, `poci` a tool run in a container) and, where one exists, tools.json;
- the server lists of the MCP project's servers README (`modelcontextprotocol/servers`, MIT at the pinned
  commit, the last before the project's licence changed; the lists were removed later): reference,
  archived, official-integration and community servers, each a name, a link and a sentence.

`DOCKER_GIT_DIR` and `SERVERS_GIT_DIR` are git directories of those repositories (a clone's `.git`, or a
bare mirror); the files are read with `git show COMMIT:PATH`, so the working tree does not matter. A server
listed by more than one catalog (the same repository, and the same folder of a monorepo) is kept once, from
the first catalog in the order above. Every entry says where it came from: `metadata.source` (the catalog)
and `metadata.snapshot` (this snapshot's id); `metadata.sourceId` is its server name, as a crawl would make
it (`com.docker/NAME` for Docker's), so a later crawl of the same server updates the entry. The snapshot's header
keeps each catalog's URL, commit, licence and licence text.

The vectors are computed here with the default model (`models/tools`) and stored int8, one per distinct
example text (`ard_mcp.index.snapshot`). The output depends only on the inputs and the model: no clock,
entries sorted by identifier. These catalogs are a product feature, never training or tuning data: do not
feed them to fit_fusion.py, train_*.py or a quality run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.config import default_model_dir  # noqa: E402
from ard_mcp.errors import ArdError  # noqa: E402
from ard_mcp.formats import entry_facts, mcp_server  # noqa: E402
from ard_mcp.formats.leniency import read_entry  # noqa: E402
from ard_mcp.index import snapshot  # noqa: E402
from ard_mcp.index.embedding import ModelSpec, load_embedder  # noqa: E402

DOCKER_COMMIT = "818bf169b365e7b7d5b117352e32757c54844718"  # docker/mcp-registry, 2026-07-08
SERVERS_COMMIT = "d9c45477cd6ff4d3456c138498dca984c8697f43"  # modelcontextprotocol/servers, 2025-12-17 (MIT)
SEED_COMMIT = "81e5174a593a7488715b0bf0ae77a4dc466b4d35"  # modelcontextprotocol/registry, as SOURCE.txt says
SNAPSHOT_ID = "public-mcp-servers-2026-07-08"  # the newest source commit's date

_GITHUB = re.compile(r"^https?://(?:www\.)?github\.com/([^/]+)/([^/#?]+)(?:/(?:tree|blob)/[^/]+/([^#?]*))?", re.IGNORECASE)
_ITEM = re.compile(r"^- (?:<img[^>]*>\s*)*\*\*\[(?P<name>[^\]]+)\]\((?P<url>[^)\s]+)\)\*\*\s*[-–—:]?\s*(?P<text>.*)$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"<[^>]+>|\*\*|__|`")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def git_show(git_dir: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True, check=True, text=True).stdout


def git_ls(git_dir: Path, commit: str, path: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", commit, path], capture_output=True, check=True)
    return out.stdout.decode().split("\n")[:-1]


def git_date(git_dir: Path, commit: str) -> str:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "log", "-1", "--format=%cI", commit], capture_output=True, check=True, text=True)
    return out.stdout.strip()


def slug(text: str) -> str:
    return _NOT_SLUG.sub("-", text.lower()).strip("-")


def plain(markdown: str) -> str:
    """A README sentence without its links' targets, images and emphasis."""
    return " ".join(_MARKUP.sub("", _LINK.sub(r"\1", markdown)).split())


def repo_key(url: str | None, directory: str | None = None) -> str | None:
    """`owner/repo[/last folder]`, lower case: what says two catalogs list one server."""
    match = _GITHUB.match(url or "")
    if match is None:
        return None
    owner, repo, path = match.group(1), match.group(2).removesuffix(".git"), match.group(3) or directory or ""
    folder = path.strip("/").rsplit("/", 1)[-1] if path.strip("/") else ""
    repo = "servers" if f"{owner}/{repo}".lower() == "modelcontextprotocol/servers-archived" else repo  # where they were
    return "/".join(p for p in (owner, repo, folder) if p).lower()


def tagged(document: dict[str, Any], source: str, source_id: str) -> dict[str, Any] | None:
    """The entry `ard-mcp crawl` would make of a server.json-like document, saying where it came from; None
    (with the reason on stderr) for one this version cannot read."""
    try:
        entry = mcp_server.to_entry(document)
    except ArdError as exc:
        print(f"  skipped {source}: {source_id!r}: {exc.message}", file=sys.stderr)
        return None
    entry["metadata"] = {**entry["metadata"], snapshot.SOURCE_KEY: source, entry_facts.SNAPSHOT_KEY: SNAPSHOT_ID}
    return entry


# -- the three catalogs -----------------------------------------------------------------------------------------


def seed_entries(folder: Path) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
    for item in json.loads((folder / "catalog.json").read_text(encoding="utf-8"))["entries"]:
        record = item["data"]
        yield (
            repo_key((record.get("repository") or {}).get("url")),
            tagged(record, "mcp-registry-seed", str(record.get("name") or item["identifier"])),
        )


def _docker_document(server: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A server.json-like document for one Docker catalog entry (its tools kept as a server card's)."""
    about = server.get("about") or {}
    meta = server.get("meta") or {}
    document: dict[str, Any] = {
        "name": f"com.docker/{server['name']}",
        "title": about.get("title") or server["name"],
        "description": about.get("description") or about.get("title") or server["name"],
        "keywords": [t for t in [meta.get("category"), *(meta.get("tags") or [])] if isinstance(t, str)],
    }
    project = (server.get("source") or {}).get("project")
    if project:
        document["repository"] = {"url": project, "source": "github"}
        if (server.get("source") or {}).get("directory"):
            document["repository"]["subfolder"] = server["source"]["directory"]
    if server.get("image"):
        document["packages"] = [{"registryType": "oci", "identifier": f"docker.io/{server['image']}", "transport": {"type": "stdio"}}]
    remote = server.get("remote") or {}
    if remote.get("url"):
        kind = {"sse": "sse", "http": "streamable-http", "streamable-http": "streamable-http"}.get(remote.get("transport_type", ""), "")
        document["remotes"] = [{"type": kind or "streamable-http", "url": remote["url"]}]
    listed = tools or [t for t in server.get("tools") or [] if isinstance(t, dict)]
    named = [{"name": t["name"], "description": t.get("description") or ""} for t in listed if isinstance(t.get("name"), str)]
    if named:
        document["tools"] = named
    return document


def docker_entries(git_dir: Path) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
    for path in git_ls(git_dir, DOCKER_COMMIT, "servers"):
        if not path.endswith("/server.yaml"):
            continue
        server = yaml.safe_load(git_show(git_dir, DOCKER_COMMIT, path))
        folder = path.removesuffix("/server.yaml")
        tools: list[dict[str, Any]] = []
        if f"{folder}/tools.json" in set(git_ls(git_dir, DOCKER_COMMIT, folder)):
            loaded = json.loads(git_show(git_dir, DOCKER_COMMIT, f"{folder}/tools.json") or "[]")
            tools = [t for t in loaded if isinstance(t, dict)] if isinstance(loaded, list) else []
        source = server.get("source") or {}
        directory = source.get("directory") or str(Path(source.get("dockerfile") or "").parent).strip(".")
        yield repo_key(source.get("project"), directory), tagged(_docker_document(server, tools), "docker-mcp-catalog", server["name"])


def readme_items(readme: str) -> Iterator[tuple[str, str, str, str]]:
    """(section, name, url, sentence) of each server the README lists, up to its frameworks section."""
    section = ""
    for line in readme.splitlines():
        if line.startswith("## ") and "Frameworks" in line:
            return
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        match = _ITEM.match(line.strip())
        if match:
            yield section, match.group("name").strip(), match.group("url"), plain(match.group("text"))


def _readme_name(url: str, name: str) -> str | None:
    """The reverse-DNS server name a listing maps to: io.github.OWNER/REPO[-FOLDER] for a GitHub repository
    (as the registry names them), else the site's own domain and the listed name."""
    match = _GITHUB.match(url)
    if match:
        owner, repo, path = match.group(1), match.group(2).removesuffix(".git"), (match.group(3) or "").strip("/")
        folder = path.rsplit("/", 1)[-1] if path else ""
        return f"io.github.{owner}/{repo}" + (f"-{folder}" if folder and folder.lower() != repo.lower() else "")
    host = (urlsplit(url).hostname or "").removeprefix("www.")
    if not host or host in ("npmjs.com", "pypi.org", "gitlab.com", "smithery.ai") or "." not in host:
        return None  # a package registry or a host that names no publisher
    return ".".join(reversed(host.split("."))) + "/" + slug(name)


def readme_entries(git_dir: Path) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
    for section, name, link, text in readme_items(git_show(git_dir, SERVERS_COMMIT, "README.md")):
        # the reference servers link to their folders in the repository
        url = link if link.startswith("http") else f"https://github.com/modelcontextprotocol/servers/tree/main/{link.strip('/')}"
        server_name = _readme_name(url, name)
        if server_name is None or not text:
            continue
        document: dict[str, Any] = {"name": server_name, "title": name, "description": text}
        if _GITHUB.match(url):
            document["repository"] = {"url": url, "source": "github"}
        else:  # a product's own page, as server.json names one
            document["websiteUrl"] = url
        if section:
            document["keywords"] = [slug(section)]
        yield repo_key(url), tagged(document, "mcp-servers-readme", name)


# -- putting it together ----------------------------------------------------------------------------------------


def collect(sources: list[tuple[str, Iterator[tuple[str | None, dict[str, Any] | None]]]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Entries of every source, each server once (the first source's), readable by this version's rules."""
    keys: set[str] = set()
    kept: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for name, entries in sources:
        mine: set[str] = set()
        counts[name] = 0
        for key, entry in entries:
            if entry is None or (key is not None and key in keys) or entry["identifier"] in kept:
                continue
            try:
                read_entry(entry, entry["identifier"])
            except ArdError as exc:
                print(f"  skipped {entry['identifier']}: {exc.message}", file=sys.stderr)
                continue
            kept[entry["identifier"]] = entry
            counts[name] += 1
            if key is not None:
                mine.add(key)
        keys |= mine
    return [kept[k] for k in sorted(kept)], counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=Path, required=True, help="the mcp-registry-seed folder (catalog.json, LICENSE.txt)")
    parser.add_argument("--docker", type=Path, required=True, help="git directory of docker/mcp-registry")
    parser.add_argument("--servers", type=Path, required=True, help="git directory of modelcontextprotocol/servers")
    parser.add_argument("--out", type=Path, default=snapshot.BUNDLED)
    args = parser.parse_args()

    entries, counts = collect(
        [
            ("mcp-registry-seed", seed_entries(args.seed)),
            ("docker-mcp-catalog", docker_entries(args.docker)),
            ("mcp-servers-readme", readme_entries(args.servers)),
        ]
    )
    sources = [
        {
            "name": "mcp-registry-seed",
            "title": "the official MCP registry's seed",
            "url": "https://github.com/modelcontextprotocol/registry",
            "commit": SEED_COMMIT,
            "path": "data/seed_2025_05_16.json",
            "licence": "MIT",
            "licenceText": (args.seed / "LICENSE.txt").read_text(encoding="utf-8"),
        },
        {
            "name": "docker-mcp-catalog",
            "title": "Docker's MCP catalog",
            "url": "https://github.com/docker/mcp-registry",
            "commit": DOCKER_COMMIT,
            "path": "servers/*/server.yaml, servers/*/tools.json",
            "licence": "MIT",
            "licenceText": git_show(args.docker, DOCKER_COMMIT, "LICENSE"),
        },
        {
            "name": "mcp-servers-readme",
            "title": "the MCP servers README's lists",
            "url": "https://github.com/modelcontextprotocol/servers",
            "commit": SERVERS_COMMIT,
            "path": "README.md",
            "licence": "MIT",
            "licenceText": git_show(args.servers, SERVERS_COMMIT, "LICENSE"),
        },
    ]
    for source in sources:
        source["servers"] = counts[source["name"]]
    spec = ModelSpec.load(default_model_dir())
    texts = sorted({t for e in entries for t in snapshot.entry_texts(read_entry(e, e["identifier"])[0])})
    started = time.monotonic()
    embedder = load_embedder(spec.directory)
    vectors = np.concatenate([embedder.embed(texts[i : i + 512]) for i in range(0, len(texts), 512)])
    print(f"embedded {len(texts)} texts in {time.monotonic() - started:.0f} s", file=sys.stderr)
    header = {
        "id": SNAPSHOT_ID,
        "model": {"id": spec.id, "dimension": spec.dimension},
        "sources": sources,
        "entries": entries,
    }
    snapshot.write(args.out, header, texts, vectors)
    print(f"{args.out}: {len(entries)} servers ({counts}), {len(texts)} texts, {args.out.stat().st_size / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
