"""The held-out public sets (issue #56: APIBench, RestBench, NESTFUL; `bench/sources/`): their figures are an
outside check only while no fit, no training and no default run has used them, so these guard that, and that
each builder reads its repository's files as their docstrings say (on small stand-ins built in a git directory
here, since the real snapshots are not part of the repository)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ard_mcp.formats.catalog import CatalogEntry
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import build_sources
import loso
import suite
from fit_fusion import fit
from sources import apibench, nestful, restbench


def test_the_held_out_sources_are_none_of_the_fitted_or_trained_ones() -> None:
    assert set(build_sources.HELD_OUT) == set(suite.HELD_OUT_SOURCES)
    assert not set(build_sources.BUILDERS) & set(suite.HELD_OUT_SOURCES)  # train_pairs.py trains on every BUILDERS source
    assert not set(suite.BUILT_SOURCES) & set(suite.HELD_OUT_SOURCES)
    assert not set(loso.SOURCES) & set(suite.HELD_OUT_SOURCES)


def test_a_fit_refuses_a_held_out_source() -> None:
    with pytest.raises(ValueError, match="restbench"):
        fit({}, {"seal-tools": [], "restbench": []}, [])
    with pytest.raises(ValueError, match="everyday"):  # scored beside the dev sources, never fitted (suite.NOT_FITTED)
        fit({}, {"seal-tools": [], "everyday": []}, [])
    assert list(suite.fitted({"seal-tools": 1, "everyday": 2, "restbench": 3})) == ["seal-tools"]


def _queries(folder: Path) -> None:
    folder.mkdir(parents=True)
    line = {"id": f"{folder.name}-1", "query": "find a tool", "relevant": [f"urn:air:{folder.name}.example.org:tool:x"]}
    (folder / "queries.dev.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (folder / "catalog.json").write_text('{"specVersion": "1.0", "entries": []}\n', encoding="utf-8")


def test_every_source_means_the_fitted_ones_and_a_held_out_one_comes_only_by_name(tmp_path: Path) -> None:
    shared, built = tmp_path / "shared", tmp_path / "built"
    for name in ("livemcpbench", "metatool"):
        _queries(shared / "data" / name)
    for name in ("seal-tools", *suite.HELD_OUT_SOURCES):
        _queries(built / name)
    every = {s.name for s in suite.sources(shared, built)}  # what fit_fusion.py and a plain quality.py ask for
    assert "seal-tools" in every
    assert not every & set(suite.HELD_OUT_SOURCES)
    assert [s.name for s in suite.sources(shared, built, only=["restbench"])] == ["restbench"]
    assert set(suite.HELD_OUT_SOURCES) <= {s.name for s in suite.sources(shared, built, held_out=True)}
    assert not set(suite.catalogs(shared, built)) & set(suite.HELD_OUT_SOURCES)
    assert set(suite.HELD_OUT_SOURCES) <= set(suite.catalogs(shared, built, held_out=True))


# -- the builders, on small stand-ins of each repository's files ---------------------------------------------


def _git_dir(tmp_path: Path, files: dict[str, Any]) -> Path:
    """A bare git directory whose HEAD holds `files` (JSON values are written as JSON, lists of dicts as JSON lines
    where the name ends in .jsonl, strings as they are)."""
    work, bare = tmp_path / "work", tmp_path / "repo"
    for path, value in files.items():
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, str):
            text = value
        elif path.endswith(".jsonl"):
            text = "".join(json.dumps(v) + "\n" for v in value)
        else:
            text = json.dumps(value)
        target.write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "stand-in"]):
        subprocess.run([*git, *args], cwd=work, check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    return bare


def _lines(values: list[dict[str, Any]]) -> str:
    """JSON lines, as APIBench's `*_eval.json` files are written despite their name."""
    return "".join(json.dumps(v) + "\n" for v in values)


