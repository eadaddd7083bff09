"""Whether a heal's training went right, checked before anything is written: every step's loss finite (a trainer
callback stops the training at the first that is not), and the held-out fidelity to the teacher not fallen below the
cut's before training.

A heal that made the cut worse is refused (exit 1, nothing written, its checkpoints dropped), not written with a
warning: an exit 0 means the written model is what the record says, and a healed export worse than the plain cut is
never what a heal is for (the cut it started from is there at no cost, and `run --heal-layers` would ship the worse
one without anyone reading a warning). Its checkpoints are dropped because resuming them gives the same
model; every setting that could change the outcome (the learning rate first) is in the run key, so another try
starts over anyway. A fall within `FALL_TOLERANCE` is the noise of training a cut that already nearly equals its
teacher (a tiny random mpnet cut starts at a cosine of 0.9998): it is written, with a warning.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from layerpick.errors import LayerpickError
from layerpick.healing.config import HealConfig
from layerpick.healing.fidelity import Fidelity

logger = logging.getLogger(__name__)

FALL_TOLERANCE = 0.005  # held-out cosine a heal may lose to noise before it counts as made worse


class HealOutcomeError(LayerpickError):
    """A training that diverged or left the cut further from its teacher than it started."""


def try_instead(config: HealConfig) -> str:
    """The values to try after a training went wrong, in the command's words."""
    default = HealConfig().learning_rate
    smaller = min(config.learning_rate / 10, default)
    return (
        f"try a smaller --learning-rate (this heal's: {config.learning_rate:g}; the default: {default:g}; "
        f"e.g. --learning-rate {smaller:g})"
    )


def finite_losses(config: HealConfig) -> Any:
    """A trainer callback that stops the training with a HealOutcomeError at the first non-finite loss logged
    (each step's, `train.training_arguments` logs every step)."""
    from transformers import TrainerCallback

    class FiniteLosses(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            loss = (logs or {}).get("loss")
            if loss is not None and not math.isfinite(float(loss)):
                raise HealOutcomeError(
                    f"the training diverged: its loss was {float(loss)} at step {state.global_step} (epoch "
                    f"{state.epoch or 0:.2g}); nothing was written: {try_instead(config)}"
                )

    return FiniteLosses()


def check_fidelity(before: Fidelity, after: Fidelity, config: HealConfig) -> None:
    """Refuse a heal whose held-out cosine to the teacher ends more than FALL_TOLERANCE below the cut's before
    training (non-finite included); warn of a smaller fall."""
    fall = before.cosine - after.cosine
    if not math.isfinite(after.cosine) or fall > FALL_TOLERANCE:
        raise HealOutcomeError(
            f"the heal made the cut worse: its held-out cosine to the teacher fell from {before.cosine:.4f} before "
            f"training to {after.cosine:.4f}; nothing was written: {try_instead(config)}"
        )
    if fall > 0:
        logger.warning(
            "the heal did not bring the cut closer to its teacher: held-out cosine %.4f -> %.4f (within the %g a "
            "cut that already nearly equals its teacher loses to noise); the healed export is written as measured",
            before.cosine,
            after.cosine,
            FALL_TOLERANCE,
        )
