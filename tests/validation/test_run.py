"""Validation runs on a tiny model: single-pass scores equal per-layer encoding, resume, failures, reports."""

import json

import mteb
import numpy as np
import pytest
from mteb.models.abs_encoder import AbsEncoder
from scipy.stats import spearmanr

from layerpick.core.collect import CollectConfig, collect
from layerpick.errors import LayerpickError, LayerRangeError, ReportFormatError
from layerpick.validation import (
    ValidateConfig,
    parse_layers,
    resolve_tasks,
    run_validation,
)
from layerpick.validation.encoder import layer_model_meta
from layerpick.validation.result import ValidationReport
from layerpick.validation.evaluate import main_score, single_threaded_blas
from tests.testkit.tasks import ALL_KINDS, failing_classification
from tests.testkit.tiny import LAYERS

SOME = [0, 2, LAYERS]  # first, middle, last: enough to catch a layer mix-up, cheaper than all five


class OneLayerEncoder(AbsEncoder):
    """The obvious encoder: run the model on exactly the texts asked for and return layer k."""

    def __init__(self, loaded, layer):
        self.loaded, self.layer = loaded, layer
        self.mteb_model_meta = layer_model_meta("plain", layer, "test", embed_dim=None, max_tokens=None, experiment={})

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
        texts = [t for batch in inputs for t in batch["text"]]
        return collect(self.loaded, texts, CollectConfig(max_length=128, progress=False)).pooled[self.layer].numpy()


def validate(tmp_path, folders, **kwargs):
    options = dict(output_dir=tmp_path / "out", store_dir=tmp_path / "store", progress=False)
    return run_validation("tiny", [str(f) for f in folders], ValidateConfig(**{**options, **kwargs}))


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_single_pass_scores_equal_encoding_each_layer_alone(tmp_path, tiny_model, kind):
    folder = ALL_KINDS[kind](tmp_path)
    report = validate(tmp_path, [folder], layers=SOME)
    (name,) = report.report.to_json()["tasks"]
    scores = report.report.to_json()["tasks"][name]["main_score_by_layer"]
    assert len(scores) == LAYERS + 1 and report.ok
    assert [k for k, v in enumerate(scores) if v is not None] == SOME
    (spec,) = resolve_tasks([str(folder)])
    for layer in SOME:
        with single_threaded_blas():
            result = mteb.evaluate(
                OneLayerEncoder(tiny_model, layer),
                spec.new_task(),
                cache=None,
                show_progress_bar=False,
                co2_tracker=False,
            )
        # abs 1e-6: both sides rounded to 6 decimals; 1e-6 allows a last-digit flip from float32 round-off
        assert scores[layer] == pytest.approx(main_score(result.task_results[0]), abs=1e-6), layer


def test_decoder_family_and_mteb_named_folder(tmp_path, tiny_llama):
    folder = ALL_KINDS["sts"](tmp_path, "STSBenchmark")
    report = validate(tmp_path, [folder], layers=[0, LAYERS])
    (spec,) = resolve_tasks([str(folder)])
    result = mteb.evaluate(
        OneLayerEncoder(tiny_llama, LAYERS), spec.new_task(), cache=None, show_progress_bar=False, co2_tracker=False
    )
    # abs 1e-6: both sides rounded to 6 decimals; 1e-6 allows a last-digit flip from float32 round-off
    assert report.report.to_json()["tasks"]["STSBenchmark"]["main_score_by_layer"][LAYERS] == pytest.approx(
        main_score(result.task_results[0]), abs=1e-6
    )


def test_one_forward_pass_per_distinct_text(tmp_path, tiny_model):
    folders = [ALL_KINDS["sts"](tmp_path), ALL_KINDS["pair-classification"](tmp_path)]
    report = validate(tmp_path, folders)
    distinct = set()
    for folder in folders:
        for line in (folder / "test.jsonl").read_text().splitlines():
            row = json.loads(line)
            distinct.update([row["sentence1"], row["sentence2"]])
    assert report.report.to_json()["texts_encoded"] == len(distinct)


