"""The quality-speed frontier and the choices made on it.

Owns: which layers are on the frontier (no other layer is at least as good on both quality and ideal
speed-up and better on one), and choosing a layer from validated mean task scores: the best one
(`--choose validated`), or the shallowest one within an absolute loss of the best (`--max-loss X`). Pure
functions over per-layer lists (index = layer k); layer 0 is never exported, so it is never chosen.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from layerpick._util.finite import is_finite
from layerpick.errors import LayerpickError

UNSUPERVISED, VALIDATED = "unsupervised", "validated"
CHOICES = (UNSUPERVISED, VALIDATED)


class ChoiceError(LayerpickError):
    """A choice on the frontier that cannot be made: bad options, or no validated layer to choose from."""


def frontier(quality: Sequence[float | None], speedup: Sequence[float], layers: Iterable[int]) -> list[int]:
    """The layers among `layers` (with a finite quality) that no other such layer dominates, ascending."""
    scored = [k for k in layers if is_finite(quality[k])]
    return sorted(k for k in scored if not any(_dominates(j, k, quality, speedup) for j in scored if j != k))


def _dominates(j: int, k: int, quality, speedup) -> bool:
    at_least = quality[j] >= quality[k] and speedup[j] >= speedup[k]
    return at_least and (quality[j] > quality[k] or speedup[j] > speedup[k])


@dataclass(frozen=True)
class ChoiceOptions:
    """How the exported layer is chosen: the unsupervised rule (default), or from validated scores."""

    choose: str = UNSUPERVISED
    max_loss: float | None = None

    @classmethod
    def parse(cls, choose: str | None, max_loss: str | float | None) -> "ChoiceOptions":
        """`--choose` and `--max-loss` checked together; `--max-loss` alone means choosing by validation."""
        if choose is not None and choose not in CHOICES:
            raise ChoiceError(f"--choose must be {' or '.join(CHOICES)} (got {choose!r})")
        if max_loss is not None:
            max_loss = _loss(max_loss)
            if choose == UNSUPERVISED:
                raise ChoiceError(
                    "--max-loss chooses by validated scores; it cannot be combined with --choose unsupervised"
                )
        return cls(VALIDATED if max_loss is not None else (choose or UNSUPERVISED), max_loss)

    @property
    def validated(self) -> bool:
        return self.choose == VALIDATED

    def describe(self) -> str:
        if not self.validated:
            return "the unsupervised rule's pick"
        if self.max_loss is None:
            return "the layer with the best validated mean score"
        return f"the shallowest layer within {self.max_loss:g} of the best validated mean score"

    def flags(self) -> list[str]:
        if not self.validated:
            return []
        return ["--max-loss", f"{self.max_loss:g}"] if self.max_loss is not None else ["--choose", VALIDATED]


@dataclass(frozen=True)
class ValidatedChoice:
    """A layer chosen from validated mean scores, and what it gives up against the best layer."""

    layer: int
    score: float
    best_layer: int
    best_score: float
    max_loss: float | None

    @property
    def loss(self) -> float:
        return self.best_score - self.score

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "loss": self.loss}


def choose_validated(
    means: Sequence[float | None], layers: Iterable[int], max_loss: float | None = None
) -> ValidatedChoice:
    """The best layer by mean score (the shallowest on ties), or with `max_loss` the shallowest layer whose
    mean is within `max_loss` of the best; among `layers` >= 1 with a score."""
    candidates = sorted(k for k in layers if k >= 1 and is_finite(means[k]))
    if not candidates:
        raise ChoiceError("no validated layer to choose from (no layer >= 1 has a mean task score)")
    best = max(candidates, key=lambda k: (means[k], -k))
    layer = best
    if max_loss is not None:
        layer = min(k for k in candidates if means[k] >= means[best] - max_loss - 1e-12)
    return ValidatedChoice(layer, float(means[layer]), best, float(means[best]), max_loss)


def _loss(text: str | float) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ChoiceError(
            f"--max-loss must be a non-negative number, an absolute mean-score loss such as 0.01 (got {text!r})"
        )
    return value
