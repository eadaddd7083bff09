"""The training of a heal, on sentence-transformers' trainer: the student cut learns the teacher's vectors of the
train texts, a checkpoint in the work folder after each epoch and every `checkpoint_minutes` of training within one,
resumed from the last one after an interrupt (mid-epoch too: the trainer skips the batches already trained on).

A non-finite loss stops the training (`outcome.finite_losses`); a full disk while a checkpoint is written is the
one line naming the checkpoints' folder (`_util.disk`).

The same code runs on a CPU and on a GPU: the trainer places the model; on a CUDA device that supports it, bf16
mixed precision is on (the weights stay float32).
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from layerpick._util.disk import DiskFullError, is_disk_full, nearly_full
from layerpick.errors import LayerpickError
from layerpick.healing.config import HealConfig
from layerpick.healing.loss import make_loss
from layerpick.healing.outcome import HealOutcomeError, finite_losses
from layerpick.healing.workspace import CHECKPOINTS, last_checkpoint, reset_training

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainOutcome:
    steps: int
    losses: tuple[dict[str, float], ...]  # {"epoch", "loss"} per epoch: the mean of its steps' losses
    resumed_from_epoch: float | None
    bf16: bool

    @property
    def final_loss(self) -> float | None:
        return self.losses[-1]["loss"] if self.losses else None

    def describe(self, config: HealConfig, device: str, minutes: float) -> dict[str, Any]:
        """The `training` section of a HealReport."""
        return {
            "epochs": config.epochs,
            "learning_rate": config.learning_rate,
            "batch_size": config.batch_size,
            "seed": config.seed,
            "loss": config.loss,
            "steps": self.steps,
            "final_loss": self.final_loss,
            "losses": list(self.losses),
            "device": device,
            "bf16": self.bf16,
            "resumed_from_epoch": self.resumed_from_epoch,
            "minutes": minutes,
        }


def uses_bf16(device: str) -> bool:
    return device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def train(
    student: Any,
    texts: Sequence[str],
    vectors: torch.Tensor,
    work: Path,
    config: HealConfig,
    device: str,
    callbacks: Sequence[Any] = (),
    group_lengths: bool = True,
) -> TrainOutcome:
    """Train `student` (a SentenceTransformer, changed in place) to give `vectors` for `texts`, with checkpoints in
    the work folder `work`, from its last complete checkpoint when it has one."""
    checkpoints = work / CHECKPOINTS
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer

    from layerpick.healing.batches import TEXT_COLUMN

    dataset = Dataset.from_dict({TEXT_COLUMN: list(texts), "label": vectors.tolist()})
    bf16 = uses_bf16(device)
    trainer = SentenceTransformerTrainer(
        model=student,
        args=training_arguments(checkpoints, config, device, bf16, default_prompt(student), group_lengths),
        train_dataset=dataset,
        loss=make_loss(config.loss, student),
        callbacks=[timed_checkpoints(config.checkpoint_minutes), finite_losses(config), *callbacks],
    )
    quieten(trainer)
    last = last_checkpoint(work)
    resumed = _epoch_of(last) if last else None
    if last:
        logger.info("resuming from %s (epoch %s)", last, resumed)
    try:
        trainer.train(resume_from_checkpoint=str(last) if last else None)
    except HealOutcomeError:  # diverged: resuming its checkpoints would diverge the same way
        reset_training(work)
        raise
    except Exception as error:  # noqa: BLE001 - re-raised: as a full disk when it was one, else as it is
        _raise_if_disk_full(error, checkpoints)
        raise
    # with bf16 on, accelerate left an autocast wrapper on the model's forward: encode in float32 from here on
    trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    losses = epoch_losses(trainer.state.log_history)
    student.eval()
    return TrainOutcome(trainer.state.global_step, losses, resumed, bf16)


def _raise_if_disk_full(error: Exception, checkpoints: Path) -> None:
    """A checkpoint cut short by a full disk, as the documented one line naming the checkpoints' folder: torch's
    writer says only "file write failed" (no errno), so the file system is asked too, before the partial checkpoint
    is removed (`workspace.last_checkpoint` removes it when the run resumes)."""
    if isinstance(error, LayerpickError):
        return
    if is_disk_full(error) or (checkpoints.exists() and nearly_full(checkpoints)):
        raise DiskFullError(checkpoints) from error


def epoch_losses(log_history: Sequence[dict[str, Any]]) -> tuple[dict[str, float], ...]:
    """The mean training loss of each epoch from the trainer's per-step log (kept in every checkpoint, so an epoch
    resumed in its middle averages all its steps, not only those after the resume)."""
    steps: dict[int, list[float]] = {}
    for entry in log_history:
        if "loss" in entry and "epoch" in entry:
            steps.setdefault(math.ceil(round(float(entry["epoch"]), 6)), []).append(float(entry["loss"]))
    return tuple({"epoch": float(epoch), "loss": sum(losses) / len(losses)} for epoch, losses in sorted(steps.items()))


def timed_checkpoints(minutes: float, clock=time.monotonic) -> Any:
    """A trainer callback that asks for a checkpoint once `minutes` of training have passed since the last one (0:
    after every step), so that an interrupt loses at most that much of a long epoch."""
    from transformers import TrainerCallback

    class TimedCheckpoints(TrainerCallback):
        def __init__(self):
            self.since = clock()

        def on_train_begin(self, args, state, control, **kwargs):
            self.since = clock()

        def on_step_end(self, args, state, control, **kwargs):
            if clock() - self.since >= minutes * 60:
                control.should_save = True

        def on_save(self, args, state, control, **kwargs):
            self.since = clock()

    return TimedCheckpoints()


def quieten(trainer: Any) -> None:
    """The trainer prints each log line on stdout (with progress bars and without), which `heal --json` must
    keep clean: the heal reports the losses itself. The checkpoints need no model card."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(_bars_only())
    card = getattr(trainer, "model_card_callback_class", None)
    if card is not None:
        trainer.remove_callback(card)


def _bars_only() -> Any:
    """transformers' progress bars (on stderr) without the log line they write on stdout each epoch."""
    from transformers.trainer_callback import ProgressCallback

    class BarsOnly(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            return None

    return BarsOnly


def default_prompt(student: Any) -> str | None:
    """The prompt the student's `encode` puts before every text (its default prompt), which the teacher's vectors
    were computed with; the trainer applies no prompt unless told."""
    name = getattr(student, "default_prompt_name", None)
    return (getattr(student, "prompts", None) or {}).get(name) if name else None


def training_arguments(
    checkpoints: Path,
    config: HealConfig,
    device: str,
    bf16: bool,
    prompt: str | None = None,
    group_lengths: bool = True,
):
    """The trainer's arguments; `group_lengths` False draws batches at random (benchmarks/heal_batches.py)."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    from layerpick.healing.batches import LengthGroupedBatches

    return SentenceTransformerTrainingArguments(
        **({"prompts": prompt} if prompt else {}),
        **({"batch_sampler": LengthGroupedBatches} if group_lengths else {}),
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        seed=config.seed,
        data_seed=config.seed,
        save_strategy="epoch",
        save_total_limit=1,
        logging_strategy="steps",  # each step's loss, averaged per epoch by `epoch_losses`
        logging_steps=1,
        logging_nan_inf_filter=False,  # a non-finite step's loss logged as it is, for `outcome.finite_losses`
        report_to="none",
        use_cpu=not device.startswith("cuda"),
        bf16=bf16,
        disable_tqdm=not config.progress,
    )


def _epoch_of(checkpoint: Path) -> float | None:
    try:
        return float(json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
