"""The settings of one heal (`HealConfig`): which texts, how long and how fast the cut is trained, what is held
back to measure its fidelity."""

from __future__ import annotations

from dataclasses import dataclass

LOSSES = ("cosine+mse", "mse", "cosine")


@dataclass(frozen=True)
class HealConfig:
    """`fit_texts` None takes the embedded calibration set; a text file, a JSONL file (`text` field) or a task
    folder otherwise (a BEIR folder's corpus.jsonl is split into passages of the model's length). `held_out` is the
    share of the texts kept back to measure fidelity (at least `heal.texts.MIN_HELD_OUT` texts); `max_texts`
    caps the texts used (a seeded sample). `loss`: `cosine+mse` (the two summed), `mse` (sentence-transformers'
    MSELoss) or `cosine`."""

    layer: int | None = None  # what `layerpick.heal` cuts after; the model must have more layers
    fit_texts: str | None = None
    field: str | None = None  # the text's field in JSONL fit texts (None: `text`)
    pooling: str | None = None  # how the cut (and a raw model's teacher at layer L) pools; None: as export does
    epochs: int = 2
    learning_rate: float = 1e-4
    batch_size: int = 32
    seed: int = 0
    held_out: float = 0.1
    max_texts: int | None = None
    loss: str = "cosine+mse"
    overwrite: bool = False
    progress: bool = True
