"""validation.json's frontier and picks: pure, from made-up scores and a tiny model's costs; and one run."""

import json

import pytest

from layerpick.core.cost import LayerCosts, layer_costs
from layerpick.frontier.choice import ChoiceOptions
from layerpick.validation import ValidateConfig, run_validation
from layerpick.validation.picks import frontier_section
from tests.testkit.tasks import ALL_KINDS
from tests.testkit.tiny import LAYERS, make_model

COSTS = LayerCosts(params_kept=(10, 20, 30, 40, 50), flops_per_token=(1.0, 25.0, 50.0, 75.0, 100.0), seq_length=128)
MEANS = [0.1, 0.50, 0.62, 0.60, 0.64]  # ideal speed-ups: 100, 4, 2, 1.33, 1


def test_frontier_and_side_by_side_picks():
    section = frontier_section(MEANS, COSTS, range(5), 3, ChoiceOptions())
    assert section["layers"] == [1, 2, 4]  # layer 0 is never exported, so never on the frontier
    picks = section["picks"]
    assert picks["validated"]["layer"] == 4 and picks["unsupervised"]["layer"] == 3
    # default rel 1e-6: the loss is a float64 difference of MEANS; repr of 0.04 only
    assert picks["unsupervised"]["loss"] == pytest.approx(0.04)
    # default rel 1e-6: a ratio of exact flops; repr of 100 / 75 only
    assert picks["unsupervised"]["ideal_speedup"] == pytest.approx(100 / 75)
    assert section["chosen_layer"] == 3 and "unsupervised rule's pick" in section["reason"]


def test_max_loss_chooses_the_shallowest_within_the_loss():
    section = frontier_section(MEANS, COSTS, range(5), 3, ChoiceOptions.parse(None, 0.02))
    # default rel 1e-6: the loss is a float64 difference of MEANS; repr of 0.02 only
    assert section["chosen_layer"] == 2 and section["picks"]["validated"]["loss"] == pytest.approx(0.02)
    assert section["reason"].startswith(
        "layer 2: --max-loss 0.02: the shallowest layer within 0.02 of the best layer, 4 (0.6400)"
    )
    assert "2.00x" in section["reason"]
    section = frontier_section(MEANS, COSTS, range(5), None, ChoiceOptions.parse("validated", None))
    assert section["chosen_layer"] == 4 and "unsupervised" not in section["picks"]


def test_no_cost_or_no_scored_layer_gives_no_section():
    assert frontier_section(MEANS, None, range(5), 3, ChoiceOptions()) is None
    assert frontier_section([0.5, None, None, None, None], COSTS, [0], None, ChoiceOptions()) is None


def test_a_validation_run_writes_the_cost_frontier_and_its_plot(tmp_path, tiny_model):
    select = {
        "format": "layerpick-select/1",
        "model": "tiny",
        "num_layers": LAYERS,
        "selected_layer": 2,
        "rule": "max-up",
        "scores": {"up": [0.0, 1.0, 2.0, 3.0, 4.0]},
        "directions": {"up": "max"},
    }
    (tmp_path / "report.json").write_text(json.dumps(select))
    config = ValidateConfig(
        output_dir=tmp_path / "out",
        store_dir=tmp_path / "store",
        progress=False,
        report=tmp_path / "report.json",
        choice=ChoiceOptions.parse(None, 0.5),
    )
    report = run_validation("tiny", [str(ALL_KINDS["sts"](tmp_path))], config)
    data = report.report.to_json()
    assert data["cost"] == layer_costs(make_model("bert")).to_json()
    section = data["frontier"]
    assert section["chosen_layer"] == 1  # a loss of 0.5 admits every layer: the shallowest is taken
    assert set(section["layers"]) <= set(range(1, LAYERS + 1))
    assert (tmp_path / "out" / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    assert [p.name for p in report.files] == ["validation.json", "validation.png", "frontier.png"]
