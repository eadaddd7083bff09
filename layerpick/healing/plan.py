"""How much a heal will cost here, before it starts: the default cuts of a trained embedder, a speed probe on the
heal's own texts, the texts and epochs fitted to a time budget, and the one line that says so (`HealPlan`).

The probe times the full model (the teacher) on a seeded sample of the texts the heal will read, in this process
and on this device: an inference pass (the teacher's vectors) and a training step (forward, backward) of the whole
pipeline. A cut keeping K of L blocks trains at about K/L of the whole model's step (the blocks dominate; the
embeddings and pooling are small). The estimate is the teacher's pass over every text plus the training epochs;
`benchmarks/results/heal.md` sets it beside measured heals.
"""

from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from layerpick._util.documents import Document
from layerpick.errors import LayerpickError
from layerpick.healing.texts import ENOUGH_TEXTS, MIN_TEXTS

# A trained embedder's cuts healed by default, as a share of its depth, shallowest first (the sweep keeps the first
# whose held-out cosine clears the line). Measured (benchmarks/results/heal.md): minilm-l6 at 3 of 6 kept 97% of
# its SciFact nDCG@10 healed on its corpus, all-mpnet-base-v2 at 6 of 12 94-98% and at 8 of 12 98.5%; at a
# quarter of the depth both kept under 90%. Three quarters is the fallback when half misses the line.
DEFAULT_DEPTHS = (0.5, 0.75)
# Passes over the texts: minilm-l6 at 3 of 6 healed 3 epochs on 4,000 of a corpus's passages kept 97% of its
# nDCG@10 on a task never seen; 10 epochs on 13,600 gained about one point for three times the minutes.
DEFAULT_EPOCHS = 3
DEFAULT_MINUTES = 20.0  # the budget of the first cut's heal on a 2-core CPU: about 4,000 minilm passages x 3 epochs
PROBE_TEXTS = 64
PROBE_BATCH = 32  # the teacher's encode batch; the heal trains in batches of 64 texts of similar length


def default_cuts(num_layers: int) -> list[int]:
    """The cuts a run heals by default: K = round(depth * L) for each of DEFAULT_DEPTHS, each 1 <= K < L."""
    cuts = {min(max(1, math.floor(depth * num_layers + 0.5)), num_layers - 1) for depth in DEFAULT_DEPTHS}
    return sorted(k for k in cuts if 1 <= k < num_layers)


@dataclass(frozen=True)
class Speed:
    """Seconds per text of the whole model on a sample of the heal's texts: inference, and one training step."""

    infer: float
    train: float
    device: str

    def cut_train(self, layer: int, num_layers: int) -> float:
        return self.train * layer / num_layers


def probe(encoder: Any, texts: Sequence[str], seed: int = 0) -> Speed:
    """Time `encoder` (a SentenceTransformer, left as it was) on a seeded sample of `texts`, in batches of texts of
    similar length as the heal's: an inference pass, then forward and backward of training steps, each after a
    warm-up on two texts (first-call costs are not per text)."""
    sample = sorted(random.Random(seed).sample(list(texts), min(PROBE_TEXTS, len(texts))), key=len)
    batches = [sample[i : i + PROBE_BATCH] for i in range(0, len(sample), PROBE_BATCH)]
    encoder.encode(sample[:2])
    started = time.perf_counter()
    encoder.encode(sample, batch_size=PROBE_BATCH)
    infer = (time.perf_counter() - started) / len(sample)
    encoder.train()
    try:
        _step(encoder, sample[:2])
        started = time.perf_counter()
        for batch in batches:
            _step(encoder, batch)
        train = (time.perf_counter() - started) / len(sample)
    finally:
        encoder.zero_grad(set_to_none=True)
        encoder.eval()
    return Speed(infer, train, str(encoder.device))


def _step(encoder: Any, batch: list[str]) -> None:
    """Forward and backward of one batch through the whole pipeline (the gradients are dropped by the caller)."""
    from layerpick.healing.memory import model_inputs

    encoder(model_inputs(encoder, batch))["sentence_embedding"].float().pow(2).mean().backward()


