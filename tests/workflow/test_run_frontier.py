"""`layerpick run` on the quality-speed frontier: exporting a layer chosen from the validation (--choose
validated, --max-loss), the frontier in the report (validated, or of the unsupervised scores without tasks),
the speed budget, and bad input (one line, non-zero exit, nothing written)."""

import subprocess

import pytest

from layerpick.benchmark.run import BenchConfig
from layerpick.frontier.choice import ChoiceOptions
from layerpick.selection.config import SelectConfig
from layerpick.workflow.report import write_run_report
from layerpick.workflow.run import RunConfig, run_workflow
from tests.testkit.cli import LAYERPICK, assert_one_line_error
from tests.testkit.tasks import sts_folder

pytestmark = pytest.mark.slow

BENCH = BenchConfig(batch_sizes=(2,), texts=4, repeats=1, memory=False)


def layerpick(*args):
    return subprocess.run([LAYERPICK, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return sts_folder(tmp_path_factory.mktemp("task"))


def run(tiny_dirs, out, task=None, **changes):
    config = RunConfig(
        **{
            "tasks": (str(task),) if task else (),
            "layers": "all",
            "select": SelectConfig(limit=16),
            "bench": BENCH,
            **changes,
        }
    )
    result = run_workflow(str(tiny_dirs("llama")), out, config=config, progress=False)
    return result, write_run_report(result)[0].read_text()


def test_max_loss_exports_the_shallowest_layer_within_the_loss(tiny_dirs, tmp_path, task):
    result, text = run(tiny_dirs, tmp_path / "out", task, choice=ChoiceOptions.parse(None, "1"))
    means = result.validation.mean_by_layer
    assert result.export.layer == 1  # a loss of 1 admits every layer: the shallowest
    section = result.validation.frontier
    # default rel 1e-6: the same float64 difference of the means; repr only
    assert section["chosen_layer"] == 1 and section["picks"]["validated"]["loss"] == pytest.approx(
        max(means[1:]) - means[1]
    )
    assert "unsupervised" in section["picks"]
    assert "chosen from the validation (`--max-loss 1`" in text
    assert "## Quality against speed" in text and "Exported: layer 1: --max-loss 1: the shallowest layer" in text
    ratio = result.bench.rows[0].throughput_ratio
    assert f"{ratio:.2f}x (batch 2)" in text  # the benched layer's measured speed-up in the frontier table
    assert (result.output / "validate" / "frontier.png").is_file()
    assert "--max-loss 1" in text.split("## Reproduce")[1]


def test_choose_validated_exports_the_best_layer(tiny_dirs, tmp_path, task):
    result, _ = run(tiny_dirs, tmp_path / "out", task, choice=ChoiceOptions.parse("validated", None), bench=None)
    assert result.export.layer == result.validation.frontier["best_layer"]


def test_without_tasks_the_report_shows_the_unsupervised_frontier(tiny_dirs, tmp_path):
    result, text = run(tiny_dirs, tmp_path / "out", bench=None)
    frontier = result.select.frontier
    assert frontier and result.select.selected_layer in frontier  # the rule's best is never beaten on its objective
    assert "the frontier of the unsupervised scores" in text
    assert "| params kept | ideal speed-up |" in text


def test_a_budget_restricts_the_rules_pick(tiny_dirs, tmp_path):
    result, text = run(tiny_dirs, tmp_path / "out", bench=None, select=SelectConfig(limit=16, min_speedup=1.9))
    assert result.select.selected_layer <= 2  # 4 identical blocks: layers 1 and 2 are at least 1.9x faster
    assert result.select.min_speedup == 1.9 and "at least 1.9x" in result.select.choice


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-loss", "0.01"], "give --tasks"),
        (["--choose", "validated"], "give --tasks"),
        (["--max-loss", "-0.01", "--tasks", "x"], "--max-loss must be a non-negative number"),
        (["--max-loss", "abc", "--tasks", "x"], "--max-loss must be a non-negative number"),
        (["--choose", "best"], "--choose must be unsupervised or validated"),
        (["--min-speedup", "0.5"], "--min-speedup must be at least 1"),
        (["--min-speedup", "50"], "no layer meets --min-speedup 50"),
    ],
)
def test_bad_choice_or_budget_is_one_line_and_writes_nothing(tiny_dirs, tmp_path, args, message):
    out = tmp_path / "out"
    done = layerpick("run", str(tiny_dirs("llama")), "--limit", "16", "--no-bench", "--output", str(out), "-q", *args)
    assert_one_line_error(done, message)
    assert not out.exists()


@pytest.mark.parametrize(
    "variable, value, message",
    [("LAYERPICK_CHOOSE", "validated", "give --tasks"), ("LAYERPICK_MAX_LOSS", "0.01", "give --tasks")],
)
def test_choice_variables_reach_run(tiny_dirs, tmp_path, monkeypatch, variable, value, message):
    monkeypatch.setenv(variable, value)
    out = tmp_path / "out"
    assert_one_line_error(layerpick("run", str(tiny_dirs("llama")), "--no-bench", "--output", str(out), "-q"), message)
    assert not out.exists()


def test_select_budget_errors_write_nothing(tiny_dirs, tmp_path):
    out = tmp_path / "select"
    done = layerpick(
        "select", str(tiny_dirs("llama")), "--limit", "16", "--output", str(out), "-q", "--min-speedup", "50"
    )
    assert_one_line_error(done, "no layer meets --min-speedup 50: the fastest candidate, layer 1")
    assert not out.exists()


def test_validate_rejects_a_bad_loss_before_loading(tmp_path, task):
    done = layerpick(
        "validate", "no/such-model", "--tasks", str(task), "--max-loss", "-1", "--output", str(tmp_path / "v")
    )
    assert_one_line_error(done, "--max-loss must be a non-negative number")
    assert not (tmp_path / "v").exists()