@pytest.mark.slow
def test_resume_skips_finished_pairs(tmp_path, tiny_model, monkeypatch):
    folders = [ALL_KINDS["sts"](tmp_path), ALL_KINDS["classification"](tmp_path)]
    calls = []
    real = mteb.evaluate
    monkeypatch.setattr(mteb, "evaluate", lambda *a, **k: calls.append(a[1].metadata.name) or real(*a, **k))
    first = validate(tmp_path, folders, layers=SOME)
    assert len(calls) == 2 * len(SOME)
    calls.clear()
    second = validate(tmp_path, folders, layers=SOME)
    assert calls == [] and second.report.to_json()["texts_encoded"] == 0
    assert second.report.to_json()["tasks"] == {
        name: {**task, "evaluations_run": 0, "evaluations_reused": len(SOME)}
        for name, task in first.report.to_json()["tasks"].items()
    }
    results = tmp_path / "out" / "results"
    next(results.glob("layerpick__tiny__layer-2/*/experiments/*/sts.json")).unlink()
    next(results.glob(f"layerpick__tiny__layer-{LAYERS}/*/experiments/*/cls.json")).write_text('{"truncated')
    validate(tmp_path, folders, layers=SOME)
    assert sorted(calls) == ["cls", "sts"]


def test_changed_settings_are_not_reused(tmp_path, tiny_model, monkeypatch):
    folder = ALL_KINDS["sts"](tmp_path)
    validate(tmp_path, [folder], layers=[1])
    calls = []
    real = mteb.evaluate
    monkeypatch.setattr(mteb, "evaluate", lambda *a, **k: calls.append(1) or real(*a, **k))
    validate(tmp_path, [folder], layers=[1], normalize=True)
    validate(tmp_path, [folder], layers=[1], pooling="cls")
    assert len(calls) == 2


def test_a_failing_task_does_not_stop_the_others(tmp_path, tiny_model, monkeypatch):
    report = validate(tmp_path, [failing_classification(tmp_path, monkeypatch), ALL_KINDS["sts"](tmp_path)])
    assert list(report.failures) == ["broken"]
    assert "class" in report.failures["broken"]
    assert None not in report.report.to_json()["tasks"]["sts"]["main_score_by_layer"]
    assert report.report.to_json()["mean_over"] == ["sts"]
    assert json.loads((tmp_path / "out" / "validation.json").read_text())["failures"] == report.failures


@pytest.mark.slow
def test_report_comparison_and_metric_correlations(tmp_path, tiny_model):
    select = {
        "format": "layerpick-select/1",
        "model": "tiny",
        "num_layers": LAYERS,
        "selected_layer": 2,
        "rule": "max-up",
        "scores": {"up": [0.0, 1.0, 2.0, 3.0, 4.0], "down": [4.0, 3.0, 2.0, 1.0, 0.0], "missing": None},
        "directions": {"up": "max", "down": "min"},
    }
    (tmp_path / "report.json").write_text(json.dumps(select))
    report = validate(
        tmp_path, [ALL_KINDS["sts"](tmp_path), ALL_KINDS["retrieval"](tmp_path)], report=tmp_path / "report.json"
    )
    data = report.report.to_json()
    means = data["mean_by_layer"]
    assert means == pytest.approx(  # default rel 1e-6: the same float64 mean of the same scores; summation order only
        [np.mean([t["main_score_by_layer"][k] for t in data["tasks"].values()]) for k in range(LAYERS + 1)]
    )
    assert data["selected_layer"] == 2 and data["last_layer"] == LAYERS
    assert data["best_layer"] == int(np.argmax(means))
    # default rel 1e-6: the same float64 difference; repr only
    assert data["comparison"]["selected_minus_last"] == pytest.approx(means[2] - means[LAYERS])
    correlations = data["metric_correlations"]
    # default rel 1e-6: SciPy's spearman on the same inputs; round-off only
    assert correlations["up"]["spearman"] == pytest.approx(spearmanr(select["scores"]["up"], means)[0])
    # default rel 1e-6: "down" is "up" reversed, so its ranks and correlation are negated exactly
    assert correlations["down"]["spearman"] == pytest.approx(-correlations["up"]["spearman"])
    assert correlations["missing"]["spearman"] is None
    assert (tmp_path / "out" / "validation.png").read_bytes()[:4] == b"\x89PNG"


