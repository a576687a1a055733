"""Reading `ai-catalog.json` manifests into (location, entry) pairs, nested catalogs included.

A nested catalog (`type: application/ai-catalog+json` with inline `data`) is registered itself and its
entries are walked too, so a bundle's members are findable on their own. Locations name where each entry
sits (`site/catalog.json: entries[2].data.entries[0]`), which is what rejection messages quote.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.formats.catalog import CatalogManifest, describe_validation_error
from ard_mcp.formats.leniency import Notice, read_manifest
from ard_mcp.formats.media_types import AI_CATALOG, canonical_type

MAX_DEPTH = 8
MAX_FILE_BYTES = 1024**3  # ingest reads a file whole; an export of 100,000 agents is a fraction of this


def load_manifest(path: Path) -> Any:
    """A manifest file through the one bounded reader (`bounded_json`), its entries read one by one: an
    entry that breaks a bound (nesting, a 10,000-digit number, an unpaired surrogate) stays in the list as
    the reason it cannot be read and is rejected alone, where it once ended the ingest in a traceback."""
    shown = shown_path(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InvalidArgument(f"{shown}: no such file") from None
    except OSError as exc:
        raise InvalidArgument(f"{shown}: cannot be read ({exc.strerror or exc})") from None
    try:
        return read_json(data, max_bytes=MAX_FILE_BYTES, each_of="entries")
    except UnreadableJson as exc:
        raise InvalidArgument(f"{shown}: {exc}") from None


def manifest_entries(raw: Any, where: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every entry of a manifest with its location; raises `InvalidArgument` if the manifest itself is bad.

    A nested manifest that is bad is yielded as the `InvalidArgument` in place of an entry, so the
    registry reports it among the rejections without giving up on the rest of the file; what was
    normalised in a manifest's own fields is yielded as `Notice`s, for the ingest summary."""
    if not isinstance(raw, Mapping):
        raise InvalidArgument(f"{where or 'manifest'}: must be a JSON object")
    manifest, notes = read_manifest(raw)
    entries = manifest.get("entries")
    if isinstance(entries, list):  # an entry the reader could not read is not the manifest's fault: it is rejected below
        manifest = {**manifest, "entries": [{} if isinstance(e, UnreadableJson) else e for e in entries]}
    try:
        CatalogManifest.model_validate(manifest)
    except ValidationError as exc:
        raise InvalidArgument(describe_validation_error(exc, where)) from None
    for note in notes:
        yield where, Notice(note)
    prefix = f"{where}." if where else ""
    for i, entry in enumerate(raw["entries"]):  # as read: an entry the reader refused is its UnreadableJson
        location = f"{prefix}entries[{i}]"
        if isinstance(entry, UnreadableJson):
            yield location, InvalidArgument(entry.at(location))
            continue
        yield location, entry
        data = entry.get("data") if isinstance(entry, dict) else None
        nested = isinstance(data, dict) and isinstance(entry.get("type"), str) and canonical_type(entry["type"]) == AI_CATALOG
        if nested and depth < MAX_DEPTH:
            try:
                yield from manifest_entries(data, f"{location}.data", depth + 1)
            except InvalidArgument as exc:
                yield f"{location}.data", exc  # the bundle's own manifest is bad: report it, keep going


def shown_path(path: Path) -> str:
    """A file as messages name it: as the user gave it, relative to the working directory when it is under it,
    so three files called catalog.json stay apart (`livemcpbench/catalog.json`, ...); the basename did not."""
    if path.is_absolute():
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            return str(path)
    return str(path)


def file_entries(path: Path) -> Iterator[tuple[str, Any]]:
    shown = shown_path(path)
    try:
        for location, found in manifest_entries(load_manifest(path)):
            rejected = isinstance(found, InvalidArgument)  # a rejection names its place: the file goes in front
            yield f"{shown}: {location}" if location else shown, InvalidArgument(f"{shown}: {found.message}") if rejected else found
    except InvalidArgument as exc:  # the file's own manifest is bad: say which file
        raise InvalidArgument(exc.message if exc.message.startswith(shown) else f"{shown}: {exc.message}") from None