def _valid(entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        CatalogEntry.model_validate(entry)
        assert "representativeQueries" not in entry


MIT = "MIT License\n\nPermission is hereby granted, free of charge, ..."
APACHE = "Apache License\nVersion 2.0, January 2004\n..."


def test_restbench_makes_one_entry_per_endpoint_and_matches_solutions_whatever_their_parameter_names(tmp_path: Path) -> None:
    tmdb = {
        "servers": [{"url": "https://api.themoviedb.org/3"}],
        "paths": {
            "/search/person": {
                "get": {"operationId": "GET_search-person", "summary": "Search People", "description": "Search for people."}
            },
            "/person/{person_id}/movie_credits": {
                "parameters": [{"name": "person_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "get": {"operationId": "GET_person-credits", "summary": "Get Movie Credits", "description": "A person's movie credits."},
            },
        },
    }
    spotify = {
        "components": {"parameters": {"PathId": {"name": "user_id", "in": "path", "required": "true", "schema": {"type": "string"}}}},
        "paths": {
            "/users/{user_id}/playlists": {
                "post": {
                    "operationId": "create-playlist",
                    "summary": "Create Playlist\n",
                    "description": "Create a playlist for a Spotify user.\n",
                    "tags": ["Playlists"],
                    "parameters": [{"$ref": "#/components/parameters/PathId"}],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"properties": {"name": {"type": "string", "description": "Its name"}}, "required": ["name"]}
                            }
                        }
                    },
                }
            }
        },
    }
    git_dir = _git_dir(
        tmp_path,
        {
            "LICENSE": MIT,
            "specs/tmdb_oas.json": tmdb,
            "specs/spotify_oas.json": spotify,
            "datasets/tmdb.json": [
                {
                    "query": "how many films did Sofia Coppola direct",
                    "solution": [" GET /search/person", "GET /person/{movie_id}/movie_credits"],
                }
            ],
            "datasets/spotify.json": [
                {"query": "make me a playlist", "solution": ["POST /users/{user_id}/playlists"]},
                {"query": "play a track", "solution": ["GET /track/{id}"]},  # no spec has it: left out
            ],
        },
    )
    dataset = restbench.build(git_dir)
    _valid(dataset.entries)
    assert dataset.licence == "MIT"
    names = [e["displayName"] for e in dataset.entries]
    assert names == [
        "TMDB: Search People (GET /search/person)",
        "TMDB: Get Movie Credits (GET /person/{person_id}/movie_credits)",
        "Spotify: Create Playlist (POST /users/{user_id}/playlists)",
    ]
    playlist = dataset.entries[2]["data"]["tools"][0]["inputSchema"]
    assert set(playlist["properties"]) == {"user_id", "name"} and playlist["required"] == ["user_id", "name"]
    assert [(q["kind"], len(q["relevant"])) for q in dataset.queries] == [("tmdb", 2), ("spotify", 1)]
    assert dataset.queries[0]["relevant"][1] == dataset.entries[1]["identifier"]


def test_nestful_makes_one_catalog_of_every_subset_and_labels_the_functions_a_sequence_calls(tmp_path: Path) -> None:
    executable = [
        {
            "name": "SkyScrapperSearchAirport",
            "description": "Find airports by name.",
            "url": "https://rapidapi.com/x",
            "query_parameters": {"query": {"type": "string", "description": "A place", "required": True}},
        }
    ]
    glaive = [
        {"name": "translate_text", "description": "Translate a text", "parameters": {"text": {"type": "string", "required": True}}},
        {"name": "translate_text", "description": "Translate a text", "parameters": {"text": {"type": "string", "required": True}}},
    ]
    sgd = [
        {
            "name": "Buses.FindBus",
            "description": "Find a bus",
            "arguments": {
                "fare_type": {"description": "Fare", "required": False, "default_value": "Economy", "allowed_values": ["Economy"]}
            },
        }
    ]

    def calls(*names: str) -> dict[str, Any]:
        return {"output": [*({"name": n, "arguments": {}, "label": f"var{i}"} for i, n in enumerate(names)), {"name": "var_result"}]}

    git_dir = _git_dir(
        tmp_path,
        {
            "LICENSE": APACHE,
            "data/executable/executable-spec.json": executable,
            "data/executable/executable-data.json": [{"input": "airports near London", **calls("SkyScrapperSearchAirport")}],
            "data/non-executable/non-executable-glaive-spec.json": glaive,
            "data/non-executable/non-executable-glaive-data.json": [
                {"input": "translate and make a task", **calls("translate_text", "create_task")},  # create_task: not in the spec
                {"input": "translate this twice", **calls("translate_text", "translate_text")},
            ],
            "data/non-executable/non-executable-sgd-spec.json": sgd,
            "data/non-executable/non-executable-sgd-data.json": [
                {"input": "a bus to Fresno, then translate", **calls("Buses.FindBus", "translate_text")}
            ],
        },
    )
    dataset = nestful.build(git_dir)
    _valid(dataset.entries)
    assert dataset.licence == "Apache-2.0"
    assert [e["identifier"].rsplit(":", 1)[1] for e in dataset.entries] == [
        "sky-scrapper-search-airport",
        "translate-text",
        "buses-find-bus",
    ]
    assert dataset.entries[0]["metadata"]["homepage"] == "https://rapidapi.com/x"
    bus = dataset.entries[2]["data"]["tools"][0]["inputSchema"]["properties"]["fare_type"]
    assert bus == {"description": "Fare", "enum": ["Economy"], "default": "Economy"}
    assert [(q["id"], q["kind"], q["category"], len(q["relevant"])) for q in dataset.queries] == [
        ("nf-executable-0", "executable", "single-tool", 1),
        ("nf-glaive-1", "glaive", "single-tool", 1),
        ("nf-sgd-0", "sgd", "multi-tool", 2),
    ]


