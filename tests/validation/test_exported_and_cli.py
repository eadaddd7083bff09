"""An exported sentence-transformers directory validates through the same path; the CLI parses, runs, renders."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerpick.cli.app import app
from layerpick.cli.errors import exit_code_for
from layerpick.validation import TaskNotFoundError, ValidateConfig, run_validation
from tests.testkit.metadata import export_metadata_json
from tests.testkit.tasks import ALL_KINDS
from tests.testkit.tiny import LAYERS


def save_tiny(loaded, folder: Path) -> Path:
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def export_tiny(loaded, tmp_path: Path) -> Path:
    """A sentence-transformers folder of the whole tiny model (= its last layer), with layerpick.json."""
    from sentence_transformers import SentenceTransformer, models

    transformer = models.Transformer(str(save_tiny(loaded, tmp_path / "hf")), max_seq_length=128)
    pooling = models.Pooling(transformer.get_embedding_dimension(), "mean")
    exported = tmp_path / "exported"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(exported))
    (exported / "layerpick.json").write_text(json.dumps(export_metadata_json(layer=LAYERS, num_layers=LAYERS)))
    return exported


def test_exported_directory_scores_like_its_layer(tmp_path, tiny_model):
    folders = [str(ALL_KINDS["sts"](tmp_path)), str(ALL_KINDS["retrieval"](tmp_path))]
    common = dict(store_dir=tmp_path / "store", progress=False)
    layer = run_validation("tiny", folders, ValidateConfig(layers=[LAYERS], output_dir=tmp_path / "layer", **common))
    exported = run_validation(
        None,
        folders,
        ValidateConfig(exported_dir=export_tiny(tiny_model, tmp_path), output_dir=tmp_path / "exp", **common),
    )
    assert exported.report.to_json()["layers_evaluated"] == [LAYERS] and exported.report.to_json()["exported_dir"]
    for name in ("sts", "retrieval"):
        # abs 1e-5: scores rounded to 6 decimals; the float32 export vs layer K moves them by less
        assert exported.report.to_json()["tasks"][name]["main_score_by_layer"][LAYERS] == pytest.approx(
            layer.report.to_json()["tasks"][name]["main_score_by_layer"][LAYERS], abs=1e-5
        )
    assert list((tmp_path / "exp" / "results").iterdir())[0].name == f"layerpick__exported__exported-layer-{LAYERS}"


def test_cli_table_and_files(tmp_path, tiny_model):
    folders = f"{ALL_KINDS['sts'](tmp_path)},{ALL_KINDS['pair-classification'](tmp_path)}"
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "validate",
            "tiny",
            "--tasks",
            folders,
            "--layers",
            "0,4",
            "--output",
            str(out),
            "--store",
            str(tmp_path / "store"),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "main score by layer" in result.output and "best" in result.output and "last" in result.output
    assert (out / "validation.json").exists() and (out / "validation.png").exists()
    result = CliRunner().invoke(
        app,
        [
            "validate",
            "tiny",
            "--tasks",
            folders,
            "--layers",
            "0,4",
            "--output",
            str(out),
            "--store",
            str(tmp_path / "store"),
            "-q",
            "--json",
        ],
    )
    assert json.loads(result.output)["tasks"]["sts"]["evaluations_reused"] == 2


@pytest.mark.slow
def test_failing_task_exits_non_zero_through_the_real_entry_point(tmp_path, tiny_model, monkeypatch):
    """The entry point's `run` (in this process), with mteb's evaluation of the task named 'broken' failing as an
    unexpected error inside mteb would (data that cannot be scored is refused earlier, by the folder checks)."""
    from layerpick.validation import evaluate as validation_evaluate
    from tests.testkit.cli import invoke
    from tests.testkit.tasks import classification_folder

    evaluate = validation_evaluate._evaluate

    def failing(setup, layer, task, cache):
        if task.metadata.name == "broken":
            raise ValueError("This solver needs samples of at least 2 classes in the data")
        return evaluate(setup, layer, task, cache)

    monkeypatch.setattr(validation_evaluate, "_evaluate", failing)
    classification_folder(tmp_path, "broken")
    model = save_tiny(tiny_model, tmp_path / "model")
    out = tmp_path / "out"
    tasks = f"{tmp_path / 'broken'},{ALL_KINDS['sts'](tmp_path)}"
    run = invoke(
        "validate", model, "--tasks", tasks, "--layers", "4", "--output", out, "--store", tmp_path / "store", "-q"
    )
    assert run.returncode == 1, run.stderr
    assert "failed broken" in run.stderr and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("layerpick: error: 1 task(s) failed (broken)")
    data = json.loads((out / "validation.json").read_text())
    assert list(data["failures"]) == ["broken"] and data["tasks"]["sts"]["main_score_by_layer"][4] is not None


@pytest.mark.slow
def test_unknown_task_fails_before_any_model_is_loaded(monkeypatch):
    monkeypatch.setattr("layerpick.validation.sources.load_model", lambda *a: pytest.fail("model loaded"))
    result = CliRunner().invoke(app, ["validate", "minilm-l6", "--tasks", "STSBenchmrk", "-q"])
    assert result.exit_code == 1 and isinstance(result.exception, TaskNotFoundError)
    assert exit_code_for(result.exception) == 1
    assert str(result.exception).startswith("unknown task 'STSBenchmrk'") and "did you mean STSBenchmark" in str(
        result.exception
    )


def test_no_tasks_is_a_usage_error():
    result = CliRunner().invoke(app, ["validate", "tiny"])
    assert result.exit_code == 2
