"""What the quicker defaults rest on: the default rule's metric reads the first two augmented views only, so
scoring with 2 views (the default) gives the same InfoNCE curve, and the same pick, as with 4."""

import pytest

from layerpick.core.calibration import load_calibration
from layerpick.core.collect import CollectConfig
from layerpick.metrics import get_metric
from layerpick.selection.rules import DEFAULT_RULE, choose_layer, parse_rule
from layerpick.selection.scoring import DEFAULT_VIEWS, ScoringConfig, score_layers
from layerpick.selection.views import make_views
from tests.testkit.tiny import make_loaded


def test_the_first_two_views_do_not_depend_on_how_many_are_made():
    texts = load_calibration(limit=20).texts
    assert [v[:2] for v in make_views(texts, 4, seed=0)] == make_views(texts, 2, seed=0)


@pytest.mark.slow
def test_infonce_and_the_default_pick_are_the_same_with_two_views_as_with_four():
    loaded = make_loaded("llama")
    texts = load_calibration(limit=24).texts
    scores = {
        views: score_layers(
            loaded, texts, [get_metric("infonce")], CollectConfig(progress=False), ScoringConfig(views=views)
        ).scores
        for views in (DEFAULT_VIEWS, 4)
    }
    assert DEFAULT_VIEWS == 2
    # abs 1e-5: the same two views, but collected in other float32 batches (4 views pad differently)
    assert scores[2]["infonce"] == pytest.approx(scores[4]["infonce"], abs=1e-5)
    rule = parse_rule(DEFAULT_RULE)
    assert choose_layer(scores[2], rule).layer == choose_layer(scores[4], rule).layer
