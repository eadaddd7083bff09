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


def test_choose_pair_compares_templates_and_layers():
    from layerpick.selection.prompt_choice import choose_pair
    from layerpick.selection.rules import choose_layer, parse_rule

    scores = {"none": {"infonce": [0.1, 2.0, 1.5, 1.8]}, "eol": {"infonce": [0.0, 1.9, 1.2, 0.9]}}
    rule = parse_rule("min-infonce")
    choice = choose_pair(scores, rule)
    assert (choice.prompt, choice.layer) == ("eol", 3) and (choice.best_prompt, choice.best_layer) == ("eol", 3)
    assert choice.objective["eol"][3] == 1.0 and choice.objective["none"][0] is None  # layer 0 not a candidate
    assert choose_pair(scores, rule, include_layer0=True).layer == 0
    # objective (2.0 - value) / 1.1: eol/2 0.73 is within 0.4 of eol/3 (1.0), none/2 0.45 is not
    tolerant = choose_pair(scores, rule, tolerance=0.4)
    assert (tolerant.prompt, tolerant.layer) == ("eol", 2) and "within 0.4" in tolerant.describe()
    # one template alone: the same layer as choose_layer
    alone = choose_pair({"none": scores["none"]}, rule)
    assert alone.layer == choose_layer(scores["none"], rule).layer == 2
    ranked = choose_pair(
        {"a": {"infonce": [0, 3, 2], "lidar": [0, 1, 5]}, "b": {"infonce": [0, 1, 2], "lidar": [0, 4, 2]}},
        parse_rule("rank:min-infonce,max-lidar"),
    )
    assert (ranked.prompt, ranked.layer) == ("b", 1)
