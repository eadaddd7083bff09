import pytest

from layerpick.errors import LayerpickError
from layerpick.metrics import UnknownMetricError
from layerpick.selection.rules import UnknownRuleError, choose_layer, parse_rule

SCORES = {
    "prompt-entropy": [0.9, 0.5, 0.3, 0.31, 0.6],
    "dime": [0.0, 0.2, 0.25, 0.4, 0.1],
    "lidar": [1.0, 2.0, 3.0, None, 2.5],
}


def test_min_and_max_rules_follow_their_direction():
    assert choose_layer(SCORES, parse_rule("min-prompt-entropy")).layer == 2
    assert choose_layer(SCORES, parse_rule("max-prompt-entropy")).layer == 4  # layer 0 excluded
    assert choose_layer(SCORES, parse_rule("max-dime")).layer == 3


def test_layer0_only_when_asked():
    assert choose_layer(SCORES, parse_rule("max-prompt-entropy"), include_layer0=True).layer == 0


def test_undefined_layers_are_not_candidates():
    choice = choose_layer(SCORES, parse_rule("max-lidar"))
    assert choice.layer == 2 and 3 not in choice.candidates


def test_rank_ensemble_averages_ranks():
    rule = parse_rule("rank:min-prompt-entropy,max-dime")
    assert str(rule) == "rank:min-prompt-entropy,max-dime"
    # ranks over layers 1..4: entropy (min) best 2, then 3; dime (max) best 3, then 2 -> tie broken to lower
    assert choose_layer(SCORES, rule).layer == 2


def test_tolerance_prefers_smaller_layer():
    scores = {"dime": [0.0, 0.5, 0.95, 0.99, 1.0]}
    assert choose_layer(scores, parse_rule("max-dime")).layer == 4
    choice = choose_layer(scores, parse_rule("max-dime"), tolerance=0.1)  # normalised: layer 2 is at 0.9 of the range
    assert choice.layer == 2 and choice.best_layer == 4
    assert "within 0.1" in choice.describe()


@pytest.mark.parametrize("text", ["dime", "best-dime", "min-dime,max-lidar", "rank:", "min-"])
def test_bad_rules(text):
    with pytest.raises(UnknownRuleError, match="min-<metric>"):
        parse_rule(text)


def test_unknown_metric_in_rule_says_did_you_mean():
    with pytest.raises(UnknownMetricError, match="did you mean 'dime'"):
        parse_rule("max-dimee")


def test_missing_metric_scores():
    with pytest.raises(LayerpickError, match="not computed: curvature"):
        choose_layer(SCORES, parse_rule("min-curvature"))


def test_bad_tolerance():
    with pytest.raises(LayerpickError, match="tolerance"):
        choose_layer(SCORES, parse_rule("max-dime"), tolerance=1.5)
