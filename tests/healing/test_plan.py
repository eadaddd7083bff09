"""The heal's plan: the default cuts of a trained embedder, the budget fitted from a speed, the line said before any
training, and the speed probe that leaves the model as it was."""

from __future__ import annotations

import pytest
import torch

from layerpick.errors import LayerpickError
from layerpick.healing.plan import (
    DEFAULT_EPOCHS,
    HealPlan,
    Speed,
    default_cuts,
    estimate_minutes,
    fit_budget,
    make_plan,
    probe,
)
from layerpick.healing.texts import ENOUGH_TEXTS, MIN_TEXTS


@pytest.mark.parametrize(
    "num_layers, cuts", [(2, [1]), (3, [2]), (4, [2, 3]), (6, [3, 5]), (12, [6, 9]), (30, [15, 23])]
)
def test_default_cuts_are_half_and_three_quarters_of_the_depth(num_layers, cuts):
    assert default_cuts(num_layers) == cuts


SPEED = Speed(infer=0.01, train=0.1, device="cpu")  # seconds per text of the whole model


def test_the_estimate_is_the_teacher_pass_plus_the_epochs_of_the_cut():
    # 1,000 texts: 10 s of teacher; 900 train texts x 2 epochs x 0.05 s (half the blocks) = 90 s
    assert estimate_minutes(SPEED, 1000, 2, 0.1, 3, 6) == pytest.approx(100 / 60)


def test_a_large_budget_takes_every_text_for_the_default_epochs():
    assert fit_budget(SPEED, 5000, minutes=600, held_out=0.1, layer=3, num_layers=6) == (5000, DEFAULT_EPOCHS)


def test_a_budget_fits_the_texts_and_keeps_the_estimate_within_it():
    texts, epochs = fit_budget(SPEED, 50_000, minutes=20, held_out=0.1, layer=3, num_layers=6)
    assert epochs == DEFAULT_EPOCHS and ENOUGH_TEXTS <= texts < 50_000
    assert estimate_minutes(SPEED, texts, epochs, 0.1, 3, 6) <= 20
    assert estimate_minutes(SPEED, texts + 50, epochs, 0.1, 3, 6) > 20


def test_a_tight_budget_gives_up_epochs_before_texts():
    texts, epochs = fit_budget(SPEED, 50_000, minutes=4, held_out=0.1, layer=3, num_layers=6)
    assert epochs < DEFAULT_EPOCHS and texts >= min(ENOUGH_TEXTS, texts)
    three = fit_budget(SPEED, 50_000, minutes=4 * 3, held_out=0.1, layer=3, num_layers=6)
    assert three[1] == DEFAULT_EPOCHS


def test_a_budget_too_small_for_a_heal_is_refused_in_one_line():
    with pytest.raises(LayerpickError, match=f"fits only .* texts .* needs {MIN_TEXTS}"):
        fit_budget(SPEED, 50_000, minutes=0.05, held_out=0.1, layer=3, num_layers=6)


def test_the_plan_line_names_texts_epochs_cuts_and_minutes_and_reads_back():
    plan = make_plan(SPEED, [3, 5], 6, 13_602, budget=20, epochs=10, max_texts=None, held_out=0.1, source="SciFact")
    line = plan.line()
    assert f"on {plan.texts:,} of 13,602 texts of SciFact, {plan.epochs} epochs" in line
    assert "K = 3 of 6 (then K = 5" in line and "--heal-minutes 20" in line
    assert f"about {plan.minutes['3']:.0f} min for K = 3 + about {plan.minutes['5']:.0f} min for K = 5" in line
    assert plan.minutes["5"] > plan.minutes["3"]
    assert HealPlan.from_json(plan.to_json()) == plan


def test_without_a_budget_the_plan_keeps_the_given_epochs_and_cap():
    plan = make_plan(SPEED, [2], 4, 900, budget=None, epochs=7, max_texts=500, held_out=0.1, source="x")
    assert (plan.texts, plan.epochs, plan.budget) == (500, 7, None)


def test_the_probe_times_both_passes_and_leaves_the_model_as_it_was(tiny_embedder):
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(tiny_embedder), device="cpu")
    before = {name: value.clone() for name, value in encoder.state_dict().items()}
    texts = [f"text number {i} with a few words" for i in range(40)]
    speed = probe(encoder, texts)
    assert speed.infer > 0 and speed.train > 0 and speed.device == "cpu"
    assert not encoder.training and all(p.grad is None for p in encoder.parameters())
    assert all(torch.equal(value, before[name]) for name, value in encoder.state_dict().items())
