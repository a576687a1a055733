"""Find the npm and PyPI packages of the servers the snapshot's catalogs list, for `build_snapshot.py`.

    python bench/find_packages.py --seed ../shared/data/mcp-registry-seed \\
        --docker DOCKER_GIT_DIR --servers SERVERS_GIT_DIR [--out bench/snapshot_packages.json]

Measured on the snapshot's 1,527 listed repositories (2026-12-07, about 37,000 registry look-ups, 6 minutes
at 96 at once): packages for 398 of them; ard-mcp runs 378 of the 1,683 entries (22.5%, against 63), and all
20 MCP reference servers (`bench/runnable.py`).

Why: the servers people use most were in the snapshot only as container images (Docker's catalog) or as a
README line naming a repository, so ard-mcp could run 19% of it (issue #54), while most of them publish an
npm or PyPI package. A package is taken for a server only when the two name each other:

- the name comes from the server's listing: the seed's own package name (its `unknown` registry), or the
  repository's or its folder's name as publishers spell packages (`NAME`, `mcp-server-NAME`, `NAME-mcp`,
  `@OWNER/NAME`, ...); or from the repository itself where the workspace holds it (the MCP servers
  repository: the folder's own `package.json` or `pyproject.toml`, at the newest commit that has it);
- and the package's own metadata names the same GitHub repository (npm `repository`, `homepage`, `bugs`;
  PyPI `project_urls`, `home_page`), and no other folder of it than the listed one; or, where it names no
  repository at all (472 PyPI and 49 npm candidates here), its description (its README) links the listed
  repository and its name is one the listing ties to it. A package named by the repository's own manifest
  may name no repository (the archived reference servers' do not), but not another one; nor may one the
  listing itself names (the seed's `unknown` registry) or an npm package under the scope of the repository's
  owner, except another repository of the same owner (a renamed one). A package only the listing or a scope
  vouches for is taken only where the other registry has no release of that name, as the installer
  resolves the seed's `unknown` registry. A name alone is never enough: anyone can publish a package named
  like a repository.

The version is the highest released on or before the snapshot's date (`SNAPSHOT_DATE`; else the first
after it, for a server published later or whose older releases are gone), not a prerelease, not yanked or
deprecated, and runnable as a server here: an npm version with a `bin`, a PyPI release with a wheel. The
output is sorted and carries no clock, so a rebuild from it is reproducible; the registries' answers are
cached in `--cache` between runs (delete it to ask again). A registry is not a catalogue to scan: a made-up
name is asked for only where the lists of names given (`--npm-names`, `--pypi-names`) hold it, names the
listings and manifests give always; `--guess-names` asks for every made-up name (the run measured above did,
before the lists were used; 394 of the 774 servers still without a package have a made-up name in the lists,
all of them already asked for and found to be another project's). With the lists, 3,345 look-ups instead of 36,922.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import build_snapshot  # noqa: E402

from ard_mcp.packages.names import canonical_pypi, is_npm_name, is_pypi_name  # noqa: E402

SNAPSHOT_DATE = "2026-07-08T23:59:59Z"  # the newest source commit's day (build_snapshot.SNAPSHOT_ID)
OUT = REPO / "bench" / "snapshot_packages.json"
_AFFIXES = ("{}", "mcp-server-{}", "{}-mcp-server", "{}-mcp", "mcp-{}", "server-{}")
_GITHUB_IN = re.compile(
    r"github\.com[/:]([^/\s#?]+)/([^/\s#?]+?)(?:\.git)?(?:/(?:(?:tree|blob)/[^/\s]+/([^#?\s]*)|[^#?\s]*))?(?:[#?]\S*)?$", re.I
)

_SHORTHAND = re.compile(r"^(?:github:)?([\w.-]+)/([\w.-]+?)(?:\.git)?$")


def github(url: Any) -> tuple[str, str] | None:
    """(`owner/repo`, folder or "") a URL names, lower case (npm's `github:owner/repo` and `owner/repo`
    shorthands too); None for a URL of anything else."""
    match = (_GITHUB_IN.search(url.strip()) or _SHORTHAND.match(url.strip())) if isinstance(url, str) else None
    if match is None:
        return None
    folder = build_snapshot.last_folder(match.group(3) or "", "/blob/" in url) if match.re is _GITHUB_IN else ""
    repository = f"{match.group(1)}/{match.group(2)}".lower()
    return ("modelcontextprotocol/servers" if repository == "modelcontextprotocol/servers-archived" else repository), folder.lower()


def candidates(key: str, listed: Iterable[str]) -> dict[str, bool]:
    """Names to ask for, each with whether the name alone ties it to the listed server: a name the listing
    gives, one made of the listed folder's name, or of the repository's when no folder is listed (a monorepo's
    package may name only the repository, so its folder must be told by its name)."""
    owner, repo, *folder = key.split("/")
    names: dict[str, bool] = dict.fromkeys(listed, True)
    for base, fits in ((repo, not folder), *((f, True) for f in folder)):
        for stem in {base, base.removesuffix("-mcp").removesuffix("-mcp-server").removeprefix("mcp-server-").removeprefix("mcp-")}:
            for affix in _AFFIXES:
                names.setdefault(affix.format(stem), fits)
            names.setdefault(f"@{owner}/{stem}", fits)
    return {n: f for n, f in names.items() if n and (is_npm_name(n) or is_pypi_name(n))}


class Registries:
    """The two registries' answers, cached on disk by URL. A name made up from a repository's (`candidates`)
    is asked for only where `known` lists it for that registry, or where no list was given and guessing was
    allowed (`--guess-names`): a registry is not a catalogue to scan. A name a listing or a repository's
    manifest gives (`given`) is always asked for."""

    def __init__(self, client: httpx.AsyncClient, cache: Path, known: dict[str, set[str]] | None, given: set[str]) -> None:
        self.client, self.cache, self.limit = client, cache, asyncio.Semaphore(96)
        self.known, self.given = known, given

    def _may_ask(self, registry: str, name: str) -> bool:
        return name in self.given or (self.known is None or name.lower() in self.known[registry])

    async def document(self, url: str, may_ask: bool = True) -> dict[str, Any] | None:
        path = self.cache / hashlib.sha256(url.encode()).hexdigest()
        if path.exists():
            return json.loads(path.read_text()) or None
        if not may_ask:
            return None
        async with self.limit:
            for attempt in range(3):
                try:
                    response = await self.client.get(url)
                    break
                except httpx.HTTPError:
                    if attempt == 2:
                        raise
                    await asyncio.sleep(1 + attempt)
        found = response.json() if response.status_code == 200 else None
        if response.status_code not in (200, 404):
            raise SystemExit(f"{url}: HTTP {response.status_code}")
        path.write_text(json.dumps(found or {}))
        return found

    async def npm(self, name: str) -> dict[str, Any] | None:
        if not is_npm_name(name):
            return None
        return await self.document(f"https://registry.npmjs.org/{quote(name, safe='@')}", self._may_ask("npm", name))

    async def pypi(self, name: str) -> dict[str, Any] | None:
        if not is_pypi_name(name):
            return None
        return await self.document(f"https://pypi.org/pypi/{canonical_pypi(name)}/json", self._may_ask("pypi", canonical_pypi(name)))


def _release(version: str) -> Version | None:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return None if parsed.is_prerelease or parsed.is_devrelease else parsed


def _chosen(fit: list[tuple[Any, str, str]]) -> str | None:
    """Of (version order, version, released) triples, the highest released by the snapshot's date, else the
    first released after it (a server not yet published then, or whose older releases are gone). The highest,
    not the last released: registries' release times are not in version order (npm lists
    @modelcontextprotocol/server-memory 2025.4.25 as released after 2026.1.26)."""
    before = [f for f in fit if f[2] <= SNAPSHOT_DATE]
    return max(before)[1] if before else min(fit, key=lambda f: f[2])[1] if fit else None


def npm_choice(document: dict[str, Any]) -> tuple[str, list[Any], str] | None:
    """The version to run, the URLs it names its repository by, and its readme."""
    times, versions = document.get("time") or {}, document.get("versions") or {}
    fit = [
        (Version(v), v, times[v])
        for v, manifest in versions.items()
        if _release(v) and isinstance(times.get(v), str) and manifest.get("bin") and not manifest.get("deprecated")
    ]
    version = _chosen(fit)
    if version is None:
        return None
    manifest = versions[version]
    repository = manifest.get("repository")
    urls = (
        [repository.get("url"), repository.get("directory") and f"{repository.get('url')}/tree/-/{repository['directory']}"]
        if isinstance(repository, dict)
        else [repository]
    )
    bugs = manifest.get("bugs")
    urls += [manifest.get("homepage"), bugs.get("url") if isinstance(bugs, dict) else bugs]
    return version, urls, str(document.get("readme") or "")


def pypi_choice(document: dict[str, Any]) -> tuple[str, list[Any], str] | None:
    fit = []
    for version, files in (document.get("releases") or {}).items():
        wheels = [f for f in files if f.get("packagetype") == "bdist_wheel" and not f.get("yanked")]
        if _release(version) and wheels:
            fit.append((Version(version), version, min(str(f.get("upload_time_iso_8601") or "~") for f in files)))
    version = _chosen(fit)
    if version is None:
        return None
    info = document.get("info") or {}
    return version, [*(info.get("project_urls") or {}).values(), info.get("home_page")], str(info.get("description") or "")


def agrees(chosen: tuple[str, list[Any], str], key: str, fits: bool, vouched: str | None) -> tuple[str, bool] | None:
    """Why the package's own metadata says it is this server's, and whether the metadata itself says so (False:
    only `vouched`, what the listing or the repository says of the name); None where nothing does. A package
    naming another repository is refused, unless something vouches for it and the other is the same owner's
    (a renamed repository). A description's link counts only for a repository that is one server: forks of
    the MCP servers monorepo (`mcp-fetch`, `time-mcp-server`) link it from theirs."""
    owner, name, *folder_of = key.split("/")
    repository, folder = f"{owner}/{name}", (folder_of or [""])[0]
    named = [g for g in (github(u) for u in chosen[1]) if g is not None]
    others = {r for r, _ in named if r != repository}
    if others and not (vouched and all(r.split("/")[0] == owner for r in others)):
        return None
    folders = {f for r, f in named if f and r == repository}
    if folders and folder and folder not in folders:
        return None  # another folder of a monorepo
    if named and not others and (not folder or folder in folders or fits or vouched):
        return "its metadata names github.com/" + repository + (f" ({folder})" if folder in folders else ""), True
    if vouched:
        return vouched + (f"; its metadata names github.com/{min(others)}, the same owner's" if others else ""), False
    if fits and not folder and re.search(rf"github\.com/{re.escape(repository)}(?![\w.-])", chosen[2], re.IGNORECASE):
        return f"its description links github.com/{repository} (its metadata names no repository)", True
    return None


async def resolve(
    registries: Registries, key: str, names: dict[str, bool], listed: set[str], manifest: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Every package of `names` that is this server's, npm first. One that only the listing or the repository
    vouches for is taken only where the other registry has no release of that name (as the installer resolves
    the seed's `unknown` registry)."""
    found: list[dict[str, Any]] = []
    owner = key.split("/", maxsplit=1)[0]
    kinds = {"npm": (registries.npm, npm_choice), "pypi": (registries.pypi, pypi_choice)}
    for registry, (ask, choose) in kinds.items():
        for name, fits in sorted(names.items()):
            document = await ask(name)
            chosen = choose(document) if document else None
            vouched = (
                "the repository's own manifest names it"
                if (registry, name) in manifest
                else "its listing names this package"
                if name in listed
                else f"published under the npm scope of the repository's owner (@{owner})"
                if registry == "npm" and name.lower().startswith(f"@{owner.lower()}/") and fits
                else None
            )
            why = chosen and agrees(chosen, key, fits, vouched)
            if not chosen or not why:
                continue
            if not why[1] and (registry, name) not in manifest:
                other_ask, other_choose = kinds["pypi" if registry == "npm" else "npm"]
                elsewhere = await other_ask(name)
                if elsewhere and other_choose(elsewhere):
                    continue
            identifier = name if registry == "npm" else (document or {}).get("info", {}).get("name", name)
            if all(p["identifier"] != identifier for p in found):
                found.append({"registryType": registry, "identifier": identifier, "version": chosen[0], "evidence": why[0]})
    return sorted(found, key=lambda p: not p["evidence"].startswith("its metadata names"))  # the first usable one runs


