"""Adding a metric is one registry entry: a toy metric defined here is scored, reported and usable in a rule."""

import json

import pytest
import torch

from layerpick.metrics import MetricSpec, get_metric, register_metric, unregister_metric
from layerpick.selection.config import SelectConfig
from layerpick.selection.job import run_select
from layerpick.selection.report import to_markdown, write_report
from tests.testkit.calibration import QUIET, calibration_file


def mean_norm(states: torch.Tensor, settings) -> float:
    """The mean L2 norm of the pooled vectors of one layer."""
    return float(states.norm(dim=-1).mean())


@pytest.fixture
def toy_metric():
    spec = register_metric(
        MetricSpec("mean-norm", "Mean L2 norm of the pooled vectors.", frozenset({"pooled"}), "max", compute=mean_norm)
    )
    yield spec
    unregister_metric(spec.name)


def test_a_registered_metric_is_scored_reported_and_chosen_by_a_rule(toy_metric, tiny_dirs, tmp_path):
    config = SelectConfig(
        calibration=calibration_file(tmp_path), metrics="mean-norm,dataset-entropy", rule="max-mean-norm", collect=QUIET
    )
    report = run_select(str(tiny_dirs("llama")), config=config)
    values = report.scores["mean-norm"]
    assert len(values) == report.num_layers + 1 and all(v > 0 for v in values)
    candidates = range(1, report.num_layers + 1)  # layer 0 is a candidate only when asked
    assert report.selected_layer == max(candidates, key=lambda k: values[k])
    assert report.directions["mean-norm"] == "max" and report.rule == "max-mean-norm"
    assert "mean-norm ↑" in to_markdown(report)
    write_report(report, tmp_path / "out")
    # default rel 1e-6: JSON round-trips float64 exactly; approx absorbs nothing more than repr
    assert json.loads((tmp_path / "out" / "report.json").read_text())["scores"]["mean-norm"] == pytest.approx(values)


def test_a_metric_without_a_function_or_with_two_inputs_is_refused():
    with pytest.raises(ValueError, match="compute function"):
        MetricSpec("x", "d", frozenset({"pooled"}), "max")
    with pytest.raises(ValueError, match="one of"):
        MetricSpec("x", "d", frozenset({"pooled", "views"}), "max", compute=mean_norm)


def test_unregistered_metric_is_unknown_again(toy_metric):
    unregister_metric("mean-norm")
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("mean-norm")
