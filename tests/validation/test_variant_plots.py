"""The plots with several (template, transform) variants: every variant drawn, the frontier over every pair."""

from __future__ import annotations

from layerpick.frontier.plot import draw_pair_frontier, pyplot
from layerpick.validation.plot import draw_scores, plot_frontier_png
from layerpick.validation.picks import pair_frontier_section
from layerpick.frontier.choice import ChoiceOptions
from layerpick.core.cost import LayerCosts

SPEEDUP = [100.0, 4.0, 2.0, 1.0]
TABLE = {"none": [None, 0.40, 0.55, 0.50], "none+whiten-8": [None, 0.60, 0.52, 0.45]}


def _axis():
    figure, axis = pyplot().subplots()
    return figure, axis


def test_the_pair_frontier_joins_the_best_pairs_of_every_variant_and_marks_the_chosen_one():
    figure, axis = _axis()
    on_frontier = [("none+whiten-8", 1)]
    draw_pair_frontier(axis, TABLE, SPEEDUP, [1, 2, 3], on_frontier, {"best": ("none+whiten-8", 1)}, "score")
    labels = axis.get_legend_handles_labels()[1]
    assert labels[:2] == ["none", "none+whiten-8"]
    assert "frontier (every pair)" in labels and "best (none+whiten-8, layer 1)" in labels
    frontier_line = [line for line in axis.get_lines() if line.get_label() == "frontier (every pair)"][0]
    assert list(frontier_line.get_xdata()) == [4.0] and list(frontier_line.get_ydata()) == [0.60]
    points = {collection.get_label(): collection.get_offsets().tolist() for collection in axis.collections}
    assert points["none"] == [[4.0, 0.40], [2.0, 0.55], [1.0, 0.50]]
    pyplot().close(figure)


def test_the_validation_plot_draws_every_variants_mean():
    data = {
        "tasks": {"STS": {"main_score_by_layer": TABLE["none"]}},
        "mean_by_layer": TABLE["none"],
        "by_prompt": {label: {"mean_by_layer": means} for label, means in TABLE.items()},
    }
    figure, axis = _axis()
    draw_scores(axis, data, 3)
    lines = {line.get_label(): list(line.get_ydata()) for line in axis.get_lines()}
    assert lines == {
        "STS (none)": [0.40, 0.55, 0.50],
        "mean: none": [0.40, 0.55, 0.50],
        "mean: none+whiten-8": [0.60, 0.52, 0.45],
    }
    pyplot().close(figure)
    figure, axis = _axis()
    draw_scores(axis, {**data, "by_prompt": {}}, 3)
    assert [line.get_label() for line in axis.get_lines()] == ["STS", "mean"]
    pyplot().close(figure)


def test_frontier_png_with_several_variants_plots_every_pair(tmp_path, monkeypatch):
    import layerpick.validation.plot as plot

    costs = LayerCosts(params_kept=(1, 25, 50, 100), flops_per_token=tuple(100.0 / s for s in SPEEDUP), seq_length=8)
    assert list(costs.ideal_speedup) == SPEEDUP
    options = ChoiceOptions(choose="validated")
    section = pair_frontier_section({k: {"mean_by_layer": v} for k, v in TABLE.items()}, costs, [1, 2, 3], options)
    assert [(p["variant"], p["layer"]) for p in section["pairs"]] == [("none+whiten-8", 1)]
    drawn = {}
    monkeypatch.setattr(plot, "draw_pair_frontier", lambda axis, table, *rest: drawn.update(table=table, rest=rest))
    data = {
        "model": "m",
        "by_prompt": {k: {"mean_by_layer": v} for k, v in TABLE.items()},
        "pair_frontier": section,
        "layers_evaluated": [0, 1, 2, 3],
        "cost": {"ideal_speedup": SPEEDUP},
        "frontier": {},
    }
    path = plot_frontier_png(data, tmp_path / "frontier.png")
    assert path.read_bytes()[:4] == b"\x89PNG" and drawn["table"] == TABLE
    speedup, layers, on_frontier, marks = drawn["rest"][:4]
    assert layers == [1, 2, 3] and on_frontier == [("none+whiten-8", 1)]
    assert marks == {"best": ("none+whiten-8", 1), "validated pick": ("none+whiten-8", 1)}
