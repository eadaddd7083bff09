"""Validation under prompt templates: each template evaluated from its own pass, several side by side, the
report's template by default, separate stores and result files per template."""

import json

import mteb
import pytest
from mteb.models.abs_encoder import AbsEncoder
from typer.testing import CliRunner

from layerpick.cli.app import app
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.prompts import PromptError, parse_prompt
from layerpick.validation import ValidateConfig, resolve_tasks, run_validation
from layerpick.validation.encoder import layer_model_meta
from layerpick.validation.evaluate import main_score, single_threaded_blas
from layerpick.validation.store import StoreKey
from tests.testkit.tasks import ALL_KINDS
from tests.testkit.tiny import LAYERS


class PromptedLayerEncoder(AbsEncoder):
    """The obvious encoder: wrap exactly the texts asked for in the template and return layer k."""

    def __init__(self, loaded, layer, prompt):
        self.loaded, self.layer, self.prompt = loaded, layer, parse_prompt(prompt)
        self.mteb_model_meta = layer_model_meta("plain", layer, "test", embed_dim=None, max_tokens=None, experiment={})

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
        texts = [t for batch in inputs for t in batch["text"]]
        config = CollectConfig(max_length=128, progress=False, prompt=self.prompt)
        return collect(self.loaded, texts, config).pooled[self.layer].numpy()


def validate(tmp_path, folders, **kwargs):
    options = dict(output_dir=tmp_path / "out", store_dir=tmp_path / "store", progress=False)
    return run_validation("tiny", [str(f) for f in folders], ValidateConfig(**{**options, **kwargs}))


def expected(loaded, folder, layer, prompt):
    (spec,) = resolve_tasks([str(folder)])
    with single_threaded_blas():
        result = mteb.evaluate(
            PromptedLayerEncoder(loaded, layer, prompt),
            spec.new_task(),
            cache=None,
            show_progress_bar=False,
            co2_tracker=False,
        )
    return main_score(result.task_results[0])


def test_a_template_is_evaluated_on_the_wrapped_texts(tmp_path, tiny_llama):
    folder = ALL_KINDS["sts"](tmp_path)
    report = validate(tmp_path, [folder], layers=[1, LAYERS], prompt="eol")
    data = report.report.to_json()
    assert data["prompt"]["name"] == "eol" and data["pooling"] == "lasttoken" and "by_prompt" not in data
    for layer in (1, LAYERS):
        # abs 1e-6: both sides rounded to 6 decimals; 1e-6 allows a last-digit flip from float32 round-off
        assert data["tasks"]["sts"]["main_score_by_layer"][layer] == pytest.approx(
            expected(tiny_llama, folder, layer, "eol"), abs=1e-6
        )


def test_several_templates_side_by_side(tmp_path, tiny_llama):
    folder = ALL_KINDS["sts"](tmp_path)
    both = validate(tmp_path, [folder], layers=[1, LAYERS], prompt="none,eol").report.to_json()
    assert list(both["by_prompt"]) == ["none", "eol"]
    assert both["by_prompt"]["none"]["pooling"] == "mean" and both["by_prompt"]["eol"]["pooling"] == "lasttoken"
    assert both["by_prompt"]["none"]["mean_by_layer"] == both["mean_by_layer"]  # the first template leads
    for label in ("none", "eol"):
        alone = validate(
            tmp_path, [folder], layers=[1, LAYERS], prompt=label, output_dir=tmp_path / label
        ).report.to_json()
        assert both["by_prompt"][label]["mean_by_layer"] == alone["mean_by_layer"]
        assert alone["texts_encoded"] == 0  # the template's own store already holds every text
    best = max((entry["mean_by_layer"][k], label, k) for label, entry in both["by_prompt"].items() for k in (1, LAYERS))
    assert both["best_pair"] == {"prompt": best[1], "layer": best[2], "score": best[0]}
    names = sorted(p.name for p in (tmp_path / "out" / "results").iterdir())
    assert names == sorted(
        [f"layerpick__tiny__layer-{k}" for k in (1, LAYERS)]
        + [f"layerpick__tiny__prompt-eol__layer-{k}" for k in (1, LAYERS)]
    )
    assert len([p for p in (tmp_path / "store").iterdir() if p.is_dir()]) == 2


def test_the_reports_template_is_the_default(tmp_path, tiny_llama):
    select = {
        "format": "layerpick-select/1",
        "model": "tiny",
        "num_layers": LAYERS,
        "selected_layer": 2,
        "rule": "min-infonce",
        "pooling": "lasttoken",
        "scores": {"infonce": [None, 1.0, 0.5, 0.7, 0.9]},
        "directions": {"infonce": "min"},
        "prompt": parse_prompt("sum").to_json(),
    }
    (tmp_path / "report.json").write_text(json.dumps(select))
    data = validate(
        tmp_path, [ALL_KINDS["sts"](tmp_path)], layers="selected", report=tmp_path / "report.json"
    ).report.to_json()
    assert data["prompt"]["name"] == "sum" and data["layers_evaluated"] == [2, LAYERS]
    led = validate(
        tmp_path,
        [ALL_KINDS["sts"](tmp_path)],
        layers="selected",
        report=tmp_path / "report.json",
        prompt="none,sum",
        output_dir=tmp_path / "two",
    ).report.to_json()
    assert list(led["by_prompt"]) == ["sum", "none"] and led["prompt"]["name"] == "sum"


def test_plain_store_keys_are_unchanged():
    """Vectors stored before templates existed stay usable: a plain key digests as it always did."""
    import hashlib
    from dataclasses import asdict

    key = StoreKey("m", "/p", "f", None, "exported", "mean", 512, "float32")
    legacy = {k: v for k, v in asdict(key).items() if k != "prompt"}
    digest = hashlib.sha256(json.dumps({**legacy, "format": 1}, sort_keys=True).encode()).hexdigest()[:20]
    assert key.digest() == digest
    assert StoreKey("m", "/p", "f", None, "exported", "mean", 512, "float32", "x {text}").digest() != digest


@pytest.mark.parametrize(("prompt", "message"), [("nope", "unknown prompt"), ("{text}{text}", "exactly one")])
def test_bad_template_is_refused_before_anything_runs(tmp_path, tiny_llama, prompt, message):
    with pytest.raises(PromptError, match=message):
        validate(tmp_path, [ALL_KINDS["sts"](tmp_path)], prompt=prompt)
    assert not (tmp_path / "out").exists()


def test_cli_prompt_table(tmp_path, tiny_llama):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "validate",
            "tiny",
            "--tasks",
            str(ALL_KINDS["sts"](tmp_path)),
            "--layers",
            f"1,{LAYERS}",
            "--output",
            str(out),
            "--store",
            str(tmp_path / "store"),
            "--prompt",
            "none,eol",
            "-q",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())  # rich wraps a title to its table's width
    assert "mean score by layer and prompt template" in words and "◀" in result.output
    bad = CliRunner().invoke(
        app,
        [
            "validate",
            "tiny",
            "--tasks",
            str(ALL_KINDS["sts"](tmp_path)),
            "--output",
            str(tmp_path / "bad"),
            "--prompt",
            "eol",
            "--max-length",
            "4",
            "-q",
        ],
    )
    assert bad.exit_code == 1 and "no room for text" in str(bad.exception)
    assert not (tmp_path / "bad").exists()
