"""The heal's training batches: texts of similar length together, so a batch of short texts is not padded to the
length of a passage.

A heal's texts mix passages of the model's length with sentences a tenth as long (`healing.texts`), and a batch is
padded to its longest text: drawn at random, nearly every batch holds a passage, and a sentence costs as much as a
passage. Here the texts are shuffled, cut into groups of many batches, sorted by length within a group, cut into
batches, and the batches shuffled (transformers' `get_length_grouped_indices`, then a shuffle of whole batches),
seeded by the run's seed and the epoch, so a resumed run draws the same batches. The dataset's text column
(`TEXT_COLUMN`) is named here, below `train`, which builds the dataset and hands the trainer this sampler.
"""

from __future__ import annotations

from typing import Iterator

import torch
from sentence_transformers.base.sampler import DefaultBatchSampler
from transformers.trainer_pt_utils import get_length_grouped_indices

TEXT_COLUMN = "text"  # the column of the training dataset that holds the texts (`train` builds it)


class LengthGroupedBatches(DefaultBatchSampler):
    """sentence-transformers' batch sampler protocol (the trainer's `batch_sampler` argument takes the class), the
    texts' lengths in characters."""

    def __init__(self, dataset, batch_size: int, drop_last: bool, valid_label_columns=None, generator=None, seed=0):
        super().__init__(
            dataset,
            batch_size=batch_size,
            drop_last=drop_last,
            valid_label_columns=valid_label_columns,
            generator=generator,
            seed=seed,
        )
        self.lengths = [len(text) for text in dataset[TEXT_COLUMN]]

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = get_length_grouped_indices(self.lengths, self.batch_size, generator=generator)
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index]

    def __len__(self) -> int:
        count, batch = len(self.lengths), self.batch_size
        return count // batch if self.drop_last else -(-count // batch)
