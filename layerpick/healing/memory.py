"""Whether a heal's training fits in its device's memory, answered before the teacher's pass instead of by an
out-of-memory kill after it.

Measured, not modelled, so that it holds for any architecture: one forward pass of the cut in training mode over
two of the longest train texts counts the bytes autograd keeps for the backward pass (activations, attention
weights, dropout masks), which grow with the batch; the gradients and Adam's two moments add 12 bytes per trained
weight. The sum is a floor of what training adds to the process: the backward pass's transient buffers, the
teacher's pass, the trainer's dataset and the allocator's slack come on top: measured on seventeen heals of
minilm-l6 and all-mpnet-base-v2, 0.5-2.8 GB beyond small floors and up to two thirds of a floor on texts of
many lengths (`benchmarks/results/heal.md`, Memory), so the headroom kept is a base plus a share of the floor. A
heal whose floor is above the memory the device has free is refused, naming the batch size that would fit with
that headroom; one whose floor leaves less than the headroom free is warned about.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from layerpick.errors import LayerpickError

logger = logging.getLogger(__name__)

PROBE_BATCH = 2
CANDIDATES = 32  # the longest texts by characters whose tokens are counted to find the longest in tokens
OPTIMIZER_BYTES = 12  # per trained float32 weight: its gradient and Adam's two moments
GB = 1e9
# What training took beyond its floor (heal.md, Memory): at most 2.8 GB beyond floors under 3.5 GB, and up to two
# thirds of the floor on SciFact's sentences (all-mpnet-base-v2 at K = 8: 5.3 GB beyond 8.7). The room a suggested
# batch leaves, and below which a heal is warned about, is HEADROOM_BASE plus HEADROOM_SHARE of the floor, which
# covers every measured heal.
HEADROOM_BASE = int(2 * GB)
HEADROOM_SHARE = 0.5


def headroom(floor: int) -> int:
    """The memory a heal whose floor is `floor` bytes should find free beyond it."""
    return HEADROOM_BASE + int(HEADROOM_SHARE * floor)


class HealMemoryError(LayerpickError):
    """A heal whose training cannot fit in its device's free memory."""


@dataclass(frozen=True)
class MemoryNeed:
    """What training takes beyond the loaded model: `per_text` bytes kept for the backward pass per text of the
    longest batch (`tokens` tokens long), and `state` bytes of gradients and optimizer moments."""

    per_text: int
    state: int
    tokens: int

    def floor(self, batch_size: int) -> int:
        return self.per_text * batch_size + self.state

    def largest_batch(self, free: int) -> int:
        """The largest batch whose floor leaves its headroom of `free` bytes (0: not even one text)."""
        room_for_floor = (free - HEADROOM_BASE) / (1 + HEADROOM_SHARE)
        return max(0, int((room_for_floor - self.state) // max(self.per_text, 1)))


def measure(student: Any, texts: Sequence[str], prompt: str | None = None, bf16: bool = False) -> MemoryNeed:
    """The memory `student` (a SentenceTransformer) needs to train on `texts`, each with `prompt` before it as the
    trainer puts it, measured on the longest of them; bf16 measures under the autocast training uses."""
    longest = _longest(student, [f"{prompt or ''}{text}" for text in texts])
    features = model_inputs(student, longest)
    saved = _saved_bytes(student, features, bf16)
    trained = sum(p.numel() for p in student.parameters() if p.requires_grad)
    tokens = int(features["attention_mask"].sum(dim=1).max()) if "attention_mask" in features else 0
    return MemoryNeed(per_text=-(-saved // len(longest)), state=trained * OPTIMIZER_BYTES, tokens=tokens)


def check(need: MemoryNeed, batch_size: int, device: str) -> None:
    """Refuse a heal whose floor is above the device's free memory; warn when it leaves less than its headroom."""
    free = free_bytes(device)
    floor = need.floor(batch_size)
    if floor > free:
        raise HealMemoryError(f"{_needs(need, batch_size, device, free)}: {_advice(need, free)}")
    if floor + headroom(floor) > free:
        logger.warning("%s: it may run out of memory; %s", _needs(need, batch_size, device, free), _advice(need, free))
    else:
        logger.info("training needs at least %.1f GB of the %.1f GB free", floor / GB, free / GB)


def free_bytes(device: str) -> int:
    """Memory free for training: a CUDA device's free memory, else the machine's available RAM."""
    if device.startswith("cuda"):
        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    import psutil  # a dependency of accelerate

    return int(psutil.virtual_memory().available)


def _longest(student: Any, texts: Sequence[str]) -> list[str]:
    """The PROBE_BATCH texts with the most tokens (counted among the CANDIDATES longest in characters)."""
    candidates = sorted(texts, key=len, reverse=True)[:CANDIDATES]
    limit = student.max_seq_length
    tokenized = student.tokenizer(candidates, truncation=limit is not None, max_length=limit)
    counts = [len(ids) for ids in tokenized["input_ids"]]
    ranked = sorted(range(len(candidates)), key=lambda i: counts[i], reverse=True)
    return [candidates[i] for i in ranked[:PROBE_BATCH]]


def model_inputs(student: Any, texts: list[str]) -> dict[str, Any]:
    """The model's inputs for `texts` as the trainer's collator makes them, the tensors on the student's device."""
    features = student.preprocess(texts)
    return {name: v.to(student.device) if isinstance(v, torch.Tensor) else v for name, v in features.items()}


def _saved_bytes(student: Any, features: dict[str, torch.Tensor], bf16: bool) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of one training-mode forward (the weights, which
    are resident already, not counted), the random state and the student's mode left as they were."""
    weights = {p.untyped_storage().data_ptr() for p in student.parameters()}
    kept: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    was_training = student.training
    device_type = student.device.type
    with torch.random.fork_rng(devices=[student.device] if device_type == "cuda" else []):
        student.train()
        try:
            with torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
                with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
                    student(features)
        finally:
            student.train(was_training)
    return sum(kept.values())


def _needs(need: MemoryNeed, batch_size: int, device: str, free: int) -> str:
    where = "GPU" if device.startswith("cuda") else "machine"
    return (
        f"training this heal at --batch-size {batch_size} needs at least {need.floor(batch_size) / GB:.1f} GB of "
        f"memory (its longest texts are {need.tokens} tokens) and the {where} has {free / GB:.1f} GB free"
    )


def _advice(need: MemoryNeed, free: int) -> str:
    fit = need.largest_batch(free)
    if fit < 1:
        room = f"{headroom(need.floor(1)) / GB:.1f} GB"
        return (
            f"not even a batch of one text leaves the {room} training takes beyond it: use a machine with more memory"
        )
    return f"lower --batch-size to {fit} or less (a smaller batch changes the schedule)"