@dataclass(frozen=True)
class HealPlan(Document):
    """What a run's heal will do and its estimate: `layers` healed in order until one clears the line, on `texts`
    of `available` texts (a seeded sample) for `epochs` passes; `minutes` by K; the probe's `speed`; the `budget`
    in minutes the texts and epochs were fitted to (None: not fitted)."""

    layers: list[int]
    num_layers: int
    available: int
    texts: int
    epochs: int
    held_out: float
    speed: dict[str, Any]
    minutes: dict[str, float]
    budget: float | None = None
    source: str = "the embedded calibration set"
    extra: dict[str, Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "layerpick-heal-plan/1"
    WHAT: ClassVar[str] = "a layerpick heal plan"
    NOUN: ClassVar[str] = "heal plan"
    REQUIRED: ClassVar[tuple[str, ...]] = ("layers", "num_layers", "available", "texts", "epochs", "minutes")

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> HealPlan:
        return cls(**values, extra=extra)

    def line(self) -> str:
        """The one line said before any training."""
        first, *rest = self.layers
        cuts = f"the cut at K = {first} of {self.num_layers}"
        if rest:
            cuts += f" (then K = {', '.join(map(str, rest))}, each only if the one before misses the fidelity line)"
        fitted = f", fitted to --heal-minutes {self.budget:g}" if self.budget is not None else ""
        more = "".join(f" + about {self.minutes[str(k)]:.0f} min for K = {k}" for k in rest)
        return (
            f"heal: {cuts} on {self.texts:,} of {self.available:,} texts of {self.source}, {self.epochs} "
            f"epoch{'s' if self.epochs != 1 else ''}"
            f"{fitted}: about {self.minutes[str(first)]:.0f} min for K = {first}{more} on this machine "
            f"({self.speed['device']})"
        )


def estimate_minutes(speed: Speed, texts: int, epochs: int, held_out: float, layer: int, num_layers: int) -> float:
    """The teacher's pass over every text plus `epochs` passes of the cut's training over the train share."""
    train = texts * (1.0 - held_out)
    return (texts * speed.infer + epochs * train * speed.cut_train(layer, num_layers)) / 60.0


def fit_budget(
    speed: Speed,
    available: int,
    minutes: float,
    held_out: float,
    layer: int,
    num_layers: int,
    most_epochs: int = DEFAULT_EPOCHS,
) -> tuple[int, int]:
    """(texts, epochs) for the first cut within `minutes`: `most_epochs` over as many texts as fit; fewer epochs
    only where that is needed to reach the texts the evidence asks for (ENOUGH_TEXTS, or all there are)."""
    wanted = min(available, ENOUGH_TEXTS)
    for epochs in range(most_epochs, 0, -1):
        fits = min(available, int(minutes / estimate_minutes(speed, 1, epochs, held_out, layer, num_layers)))
        if fits >= wanted:
            return fits, epochs
    if fits < MIN_TEXTS:
        raise LayerpickError(
            f"--heal-minutes {minutes:g} fits only {fits} texts on this machine (a heal needs {MIN_TEXTS}): "
            "give more minutes"
        )
    return fits, 1


def make_plan(
    speed: Speed,
    layers: Sequence[int],
    num_layers: int,
    available: int,
    *,
    budget: float | None,
    epochs: int,
    max_texts: int | None,
    held_out: float,
    source: str,
) -> HealPlan:
    """The plan of a heal of `layers` (in order) on `available` texts: fitted to `budget` minutes with at most
    `epochs` passes, else the given `epochs` and `max_texts`."""
    if budget is not None:
        texts, epochs = fit_budget(speed, available, budget, held_out, layers[0], num_layers, epochs)
    else:
        texts = min(available, max_texts or available)
    minutes = {str(k): round(estimate_minutes(speed, texts, epochs, held_out, k, num_layers), 1) for k in layers}
    described = {"infer_s_per_text": speed.infer, "train_s_per_text": speed.train, "device": speed.device}
    return HealPlan(list(layers), num_layers, available, texts, epochs, held_out, described, minutes, budget, source)


def probe_plan(
    heal: Any, budget: float | None, model_path: str, num_layers: int, device: str, layers: Sequence[int]
) -> HealPlan:
    """The plan of `heal` (a HealConfig) on the trained embedder at `model_path`: its texts read as the heal will
    read them (their warnings said by the heal itself), the speed probed on them, the budget fitted."""
    from layerpick.healing import teacher as teachers
    from layerpick.healing import texts as heal_texts

    encoder = teachers.load_encoder(model_path, device)
    said_by = logging.getLogger(heal_texts.__name__)
    said_by.disabled = True  # the heal reads the same texts next and says the same things once
    try:
        texts = heal_texts.prepare_texts(
            heal.fit_texts,
            encoder.tokenizer,
            encoder.max_seq_length,
            held_out=heal.held_out,
            max_texts=None,
            seed=heal.seed,
            field=heal.field,
        )
    finally:
        said_by.disabled = False
    speed = probe(encoder, texts.texts.texts, heal.seed)
    return make_plan(
        speed,
        layers,
        num_layers,
        len(texts.texts.texts),
        budget=budget,
        epochs=heal.epochs,
        max_texts=heal.max_texts,
        held_out=heal.held_out,
        source=texts.texts.source,
    )
