"""Trained embedders of every encoder family and a decoder embedder (last-token pooling, an instruction prefix)
go through select, cut, heal and export on tiny random configs: the healed export keeps the teacher's pipeline."""

from __future__ import annotations

import json
import math

import pytest

import layerpick
from layerpick.exporting.metadata import read_metadata
from layerpick.healing import HealConfig, heal_model
from layerpick.selection.config import SelectConfig
from tests.healing.conftest import save_embedder

INSTRUCTION = "Instruct: find passages that answer the question\nQuery: "
EMBEDDERS = {  # family: (pooling, prompts, default prompt)
    "mpnet": ("mean", None, None),
    "roberta": ("cls", None, None),
    "xlm-roberta": ("mean", None, None),
    "qwen3": ("lasttoken", {"query": INSTRUCTION}, "query"),
}


@pytest.fixture(scope="module", params=sorted(EMBEDDERS))
def embedder(request, tmp_path_factory):
    pooling, prompts, default = EMBEDDERS[request.param]
    root = tmp_path_factory.mktemp(f"embedder-{request.param}")
    return request.param, save_embedder(root, request.param, pooling, prompts, default)


def test_select_scores_every_layer_of_the_embedder(embedder):
    family, path = embedder
    report = layerpick.select(str(path), SelectConfig(limit=24), progress=False)
    assert report.num_layers == 4 and 0 <= report.selected_layer <= 4, family


def test_the_healed_cut_keeps_the_teachers_pipeline(embedder, heal_texts, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    # a heal that leaves the cut further from its teacher is refused (test_heal_faults.py); a random tiny cut can
    # start at its teacher and lose to one epoch at 1e-3 (mpnet, from spread blocks: 0.9997 -> 0.975): what is
    # checked here is the pipeline the healed export keeps, so that refusal is off
    monkeypatch.setattr("layerpick.healing.outcome.FALL_TOLERANCE", 2.0)
    family, path = embedder
    config = HealConfig(fit_texts=str(heal_texts), epochs=1, batch_size=16, learning_rate=1e-3, progress=False)
    report = heal_model(str(path), 2, tmp_path / "healed", config)
    assert report.teacher["kind"] == "sentence-transformers" and report.layer == 2
    # a random tiny model's cut can already be near its full depth (mpnet: cosine 0.9998), so training is checked
    # to have run, not to have gained; test_heal.py checks the gain on a cut that starts far off
    assert report.training["steps"] >= 1 and math.isfinite(report.training["final_loss"]), family
    healed = SentenceTransformer(str(tmp_path / "healed"), device="cpu")
    teacher = SentenceTransformer(str(path), device="cpu")
    assert healed[1].pooling_mode == teacher[1].pooling_mode == EMBEDDERS[family][0]
    assert healed.prompts == teacher.prompts and healed.default_prompt_name == teacher.default_prompt_name
    assert json.loads((tmp_path / "healed" / "config.json").read_text())["num_hidden_layers"] == 2
    assert read_metadata(tmp_path / "healed").is_healed


@pytest.mark.slow  # loads all-MiniLM-L6-v2 and scores every layer
def test_select_on_a_trained_embedder_says_what_healing_would_buy():
    report = layerpick.select("minilm-l6", SelectConfig(limit=32), progress=False)
    hints = [note for note in report.notes if "layerpick heal" in note]
    assert report.selected_layer == 6 and len(hints) == 1  # all-MiniLM-L6-v2 is best whole
    assert "layerpick heal minilm-l6 --layer 3" in hints[0] and "--documents-by minilm-l6" in hints[0]


def test_the_heal_hint_is_for_a_trained_embedder_kept_whole(tiny_embedder, tiny_dirs):
    from layerpick.core.cost import layer_costs
    from layerpick.core.models import LoadOptions
    from layerpick.selection.job import heal_hint
    from tests.testkit.tiny import make_model

    costs = layer_costs(make_model("bert"), 48)
    load = LoadOptions()
    hints = heal_hint(str(tiny_embedder), load, 4, 4, costs)
    assert len(hints) == 1 and "--layer 2 " in hints[0] and "--layers all" in hints[0]
    assert heal_hint(str(tiny_embedder), load, 2, 4, costs) == []  # an earlier layer chosen: a plain cut is the pick
    assert heal_hint(str(tiny_dirs("llama")), load, 4, 4, costs) == []  # a raw model: no pipeline to heal towards
