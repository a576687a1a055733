"""The encoder trained for tool retrieval is the default (`models/tools`), the general-purpose model it started
from still selectable by name (`--model-dir minilm`): each checked like any model directory, ranked with its
own fitted parameters; a data directory indexed with the general model keeps it, said once, until `ard-mcp
reindex` rebuilds it with the default."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ard_mcp.config import Config, bundled_model_dir, default_model_dir
from ard_mcp.errors import ModelMismatch
from ard_mcp.index.embedding import ModelSpec
from ard_mcp.registry import Registry
from ard_mcp.search.tuning import DEFAULT_TUNING
from ard_mcp.surfaces.cli.arguments import model_dir
from tests.conftest import INVOICES, PDF, REPO, SAMPLE, TRANSLATE, WEATHER, results
from tests.processes import quiet_env


def test_the_trained_model_is_the_default_and_ranks_with_its_own_parameters(tmp_path: Path) -> None:
    chosen = model_dir("tools")
    assert chosen == default_model_dir() == bundled_model_dir() / "tools" == REPO / "models" / "tools"
    assert model_dir("minilm") == bundled_model_dir() == REPO / "models"
    spec = ModelSpec.load(chosen)
    assert spec.id != ModelSpec.load(bundled_model_dir()).id and spec.dimension == 384
    registry = Registry(Config(data_dir=tmp_path / "data"))
    try:
        assert registry.model_spec.id == spec.id and registry.tuning.weights != DEFAULT_TUNING.weights  # fitted to its similarities
        report = registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
        assert report.added == len(SAMPLE) and not report.rejected
        for task, wanted in (
            ("will it rain in Lisbon tomorrow", WEATHER),
            ("turn this scanned contract into text I can search", PDF),
            ("put this paragraph into German", TRANSLATE),
            ("send the customer a bill for last month's hours", INVOICES),
        ):
            assert results(registry, task)[0].identifier == wanted["identifier"], task
    finally:
        registry.close()


def test_a_model_says_which_sources_trained_it(tmp_path: Path) -> None:
    """`trainedOn` (bench/train_encoder.py writes it): what fit_fusion.py fits the cutoff for; the general model has none."""
    assert ModelSpec.load(default_model_dir()).trained_on >= {"livemcpbench", "metatool", "seal-tools", "toolalpaca", "mcp-bench"}
    assert ModelSpec.load(bundled_model_dir()).trained_on == frozenset()
    copy = tmp_path / "model"
    shutil.copytree(default_model_dir(), copy)
    for bad in ("metatool", [1, 2], {"metatool": True}):
        description = json.loads((copy / "model.json").read_text())
        (copy / "model.json").write_text(json.dumps({**description, "trainedOn": bad}))
        with pytest.raises(ModelMismatch, match=r"model\.json is not a valid model description \(trainedOn must be a list of names\)"):
            ModelSpec.load(copy)


def test_a_directory_or_a_path_is_never_taken_for_a_shipped_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert model_dir("./tools") == Path("tools")  # a path, even to nothing: refused later, not swapped for the shipped model
    (tmp_path / "tools").mkdir()
    assert model_dir("tools") == Path("tools")  # a directory of that name here wins
    assert model_dir("./tools") == Path("tools")
    assert model_dir("no-such-model") == Path("no-such-model")  # refused later, when the registry opens it
    assert model_dir("models/tools") == Path("models/tools")


def test_a_data_directory_indexed_with_the_general_model_keeps_it_until_reindexed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    general = ModelSpec.load(bundled_model_dir()).id
    old = Registry(Config(data, model_dir=model_dir("minilm")))  # as the default before this release
    try:
        old.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
    finally:
        old.close()
    for _ in range(2):
        upgraded = Registry(Config(data))  # the new default named nowhere: the index keeps its model
        try:
            assert upgraded.model_spec.id == general
            assert results(upgraded, "will it rain in Lisbon tomorrow")[0].identifier == WEATHER["identifier"]
        finally:
            upgraded.close()
    said = [r.getMessage() for r in caplog.records if "keeps" in r.getMessage()]
    assert len(said) == 1 and general in said[0] and "ard-mcp reindex" in said[0]  # once, naming what to run
    reindex = [sys.executable, "-m", "ard_mcp", "reindex", "--data-dir", str(data)]
    run = subprocess.run(reindex, env=quiet_env(data), capture_output=True, text=True, timeout=300)  # the same store
    assert run.returncode == 0, run.stderr
    rebuilt = Registry(Config(data))
    try:
        assert rebuilt.model_spec.id == ModelSpec.load(default_model_dir()).id != general
        assert results(rebuilt, "will it rain in Lisbon tomorrow")[0].identifier == WEATHER["identifier"]
    finally:
        rebuilt.close()
