"""The encoder trained for tool retrieval ships beside the bundled model as an option (`--model-dir tools`):
chosen by name, checked like any model directory, ranked with its own fitted parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from ard_mcp.config import Config, bundled_model_dir
from ard_mcp.index.embedding import ModelSpec
from ard_mcp.registry import Registry
from ard_mcp.search.tuning import DEFAULT_TUNING
from ard_mcp.surfaces.arguments import model_dir
from tests.conftest import INVOICES, PDF, REPO, SAMPLE, TRANSLATE, WEATHER, results


def test_the_trained_model_is_chosen_by_name_and_ranks_with_its_own_parameters(tmp_path: Path) -> None:
    chosen = model_dir("tools")
    assert chosen == bundled_model_dir() / "tools" == REPO / "models" / "tools"
    spec = ModelSpec.load(chosen)
    assert spec.id != ModelSpec.load(bundled_model_dir()).id and spec.dimension == 384
    registry = Registry(Config(data_dir=tmp_path / "data", model_dir=chosen))
    try:
        assert registry.tuning.weights != DEFAULT_TUNING.weights  # fitted to this model's similarities
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


def test_a_directory_or_a_path_is_never_taken_for_a_shipped_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert model_dir("./tools") == Path("tools")  # a path, even to nothing: refused later, not swapped for the shipped model
    (tmp_path / "tools").mkdir()
    assert model_dir("tools") == Path("tools")  # a directory of that name here wins
    assert model_dir("./tools") == Path("tools")
    assert model_dir("no-such-model") == Path("no-such-model")  # refused later, when the registry opens it
    assert model_dir("models/tools") == Path("models/tools")
