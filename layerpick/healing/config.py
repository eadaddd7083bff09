"""The settings of one heal (`HealConfig`): which texts, how long and how fast the cut is trained, what is held
back to measure its fidelity; the range of each number (`HealConfig.check_numbers`), checked before any work."""

from __future__ import annotations

import math
from dataclasses import dataclass

from layerpick.errors import LayerpickError

LOSSES = ("cosine+mse", "mse", "cosine")
MAX_LEARNING_RATE = 1.0  # AdamW moves each weight by about the rate per step: above 1, any model diverges
MAX_SEED = 2**32 - 1  # numpy's seeds (the trainer seeds numpy, Python and torch with it)


class HealError(LayerpickError):
    """A heal request that cannot be carried out."""


@dataclass(frozen=True)
class HealConfig:
    """`fit_texts` None takes the embedded calibration set; otherwise a source or a tuple of them, each a text file,
    a JSONL file (`text` field) or a task folder (a BEIR folder's corpus.jsonl is split into passages of the model's
    length, joined by as many of its sentences), their texts pooled (a corpus and a log of the queries it serves,
    say). `held_out` is the share of the texts kept back to measure fidelity (at least `heal.texts.MIN_HELD_OUT`
    texts); `max_texts` caps the texts used (a seeded sample). `loss`: `cosine+mse` (the two summed), `mse`
    (sentence-transformers' MSELoss) or `cosine`. `blocks`: which of the teacher's blocks the K places start from
    (`spread`, `first`, or a list such as `1,3,6`). `layers` ("2,3,4" or "all") heals each of those cuts instead of
    `layer` and keeps the shallowest whose held-out cosine to the teacher is at least 1 - `max_loss`
    (`healing.sweep`)."""

    layer: int | None = None  # what `layerpick.heal` cuts after; the model must have more layers
    blocks: str = "spread"  # the teacher's blocks the cut starts from: spread, first or a list (`healing.blocks`)
    fit_texts: str | tuple[str, ...] | None = None  # `healing.texts.sources` reads it as a tuple
    field: str | None = None  # the text's field in JSONL fit texts (None: `text`)
    pooling: str | None = None  # how the cut (and a raw model's teacher at layer L) pools; None: as export does
    # The measured heals' schedule (benchmarks/results/heal.md: minilm-l6 at K = 3 from the first blocks kept 90%
    # of its SciFact nDCG@10 after 10 epochs and 86% after 5; from spread blocks, 93% after 2).
    epochs: int = 10
    learning_rate: float = 2e-4
    batch_size: int = 64
    seed: int = 0
    held_out: float = 0.1
    max_texts: int | None = None
    loss: str = "cosine+mse"
    layers: str | None = None  # several K healed on the same texts, the shallowest clearing the line kept (`sweep`)
    max_loss: float | None = None  # that line: held-out cosine >= 1 - max_loss (None: sweep.DEFAULT_MAX_LOSS)
    # A checkpoint also within an epoch after this many minutes of training: an mpnet epoch over 8,000 passages and
    # sentences takes about 90 minutes on a 2-core CPU (benchmarks/results/heal.md); writing a checkpoint, seconds.
    checkpoint_minutes: float = 30.0
    format: str = "sentence-transformers"  # or "onnx": the healed export gains its ONNX graph (`exporting.onnx.added`)
    quantize: str | None = None  # "int8" (with format "onnx"): the int8 graph too, where it passes its check
    overwrite: bool = False
    progress: bool = True

    def check_numbers(self, prefix: str = "") -> None:
        """Every number's range, before any work (`prefix` names the options as the command has them, `heal-`)."""

        def name(option: str) -> str:
            return f"--{prefix}{option}"

        for option, value in (("epochs", self.epochs), ("batch-size", self.batch_size)):
            if value < 1:
                raise HealError(f"{name(option)} must be at least 1 (got {value})")
        if not (math.isfinite(self.learning_rate) and 0 < self.learning_rate <= MAX_LEARNING_RATE):
            raise HealError(
                f"{name('learning-rate')} must be above 0 and at most {MAX_LEARNING_RATE:g} (AdamW's step; the "
                f"default is {HealConfig.learning_rate:g}), not {self.learning_rate:g}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise HealError(f"{name('seed')} must be between 0 and {MAX_SEED} (got {self.seed})")
        if not 0 < self.held_out < 1:  # NaN too
            raise HealError(f"{name('held-out')} must be between 0 and 1 (got {self.held_out:g})")
        if self.max_texts is not None and self.max_texts < 1:
            raise HealError(f"{name('max-texts')} must be at least 1 (got {self.max_texts})")
        if not (math.isfinite(self.checkpoint_minutes) and self.checkpoint_minutes >= 0):
            raise HealError(f"{name('checkpoint-minutes')} must be 0 or more, not {self.checkpoint_minutes:g}")