def test_selected_layers_need_a_report(tmp_path):
    select = 2  # the select report's layer
    assert parse_layers("selected", LAYERS, select) == [2, LAYERS]
    assert parse_layers("all", 3) == [0, 1, 2, 3]
    assert parse_layers("3,1", 4) == [1, 3]
    assert parse_layers("selected,1", LAYERS, select) == [1, 2, LAYERS]
    assert parse_layers("last, 0", 4) == [0, 4]
    with pytest.raises(LayerpickError, match="needs --report"):
        parse_layers("selected", LAYERS)
    with pytest.raises(LayerRangeError, match="out of range"):
        parse_layers("9", LAYERS)
    with pytest.raises(LayerpickError, match="comma-separated"):
        parse_layers("one", LAYERS)


def test_report_for_another_model_is_refused(tmp_path, tiny_model):
    (tmp_path / "report.json").write_text(
        json.dumps(
            {
                "format": "layerpick-select/1",
                "model": "x",
                "num_layers": 30,
                "selected_layer": 3,
                "rule": "r",
                "scores": {},
            }
        )
    )
    with pytest.raises(LayerpickError, match="30 layers"):
        validate(tmp_path, [ALL_KINDS["sts"](tmp_path)], report=tmp_path / "report.json")


def test_normalize_follows_the_models_own_pipeline(tmp_path, tiny_model):
    from layerpick.validation.encoder import normalizes

    modules = [
        {"idx": 0, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "type": "sentence_transformers.models.Pooling"},
    ]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    assert not normalizes(str(tmp_path)) and not normalizes("")
    (tmp_path / "modules.json").write_text(json.dumps(modules + [{"type": "sentence_transformers.models.Normalize"}]))
    assert normalizes(str(tmp_path))
    folder = ALL_KINDS["sts"](tmp_path)
    raw = validate(tmp_path, [folder], layers=[1])
    unit = validate(tmp_path, [folder], layers=[1], normalize=True)
    assert (raw.report.to_json()["normalize"], unit.report.to_json()["normalize"]) == (False, True)
    # abs 1e-6: main scores are rounded to 6 decimals; float32 unit vectors give the same cosines up to round-off
    assert unit.report.to_json()["tasks"]["sts"]["main_score_by_layer"][1] == pytest.approx(
        raw.report.to_json()["tasks"]["sts"]["main_score_by_layer"][1], abs=1e-6
    )  # cosine does not see the norm


def test_layer_words_are_checked_without_a_model():
    from layerpick.validation import check_layer_words

    check_layer_words("all")
    check_layer_words("selected, 3,last")
    with pytest.raises(LayerpickError, match="comma-separated"):
        check_layer_words("3,lst")


def test_validation_report_round_trips_through_its_file(tmp_path, tiny_model):
    report = validate(tmp_path, [ALL_KINDS["sts"](tmp_path)], layers=SOME)
    on_disk = json.loads((tmp_path / "out" / "validation.json").read_text())
    again = ValidationReport.read(tmp_path / "out" / "validation.json")
    assert on_disk["format"] == "layerpick-validation/1"
    assert again == report.report and again.to_json() == on_disk and again.ok == report.ok
    with pytest.raises(ReportFormatError, match="missing mean_by_layer"):
        ValidationReport.from_json({k: v for k, v in on_disk.items() if k != "mean_by_layer"})
    with pytest.raises(ReportFormatError, match="is a layerpick-select file, not a layerpick validation.json"):
        ValidationReport.from_json({**on_disk, "format": "layerpick-select/1"})
    with pytest.raises(ReportFormatError, match="of format version 2; this layerpick reads version 1"):
        ValidationReport.from_json({**on_disk, "format": "layerpick-validation/2"})
