"""`layerpick run`: every stage into one folder, one report, finished stages reused, --force, bad output, --static."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from layerpick.benchmark.run import BenchConfig
from layerpick.errors import LayerpickError
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.selection import job as select_run
from layerpick.selection.config import SelectConfig
from layerpick.workflow.report import write_run_report
from layerpick.workflow.run import RunConfig, run_workflow
from tests.testkit.tasks import failing_classification, sts_folder

LAYERPICK = str(Path(sys.executable).parent / "layerpick")
BENCH = BenchConfig(batch_sizes=(1, 4), texts=8, repeats=1, memory=False)


def config_for(task: Path, **changes) -> RunConfig:
    base = dict(tasks=(str(task),), layers="all", select=SelectConfig(limit=24), bench=BENCH)
    return RunConfig(**{**base, **changes})


@pytest.fixture(scope="module")
def finished_run(tiny_dirs, tmp_path_factory):
    """One complete run on a tiny llama with one STS task; tests copy its folder before changing anything."""
    root = tmp_path_factory.mktemp("run")
    task = sts_folder(root)
    result = run_workflow(str(tiny_dirs("llama")), root / "out", config=config_for(task), progress=False)
    files = write_run_report(result)
    return result, files, task


def copy_of(finished_run, tmp_path) -> Path:
    result = finished_run[0]
    shutil.copytree(result.output, tmp_path / "out")
    return tmp_path / "out"


@pytest.mark.slow
def test_every_stage_writes_its_artifacts(finished_run):
    result, files, _ = finished_run
    out = result.output
    for path in (
        "select/report.json",
        "select/metrics.png",
        "validate/validation.json",
        "validate/validation.png",
        "model/layerpick.json",
        "model/model.safetensors",
        "bench.json",
        "run.json",
    ):
        assert (out / path).is_file(), path
    assert [p.name for p in files] == ["report.md", "report.html"]
    assert result.export.layer == result.select.selected_layer
    assert result.export.parity["passed"]
    assert set(result.stages) == {"select", "validate", "export", "bench"}
    assert not any(stage["reused"] for stage in result.stages.values())


def test_report_answers_which_layer_how_good_how_fast(finished_run):
    result, files, _ = finished_run
    text = files[0].read_text()
    k, num = result.select.selected_layer, result.select.num_layers
    assert f"**Which layer:** layer {k} of {num}" in text
    mean = result.validation.mean_by_layer[k]
    assert f"mean main score {mean:.4f} at layer {k}" in text
    ratio = result.bench.rows[1].throughput_ratio
    assert f"batch 4: {ratio:.2f}x the full model's throughput" in text
    for heading in (
        "## Model",
        "## Calibration set",
        "## Every metric by layer",
        "## Rule and chosen layer",
        "## Validation by layer",
        "## Export",
        "## Speed",
        "## Reproduce",
    ):
        assert heading in text
    assert f"layerpick export {result.model} --report {result.output}/select/report.json" in text


def test_html_is_self_contained(finished_run):
    page = finished_run[1][1].read_text()
    assert page.count('src="data:image/png;base64,') == 3  # metrics, validation and frontier plots, embedded
    assert 'src="http' not in page and "<link" not in page
    assert "<b>Which layer:</b>" in page


def test_model_card_gains_validation_and_speed(finished_run):
    result = finished_run[0]
    card = (result.export_dir / "README.md").read_text()
    assert "## Validation" in card and "## Speed" in card
    metadata = json.loads((result.export_dir / "layerpick.json").read_text())
    # default rel 1e-6: the metadata holds the ratio itself, JSON round-trips float64 exactly
    assert metadata["speedup"]["batch 4"]["throughput x"] == pytest.approx(result.bench.rows[1].throughput_ratio)
    assert metadata["validation"]["mean_by_layer"] == result.validation.mean_by_layer


def test_rerun_reuses_every_finished_stage(finished_run, tmp_path, monkeypatch):
    result, _, task = finished_run
    out = copy_of(finished_run, tmp_path)

    def fail(*args, **kwargs):
        raise AssertionError("a finished stage was recomputed")

    for name in ("run_select", "export_model", "run_bench"):
        monkeypatch.setattr(f"layerpick.workflow.run.{name}", fail)
    monkeypatch.setattr("layerpick.validation.run_validation", fail)
    again = run_workflow(result.model, out, config=config_for(task), progress=False)
    assert all(stage["reused"] for stage in again.stages.values())
    assert again.select == result.select


def test_a_changed_option_recomputes_only_what_depends_on_it(finished_run, tmp_path, monkeypatch):
    result, _, task = finished_run
    out = copy_of(finished_run, tmp_path)
    for name in ("run_select", "export_model"):
        monkeypatch.setattr(f"layerpick.workflow.run.{name}", lambda *a, **k: pytest.fail("recomputed"))
    changed = config_for(task, bench=BenchConfig(batch_sizes=(2,), texts=4, repeats=1, memory=False))
    again = run_workflow(result.model, out, config=changed, progress=False)
    assert {name: stage["reused"] for name, stage in again.stages.items()} == {
        "select": True,
        "validate": True,
        "export": True,
        "bench": False,
    }
    assert [row.batch_size for row in again.bench.rows] == [2]


@pytest.mark.slow
def test_force_recomputes_everything(finished_run, tmp_path, monkeypatch):
    result, _, task = finished_run
    out = copy_of(finished_run, tmp_path)
    calls = []
    real = select_run.run_select
    monkeypatch.setattr("layerpick.workflow.run.run_select", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = run_workflow(result.model, out, config=config_for(task, force=True, bench=None), progress=False)
    assert calls == [1]
    assert not any(stage["reused"] for stage in again.stages.values())
    assert not (out / "bench.json").exists()  # --force cleared the earlier bench; this run has none


def test_refuses_a_folder_it_did_not_make(tiny_dirs, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(LayerpickError, match="not empty"):
        run_workflow(str(tiny_dirs("llama")), tmp_path, config=RunConfig(bench=None), progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_cli_end_to_end(tiny_dirs, tmp_path):
    out = tmp_path / "cli-out"
    done = subprocess.run(
        [LAYERPICK, "run", str(tiny_dirs("gpt2")), "--limit", "16", "--no-bench", "--output", str(out), "--json", "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["selected_layer"] == json.loads((out / "select" / "report.json").read_text())["selected_layer"]
    assert summary["parity_passed"] is True
    assert summary["validation"] is None and summary["speedup"] is None
    assert (out / "report.html").is_file()
    assert "Not run: no `--tasks` were given." in (out / "report.md").read_text()


def test_a_bad_task_fails_before_any_stage(tiny_dirs, tmp_path, monkeypatch):
    monkeypatch.setattr("layerpick.workflow.run.run_select", lambda *a, **k: pytest.fail("select ran"))
    with pytest.raises(LayerpickError, match="did you mean"):
        run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=RunConfig(tasks=("STSBenchmrk",), bench=None))
    assert not (tmp_path / "out").exists()


def test_the_reproduce_line_parses_back_to_the_same_stage_keys(finished_run, monkeypatch):
    import shlex

    from typer.testing import CliRunner

    from layerpick.cli.app import app
    from layerpick.workflow.commands import reproduce_commands
    from layerpick.workflow.keys import input_facts, stage_keys

    result = finished_run[0]
    line = reproduce_commands(result)[0]
    seen = {}

    def capture(model, output, load, config, **kwargs):
        seen.update(model=model, load=load, config=config)
        raise SystemExit(0)

    monkeypatch.setattr("layerpick.workflow.run_workflow", capture)
    CliRunner().invoke(app, shlex.split(line)[1:])
    assert "--limit 24" in line and "--no-bench-memory" in line and "--bench-texts 8" in line
    expected = stage_keys(result.model, result.load_options, result.config, input_facts(result.model, result.config))
    again = stage_keys(seen["model"], seen["load"], seen["config"], input_facts(seen["model"], seen["config"]))
    assert again == expected


def test_a_rerun_without_bench_reports_no_speed(finished_run, tmp_path):
    from layerpick.workflow.render import run_summary as summary

    result, _, task = finished_run
    out = copy_of(finished_run, tmp_path)
    again = run_workflow(result.model, out, config=config_for(task, bench=None), progress=False)
    files = write_run_report(again)
    assert again.bench is None and summary(again, files)["speedup"] is None
    assert "Not measured (`--no-bench`)." in files[0].read_text()
    assert all(again.stages[name]["reused"] for name in ("select", "validate", "export"))


@pytest.mark.slow
def test_failed_validation_is_retried_by_the_next_run(tiny_dirs, tmp_path, monkeypatch):
    task, broken = sts_folder(tmp_path), failing_classification(tmp_path, monkeypatch)
    config = config_for(task, tasks=(str(task), str(broken)), layers="last", bench=None)
    first = run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=config, progress=False)
    assert list(first.validation.failures) == ["broken"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["stages"]["validate"]["key"] is None
    again = run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=config, progress=False)
    assert again.stages["select"]["reused"] and not again.stages["validate"]["reused"]


def test_run_with_several_templates_ships_the_chosen_pair(tiny_dirs, tmp_path):
    """select scores every (template, layer) pair, validate evaluates the templates side by side at the
    chosen layers, and the export applies the chosen template by itself."""
    from sentence_transformers import SentenceTransformer

    from layerpick.core.collect import CollectConfig, collect
    from layerpick.core.models import load_model
    from layerpick.core.prompts import prompt_from_json
    from layerpick.workflow.commands import reproduce_commands

    task = sts_folder(tmp_path)
    config = config_for(
        task,
        layers="selected",
        bench=None,
        select=SelectConfig(limit=24, metrics="infonce", prompt="eol,sum", transform="none"),
    )
    result = run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=config, progress=False)
    select, chosen = result.select, result.select.prompt
    assert set(select.by_prompt) == {"eol", "sum"}
    assert list(result.validation.by_prompt)[0] == chosen["name"]  # the chosen template leads
    shipped = result.export.prompt or {"template": None}  # an export of plain text records no template
    assert result.validation.prompt == chosen and shipped["template"] == chosen["template"]
    texts = ["the quick brown fox", "numbers like 42 and more"]
    exported = SentenceTransformer(str(result.export_dir), device="cpu").encode(texts, convert_to_tensor=True)
    config = CollectConfig(
        pooling=select.pooling, progress=False, max_length=result.export.max_seq_length, prompt=prompt_from_json(chosen)
    )
    full = collect(load_model(str(tiny_dirs("llama"))), texts, config).layer(select.selected_layer)
    # 1e-4: float32 export vs the full model's layer (tiny llama, prompted); reductions in another order
    assert (exported - full).abs().max().item() < 1e-4
    text = write_run_report(result)[0].read_text()
    assert "Mean main score by prompt template" in text and "--prompt eol,sum" in "\n".join(reproduce_commands(result))


# `layerpick run --static DIR`: a static export validated beside the layers, in the run's report, its key part of
# the validate stage's (a new table re-runs validate, the same one is reused); without tasks it is refused.


@pytest.fixture(scope="module")
def static_dir(tiny_dirs, tmp_path_factory) -> Path:
    pytest.importorskip("model2vec")
    out = tmp_path_factory.mktemp("static") / "static-1"
    export_model(str(tiny_dirs("llama")), 1, out, ExportConfig(progress=False, format="static", static_dims=8))
    return out


@pytest.mark.slow
def test_a_static_export_is_validated_beside_the_layers_and_reported(finished_run, static_dir, tiny_dirs, tmp_path):
    out = copy_of(finished_run, tmp_path)
    task = finished_run[2]
    model = str(tiny_dirs("llama"))
    result = run_workflow(model, out, config=config_for(task, static_exports=(static_dir,)), progress=False)
    assert result.stages["select"]["reused"]
    assert not result.stages["validate"]["reused"]  # a new table: validate runs again
    [entry] = result.validation.static_exports
    assert (entry["name"], entry["layer"]) == ("static-1", 1)
    assert "| static static-1 |" in write_run_report(result)[0].read_text()
    again = run_workflow(model, out, config=config_for(task, static_exports=(static_dir,)), progress=False)
    assert again.stages["validate"]["reused"]
    assert again.validation.static_exports == result.validation.static_exports


def test_static_without_tasks_is_refused_before_any_stage(static_dir, tiny_dirs, tmp_path):
    config = config_for(Path("unused"), tasks=(), static_exports=(static_dir,))
    with pytest.raises(LayerpickError, match="give --tasks"):
        run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=config, progress=False)
    assert not (tmp_path / "out").exists()


def test_a_folder_that_is_no_static_export_is_refused_before_any_stage(tiny_dirs, tmp_path):
    config = config_for(sts_folder(tmp_path), static_exports=(tmp_path,))
    with pytest.raises(LayerpickError, match="is not a layerpick static export"):
        run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=config, progress=False)
    assert not (tmp_path / "out").exists()


def test_a_model_changed_in_place_is_not_reused(tmp_path):
    """Issue 33, cause 1: the stage keys hold the model's content, not only its path. Weights saved over the
    model's own folder (same path, same size, other values) make select and export run again."""
    from safetensors.torch import load_file

    from tests.testkit.tiny import save_tiny

    def embeddings(path: Path) -> torch.Tensor:
        tensors = load_file(path / "model.safetensors")
        return next(tensor for name, tensor in tensors.items() if name.endswith("embed_tokens.weight"))

    model = save_tiny("llama", tmp_path / "m", seed=0)
    config = RunConfig(select=SelectConfig(limit=16, transform="none"), bench=None)
    first = run_workflow(str(model), tmp_path / "out", config=config, progress=False)
    assert not any(stage["reused"] for stage in first.stages.values())
    old = embeddings(model)
    save_tiny("llama", tmp_path / "m", seed=1)  # other weights in place, same names and sizes
    second = run_workflow(str(model), tmp_path / "out", config=config, progress=False)
    assert not second.stages["select"]["reused"] and not second.stages["export"]["reused"]
    exported = embeddings(tmp_path / "out" / "model")
    assert torch.equal(exported, embeddings(model)) and not torch.equal(exported, old)
    third = run_workflow(str(model), tmp_path / "out", config=config, progress=False)
    assert all(stage["reused"] for stage in third.stages.values())  # unchanged: reused, as before