def manifest_names(git_dir: Path, key: str) -> set[tuple[str, str]]:
    """The (registry, name) packages the MCP servers repository's own folder declares (newest commit that has
    them): `package.json` an npm one, `pyproject.toml` a PyPI one."""
    parts = key.split("/")
    if parts[:2] != ["modelcontextprotocol", "servers"] or len(parts) != 3:
        return set()
    names: set[tuple[str, str]] = set()
    for file in ("package.json", "pyproject.toml"):
        path = f"src/{parts[2]}/{file}"
        last = subprocess.run(
            ["git", f"--git-dir={git_dir}", "rev-list", "-1", build_snapshot.SERVERS_COMMIT, "--", path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for commit in filter(None, (last, last and f"{last}^")):
            shown = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True, text=True)
            if shown.returncode == 0:
                text = shown.stdout
                names.add(("npm", json.loads(text)["name"]) if file.endswith(".json") else ("pypi", tomllib.loads(text)["project"]["name"]))
                break
    return names


def _names(path: Path, canonical: Callable[[str], str]) -> set[str]:
    """The names a list holds (the first tab-separated column of each line), as `canonical` spells them."""
    with path.open(encoding="utf-8") as lines:
        return {canonical(line.split("\t", 1)[0].strip()) for line in lines if line.strip()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=Path, required=True)
    parser.add_argument("--docker", type=Path, required=True)
    parser.add_argument("--servers", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ard-mcp-package-lookups"))
    parser.add_argument("--npm-names", type=Path, help="the npm registry's package names, the first column of each line")
    parser.add_argument("--pypi-names", type=Path, help="PyPI's project names, the first column of each line")
    parser.add_argument("--guess-names", action="store_true", help="with no lists, ask the registries for every made-up name")
    args = parser.parse_args()
    if (args.npm_names is None) != (args.pypi_names is None) or (args.npm_names is None and not args.guess_names):
        parser.error("give both --npm-names and --pypi-names (guessed names are asked for only where they list them), or --guess-names")
    known = None if args.npm_names is None else {"npm": _names(args.npm_names, str.lower), "pypi": _names(args.pypi_names, canonical_pypi)}
    args.cache.mkdir(parents=True, exist_ok=True)
    listed: dict[str, set[str]] = {}
    for listing in build_snapshot.listings(args.seed, args.docker, args.servers):
        if listing.key is not None:
            listed.setdefault(listing.key, set()).update(build_snapshot.package_names(listing.document))
    declared = {key: manifest_names(args.servers, key) for key in listed}
    given = set().union(*listed.values(), *({name for _, name in names} for names in declared.values()))
    async with httpx.AsyncClient(timeout=60, follow_redirects=True, limits=httpx.Limits(max_connections=96)) as client:
        registries = Registries(client, args.cache, known, given)

        async def one(key: str) -> tuple[str, list[dict[str, Any]]]:
            names = candidates(key, listed[key] | {name for _, name in declared[key]})
            return key, await resolve(registries, key, names, listed[key], declared[key])

        results = dict(await asyncio.gather(*(one(k) for k in sorted(listed))))
    links = {k: v for k, v in sorted(results.items()) if v}
    args.out.write_text(json.dumps({"date": SNAPSHOT_DATE, "servers": links}, indent=1, sort_keys=True) + "\n")
    print(f"{args.out}: packages for {len(links)} of {len(listed)} listed repositories", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
