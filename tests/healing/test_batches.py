"""The heal's length-grouped batches: every text once per epoch, short texts batched with short ones, the same
batches for the same seed and epoch."""

from __future__ import annotations

import random

import pytest
from datasets import Dataset

from layerpick.healing.batches import LengthGroupedBatches

SHORT, LONG = "a short sentence.", "a passage " * 40


def dataset(count: int = 640, seed: int = 0) -> Dataset:
    rng = random.Random(seed)
    return Dataset.from_dict(
        {"text": [rng.choice((SHORT, LONG)) + str(i) for i in range(count)], "label": [0.0] * count}
    )


def batches(data: Dataset, epoch: int = 0, seed: int = 0, batch: int = 32, drop_last: bool = False) -> list[list[int]]:
    sampler = LengthGroupedBatches(data, batch_size=batch, drop_last=drop_last, seed=seed)
    sampler.set_epoch(epoch)
    return list(sampler)


@pytest.mark.parametrize("count", [640, 650, 31])
def test_every_text_once_per_epoch(count):
    drawn = batches(dataset(count))
    assert sorted(i for batch in drawn for i in batch) == list(range(count))
    assert len(drawn) == len(LengthGroupedBatches(dataset(count), batch_size=32, drop_last=False))


def test_drop_last_drops_the_short_batch():
    drawn = batches(dataset(650), drop_last=True)
    assert all(len(batch) == 32 for batch in drawn) and len(drawn) == 650 // 32
    assert len(LengthGroupedBatches(dataset(650), batch_size=32, drop_last=True)) == len(drawn)


def test_short_texts_are_batched_together():
    data = dataset()
    texts = data["text"]
    mixed = sum(len({texts[i].startswith("a passage") for i in batch}) > 1 for batch in batches(data))
    # drawn at random, nearly all of the 20 batches would mix the two lengths; grouped, at most one per group does
    assert mixed <= 4


def test_same_seed_and_epoch_give_the_same_batches():
    data = dataset()
    assert batches(data, epoch=1) == batches(data, epoch=1)
    assert batches(data, epoch=1) != batches(data, epoch=2)
    assert batches(data, seed=1) != batches(data, seed=2)
