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
bare mirror); the files are read with `git show COMMIT:PATH`, so the working tree does not matter.

One server, one entry (issue #54: the reference servers were in it only as Docker's images, their packages
nowhere): listings of the same repository (and folder of a monorepo), of the same npm or PyPI package, or of a
vendor's hosted server under the same name on the same site (`site_key`) are joined, the name and words from
the first catalog in the order above, every catalog's packages, remotes and images kept; and a server gets the
packages `find_packages.py` found for its repository (`--packages`, its JSON output, kept in the repository so
a rebuild asks no registry). Every entry says where it came from: `metadata.source` (the catalog its words are
from), `metadata.catalogs` (every catalog listing it, where more than one), `metadata.packagesFoundBy` (why
each found package was taken) and `metadata.snapshot` (this snapshot's id); `metadata.sourceId` is its server
name, as a crawl would make it (`com.docker/NAME` for Docker's), so a later crawl of the same server updates
the entry. The snapshot's header keeps each catalog's URL, commit, licence and licence text.

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
from dataclasses import dataclass
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
from ard_mcp.packages.names import canonical_pypi  # noqa: E402

DOCKER_COMMIT = "818bf169b365e7b7d5b117352e32757c54844718"  # docker/mcp-registry, 2026-07-08
SERVERS_COMMIT = "d9c45477cd6ff4d3456c138498dca984c8697f43"  # modelcontextprotocol/servers, 2025-12-17 (MIT)
SEED_COMMIT = "81e5174a593a7488715b0bf0ae77a4dc466b4d35"  # modelcontextprotocol/registry, as SOURCE.txt says
SNAPSHOT_ID = "public-mcp-servers-2026-07-08"  # the newest source commit's date
PACKAGES = REPO / "bench" / "snapshot_packages.json"

_GITHUB = re.compile(r"^https?://(?:www\.)?github\.com/([^/]+)/([^/#?]+)(?:/(?:tree|blob)/[^/]+/([^#?]*))?", re.IGNORECASE)
_ITEM = re.compile(r"^- (?:<img[^>]*>\s*)*\*\*\[(?P<name>[^\]]+)\]\((?P<url>[^)\s]+)\)\*\*\s*[-–—:]?\s*(?P<text>.*)$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"<[^>]+>|\*\*|__|`")
_FILE = re.compile(r"\.(?:md|markdown|rst|txt|py|ts|js|json|ya?ml|toml)$", re.IGNORECASE)
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


def last_folder(path: str, blob: bool) -> str:
    """The folder a repository path names: its last part, or the one above a file's (a `blob` link, or a name
    like `README.md`: 12 README listings link a document, which is the repository's, not a folder's)."""
    parts = [p for p in path.strip("/").split("/") if p]
    if parts and (blob or _FILE.search(parts[-1])):
        parts.pop()
    return parts[-1] if parts else ""


def repo_key(url: str | None, directory: str | None = None) -> str | None:
    """`owner/repo[/last folder]`, lower case: what says two catalogs list one server."""
    match = _GITHUB.match(url or "")
    if match is None:
        return None
    owner, repo = match.group(1), match.group(2).removesuffix(".git")
    folder = last_folder(match.group(3) or directory or "", "/blob/" in (url or ""))
    repo = "servers" if f"{owner}/{repo}".lower() == "modelcontextprotocol/servers-archived" else repo  # where they were
    return "/".join(p for p in (owner, repo, folder) if p).lower()


@dataclass
class Listing:
    """One catalog's listing of a server: what says which server it is (`key`), and its server.json-like
    document."""

    key: str | None
    source: str
    source_id: str
    document: dict[str, Any]


def _package_id(package: dict[str, Any]) -> str | None:
    registry = package.get("registryType") or package.get("registry_name")
    name = package.get("identifier") or package.get("name")
    if registry == "pypi" and isinstance(name, str):
        name = canonical_pypi(name)
    return f"{registry}:{name}" if registry in ("npm", "pypi") and isinstance(name, str) else None


def package_names(document: dict[str, Any]) -> set[str]:
    """The npm, PyPI and seed `unknown` package names a document gives (what find_packages.py asks for)."""
    packages = [p for p in document.get("packages") or [] if isinstance(p, dict)]
    return {
        str(p.get("identifier") or p.get("name"))
        for p in packages
        if (p.get("registryType") or p.get("registry_name")) in ("npm", "pypi", "unknown") and (p.get("identifier") or p.get("name"))
    }


def _with_found(document: dict[str, Any], found: list[dict[str, Any]]) -> dict[str, Any]:
    """The document with the packages find_packages.py found for its server: a seed `unknown` package of the
    same name becomes the found one; the others are added in the document's own shape; runnable ones first."""
    old = "version_detail" in document  # the seed's older record shape: its packages are spelled the old way
    packages = [dict(p) for p in document.get("packages") or [] if isinstance(p, dict)]
    for item in found:
        shaped = (
            {"registry_name": item["registryType"], "name": item["identifier"], "version": item["version"]}
            if old
            else {
                "registryType": item["registryType"],
                "identifier": item["identifier"],
                "version": item["version"],
                "transport": {"type": "stdio"},
            }
        )
        same = [p for p in packages if p.get("registry_name") == "unknown" and p.get("name") == item["identifier"]]
        if same:
            same[0].update(shaped)
        elif _package_id(shaped) not in {_package_id(p) for p in packages}:
            packages.append(shaped)
    packages.sort(key=lambda p: _package_id(p) is None)
    return {**document, "packages": packages} if packages else document


def _joined(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One server's documents from several catalogs as one: the first's name and words, every catalog's
    packages, remotes and keywords, the first tool list and repository any of them has."""
    merged = dict(documents[0])
    for other in documents[1:]:
        kept = {_package_id(p) or json.dumps(p, sort_keys=True) for p in merged.get("packages") or []}
        extra = [p for p in other.get("packages") or [] if (_package_id(p) or json.dumps(p, sort_keys=True)) not in kept]
        if extra:  # a seed-shaped document takes other packages in its own shape
            merged["packages"] = [*(merged.get("packages") or []), *extra]
        urls = {r.get("url") for r in merged.get("remotes") or []}
        remotes = [r for r in other.get("remotes") or [] if r.get("url") not in urls]
        if remotes:
            merged["remotes"] = [*(merged.get("remotes") or []), *remotes]
        keywords = [*(merged.get("keywords") or []), *(k for k in other.get("keywords") or [] if k not in (merged.get("keywords") or []))]
        if keywords:
            merged["keywords"] = keywords
        for field in ("tools", "repository", "websiteUrl"):
            if field in other and field not in merged:
                merged[field] = other[field]
    return merged


_SECOND_LEVEL = {"co", "com", "net", "org", "ac", "gov", "edu"}  # as in example.co.uk: the site is three labels


def site_key(document: dict[str, Any]) -> set[str]:
    """`site:DOMAIN|NAME` for a listing with no repository: the registrable domain of each of its remotes and
    of its website, with its name in letters and digits. A vendor's hosted server is in the README's list as
    its product page (linear.app/docs/mcp) and in Docker's catalog as its endpoint (mcp.linear.app), neither
    naming a repository; the same name on the same site is one server (it was shown twice: Linear, PayPal,
    HubSpot). A listing with a repository is joined by it instead: a monorepo's servers share a site."""
    if document.get("repository"):
        return set()
    name = _NOT_SLUG.sub("", str(document.get("title") or document.get("name") or "").lower())
    urls = [r.get("url") for r in document.get("remotes") or [] if isinstance(r, dict)] + [document.get("websiteUrl")]
    keys = set()
    for url in urls:
        labels = (urlsplit(url).hostname or "").split(".") if isinstance(url, str) else []
        if len(labels) >= 2 and name:
            size = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL else 2
            keys.add(f"site:{'.'.join(labels[-size:])}|{name}")
    return keys


def _groups(listings: list[Listing], found: dict[str, list[dict[str, Any]]]) -> list[list[Listing]]:
    """Listings of one server together, in catalog order: the same repository (and folder), the same npm
    or PyPI package, or the same name on the same vendor's site (`site_key`), directly or through another
    listing."""
    parent = list(range(len(listings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, listing in enumerate(listings):
        ids = {_package_id(p) for p in listing.document.get("packages") or [] if isinstance(p, dict)}
        ids |= {f"{p['registryType']}:{p['identifier']}" for p in found.get(listing.key or "", [])}
        for label in {f"repo:{listing.key}" if listing.key else None, *ids, *site_key(listing.document)} - {None}:
            j = first.setdefault(str(label), i)
            parent[max(root(i), root(j))] = min(root(i), root(j))
    grouped: dict[int, list[Listing]] = {}
    for i, listing in enumerate(listings):
        grouped.setdefault(root(i), []).append(listing)
    return [grouped[k] for k in sorted(grouped)]


def tagged(group: list[Listing], found: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The entry `ard-mcp crawl` would make of a server's joined documents, saying where it came from; None
    (with the reason on stderr) for one this version cannot read."""
    lead = group[0]
    packages = [p for key in dict.fromkeys(g.key for g in group if g.key) for p in found.get(str(key), [])]
    document = _with_found(_joined([g.document for g in group]), packages)
    images = {g.key for g in group if g.source == "docker-mcp-catalog" and g.key}
    same_source = {_package_id(p) for g in group if g.key in images for p in g.document.get("packages") or []}
    same_source |= {_package_id(p) for key in images for p in found.get(str(key), [])}
    given = with_image_arguments(document, {i for i in same_source if i})
    document, carried = given, given is not document
    try:
        entry = mcp_server.to_entry(document)
        read_entry(entry, entry["identifier"])
    except ArdError as exc:
        print(f"  skipped {lead.source}: {lead.source_id!r}: {exc.message}", file=sys.stderr)
        return None
    facts = {snapshot.SOURCE_KEY: lead.source, entry_facts.SNAPSHOT_KEY: SNAPSHOT_ID}
    catalogs = list(dict.fromkeys(g.source for g in group))
    if len(catalogs) > 1:
        facts["catalogs"] = ", ".join(catalogs)
    if carried:
        facts["packageArgumentsFrom"] = "docker-mcp-catalog: the image's run.command"
    if packages:
        facts["packagesFoundBy"] = "; ".join(f"{p['registryType']} {p['identifier']}: {p['evidence']}" for p in packages)
    entry["metadata"] = {**entry["metadata"], **facts}
    return entry


# -- the three catalogs -----------------------------------------------------------------------------------------


def seed_entries(folder: Path) -> Iterator[Listing]:
    for item in json.loads((folder / "catalog.json").read_text(encoding="utf-8"))["entries"]:
        record = item["data"]
        key = repo_key((record.get("repository") or {}).get("url"))
        yield Listing(key, "mcp-registry-seed", str(record.get("name") or item["identifier"]), record)


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
        image = {"registryType": "oci", "identifier": f"docker.io/{server['image']}", "transport": {"type": "stdio"}}
        run = server.get("run") or {}
        arguments = image_arguments(run.get("command") or [], run.get("volumes") or [])
        document["packages"] = [{**image, "packageArguments": arguments} if arguments else image]
    remote = server.get("remote") or {}
    if remote.get("url"):
        kind = {"sse": "sse", "http": "streamable-http", "streamable-http": "streamable-http"}.get(remote.get("transport_type", ""), "")
        document["remotes"] = [{"type": kind or "streamable-http", "url": remote["url"]}]
    listed = tools or [t for t in server.get("tools") or [] if isinstance(t, dict)]
    named = [{"name": t["name"], "description": t.get("description") or ""} for t in listed if isinstance(t.get("name"), str)]
    if named:
        document["tools"] = named
    return document


_TEMPLATED = re.compile(r"\{\{|\$\{?[A-Za-z_]")


def image_arguments(command: list[Any], volumes: list[Any]) -> list[dict[str, Any]]:
    """Docker's `run.command` for an image as server.json `packageArguments`: `--name value`, `--name=value`
    and a bare `--flag` named, anything else positional. A value inside one of the image's volumes (SQLite's
    `--db-path /mcp/db.sqlite` in the volume `mcp-sqlite:/mcp`) is where the person's own data lives, so it
    becomes a required `filepath` argument with no value: the person grants the file or folder when asked.
    None where an item is a template of Docker's own settings (`{{server.paths|...}}`) or a `$VARIABLE`:
    ard-mcp fills neither, and half a command line would start the server wrong."""
    items = [str(item) for item in command]
    if not all(isinstance(item, (str, int, float)) for item in command) or any(_TEMPLATED.search(i) for i in items):
        return []
    mounts = [str(v).split(":")[1].rstrip("/") + "/" for v in volumes if isinstance(v, str) and v.count(":") >= 1]

    def valued(argument: dict[str, Any], value: str) -> dict[str, Any]:
        if any(value.startswith(mount) or value == mount.rstrip("/") for mount in mounts):
            kind = "file" if Path(value).suffix else "folder"
            return {
                **argument,
                "isRequired": True,
                "format": "filepath",
                "description": f"a {kind} of yours (Docker's catalog keeps it at {value}, in a volume)",
            }
        return {**argument, "value": value}

    arguments: list[dict[str, Any]] = []
    position = 0
    while position < len(items):
        item = items[position]
        following = items[position + 1] if position + 1 < len(items) else None
        if item.startswith("-") and "=" in item:
            name, _, value = item.partition("=")
            arguments.append(valued({"type": "named", "name": name}, value))
        elif item.startswith("-") and following is not None and not following.startswith("-"):
            arguments.append(valued({"type": "named", "name": item}, following))
            position += 1
        elif item.startswith("-"):
            arguments.append({"type": "named", "name": item})
        else:
            arguments.append(valued({"type": "positional"}, item))
        position += 1
    return arguments


def with_image_arguments(document: dict[str, Any], same_source: set[str]) -> dict[str, Any]:
    """The document with an image's command-line arguments (`image_arguments`) given to its npm and PyPI
    packages built from the same source (`same_source`: their `_package_id`s) that give none of their own: the
    image runs the package's program, and Docker's catalog is the only one of the three that says how (the
    SQLite reference server needs `--db-path`; without it the snapshot's entry could not be run)."""
    packages = [p for p in document.get("packages") or [] if isinstance(p, dict)]
    given = next((p["packageArguments"] for p in packages if p.get("registryType") == "oci" and p.get("packageArguments")), None)
    if given is None:
        return document
    shaped = [
        {**p, "packageArguments": given}
        if _package_id(p) in same_source and not (p.get("packageArguments") or p.get("package_arguments")) and "registryType" in p
        else p
        for p in packages
    ]
    return {**document, "packages": shaped} if shaped != packages else document


def docker_entries(git_dir: Path) -> Iterator[Listing]:
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
        yield Listing(repo_key(source.get("project"), directory), "docker-mcp-catalog", server["name"], _docker_document(server, tools))


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


def readme_entries(git_dir: Path) -> Iterator[Listing]:
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
        yield Listing(repo_key(url), "mcp-servers-readme", name, document)


# -- putting it together ----------------------------------------------------------------------------------------


def listings(seed: Path, docker: Path, servers: Path) -> list[Listing]:
    """Every catalog's listings, in the order a server's joined entry takes its name and words from."""
    return [*seed_entries(seed), *docker_entries(docker), *readme_entries(servers)]


def collect(listed: list[Listing], found: dict[str, list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """One entry per server, joined across catalogs, readable by this version's rules; per catalog, the
    entries it leads (`servers`) and its listings joined into another's entry (`joined`)."""
    kept: dict[str, dict[str, Any]] = {}
    counts = {name: {"servers": 0, "joined": 0} for name in dict.fromkeys(listing.source for listing in listed)}
    for group in _groups(listed, found):
        entry = tagged(group, found)
        if entry is None or entry["identifier"] in kept:
            continue
        kept[entry["identifier"]] = entry
        counts[group[0].source]["servers"] += 1
        for other in group[1:]:
            counts[other.source]["joined"] += 1
    return [kept[k] for k in sorted(kept)], counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=Path, required=True, help="the mcp-registry-seed folder (catalog.json, LICENSE.txt)")
    parser.add_argument("--docker", type=Path, required=True, help="git directory of docker/mcp-registry")
    parser.add_argument("--servers", type=Path, required=True, help="git directory of modelcontextprotocol/servers")
    parser.add_argument("--packages", type=Path, default=PACKAGES, help="find_packages.py's output")
    parser.add_argument("--out", type=Path, default=snapshot.BUNDLED)
    args = parser.parse_args()

    found = json.loads(args.packages.read_text(encoding="utf-8"))["servers"]
    entries, counts = collect(listings(args.seed, args.docker, args.servers), found)
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
        source.update(counts[source["name"]])
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