def test_apibench_makes_one_entry_per_model_with_a_tool_per_call_and_reads_the_instruction_only(tmp_path: Path) -> None:
    def api(call: str, name: str, description: str) -> dict[str, Any]:
        return {"domain": "Text embedding", "framework": "F", "functionality": "Embed", "api_name": name, "api_call": call,
                "api_arguments": ["input_text"], "description": description}  # fmt: skip

    use = "hub.load('https://tfhub.dev/google/universal-sentence-encoder/4')"
    use_layer = "hub.KerasLayer('https://tfhub.dev/google/universal-sentence-encoder/4')"  # the same model, another call
    midas = "torch.hub.load(repo_or_dir='intel-isl/MiDaS', model='DPT_Large', pretrained=True)"
    git_dir = _git_dir(
        tmp_path,
        {
            "LICENSE": APACHE,
            "data/api/huggingface_api.jsonl": [api("AutoModel.from_pretrained('org/model')", "org/model", "A model.")],
            "data/api/tensorflowhub_api.jsonl": [
                api(use, "model_id", "Embeds text."),
                api(use, "universal-sentence-encoder", "Again."),
                api(use_layer, "use", "As a Keras layer."),
            ],
            "data/api/torchhub_api.jsonl": [api(midas, "MiDaS", "Depth from one image.")],
            "data/apibench/huggingface_eval.json": _lines(
                [
                    {
                        "code": "###Instruction: Compare two sentences.\n###Output: <<<api_call>>>: ...",
                        "api_call": "AutoModel.from_pretrained('org/model')",
                    },
                    {"code": "###Instruction: Something else.\n###Output: ...", "api_call": "AutoModel.from_pretrained('absent')"},
                ]
            ),
            "data/apibench/tensorflow_eval.json": _lines(
                [{"code": "### Instruction: Embed reviews.\n###Input: 'great film'\n### Output: ...", "api_call": use_layer}]
            ),
            "data/apibench/torchhub_eval.json": _lines([{"code": "###Instruction: Estimate depth.\n###Output: ...", "api_call": midas}]),
        },
    )
    dataset = apibench.build(git_dir)
    _valid(dataset.entries)
    assert [e["displayName"] for e in dataset.entries] == ["org/model", "google/universal-sentence-encoder/4", "intel-isl/MiDaS DPT_Large"]
    assert dataset.entries[1]["description"] == "Embeds text."  # the first record of a repeated call stands for it
    assert [t["description"] for t in dataset.entries[1]["data"]["tools"]] == ["Embeds text.", "As a Keras layer."]
    assert [q["query"] for q in dataset.queries] == ["Compare two sentences.", "Embed reviews.\nInput: 'great film'", "Estimate depth."]
    assert [q["relevant"] for q in dataset.queries] == [[e["identifier"]] for e in dataset.entries]
