"""The quality-speed frontier, choosing by validated scores, and the unsupervised speed budget."""

from __future__ import annotations

import pytest

from layerpick.errors import LayerpickError
from layerpick.frontier.choice import (
    ChoiceError,
    ChoiceOptions,
    choose_validated,
    frontier,
)
from layerpick.selection.rules import choose_layer, parse_rule

#            layer: 0     1     2     3     4     5     6
MEANS = [None, 0.50, 0.60, 0.58, 0.70, 0.69, 0.65]
SPEEDUP = [1e4, 6.0, 3.0, 2.0, 1.5, 1.2, 1.0]


def test_frontier_keeps_the_layers_nothing_beats_on_both():
    # 3 loses to 2 (worse and slower), 5 and 6 lose to 4; 1, 2, 4 trade quality for speed
    assert frontier(MEANS, SPEEDUP, range(7)) == [1, 2, 4]


def test_frontier_of_evaluated_layers_only():
    assert frontier(MEANS, SPEEDUP, [3, 5, 6]) == [3, 5]


def test_equal_layers_do_not_knock_each_other_out():
    assert frontier([0.5, 0.5], [2.0, 2.0], [0, 1]) == [0, 1]


def test_choose_validated_takes_the_best_mean():
    choice = choose_validated(MEANS, range(7))
    assert (choice.layer, choice.best_layer, choice.loss) == (4, 4, 0.0)


def test_max_loss_takes_the_shallowest_layer_within_the_loss():
    assert choose_validated(MEANS, range(7), max_loss=0.01).layer == 4
    choice = choose_validated(MEANS, range(7), max_loss=0.1)
    # default rel 1e-6: the loss is a float64 difference of the means; repr of 0.1 only
    assert choice.layer == 2 and choice.loss == pytest.approx(0.1)
    assert choose_validated(MEANS, range(7), max_loss=0.2).layer == 1
    assert choose_validated(MEANS, [5, 6], max_loss=0.05).layer == 5


def test_layer0_is_never_chosen():
    assert choose_validated([0.9, 0.5, 0.4], range(3)).layer == 1
    with pytest.raises(ChoiceError):
        choose_validated([0.9, None, None], range(3))


@pytest.mark.parametrize(
    "choose, loss, message",
    [
        ("best", None, "--choose must be"),
        (None, -0.01, "non-negative"),
        (None, float("nan"), "non-negative"),
        (None, "abc", "non-negative"),
        (None, "-0.5", "non-negative"),
        ("unsupervised", 0.01, "cannot be combined"),
    ],
)
def test_bad_choice_options_are_one_line_errors(choose, loss, message):
    with pytest.raises(ChoiceError, match=message):
        ChoiceOptions.parse(choose, loss)


def test_max_loss_alone_means_validated():
    assert ChoiceOptions.parse(None, 0.02) == ChoiceOptions("validated", 0.02)
    assert ChoiceOptions.parse(None, "0.01") == ChoiceOptions("validated", 0.01)
    assert ChoiceOptions.parse(None, None) == ChoiceOptions("unsupervised", None)
    assert ChoiceOptions.parse("validated", None).flags() == ["--choose", "validated"]


SCORES = {"infonce": [5.0, 4.0, 3.0, 2.5, 2.0, 2.1, 2.2]}


def test_budget_restricts_the_candidates():
    rule = parse_rule("min-infonce")
    assert choose_layer(SCORES, rule).layer == 4
    choice = choose_layer(SCORES, rule, speedup=SPEEDUP, min_speedup=2.0)
    assert choice.layer == 3 and choice.candidates == (1, 2, 3)
    assert "at least 2x" in choice.describe()


def test_budget_then_tolerance_rescales_over_the_budget():
    """Within the budget (layers 1-3) the objective runs from layer 1 (0) to layer 3 (1); layer 2 sits at
    0.67, so a tolerance of 0.4 takes it and one of 0.3 keeps layer 3."""
    rule = parse_rule("min-infonce")
    assert choose_layer(SCORES, rule, speedup=SPEEDUP, min_speedup=2.0, tolerance=0.4).layer == 2
    assert choose_layer(SCORES, rule, speedup=SPEEDUP, min_speedup=2.0, tolerance=0.3).layer == 3


def test_a_budget_no_layer_meets_is_an_error():
    with pytest.raises(LayerpickError, match="no layer meets --min-speedup 10: the fastest candidate, layer 1"):
        choose_layer(SCORES, parse_rule("min-infonce"), speedup=SPEEDUP, min_speedup=10)


@pytest.mark.parametrize("budget", [0.5, 0.0, -1.0, float("inf"), float("nan")])
def test_a_budget_below_one_is_an_error(budget):
    with pytest.raises(LayerpickError, match="--min-speedup must be at least 1"):
        choose_layer(SCORES, parse_rule("min-infonce"), speedup=SPEEDUP, min_speedup=budget)


def test_a_budget_compares_speedups_as_reports_show_them():
    """Layer 2 of 6 is a hair under 3x (the embeddings cost a little); shown as 3.00x, it meets a budget of 3."""
    speedup = [1e4, 5.9998, 2.99992, 1.99996, 1.5, 1.2, 1.0]
    scores = {"infonce": [5.0, 4.0, 3.0, 2.5, 2.0, 2.1, 2.2]}
    assert choose_layer(scores, parse_rule("min-infonce"), speedup=speedup, min_speedup=3).layer == 2
