"""Which of the teacher's blocks a healed cut starts from, and putting them in the cut's K places.

`first` is the cut `layerpick export` makes: blocks 1..K, layer K of DESIGN.md. `spread` starts from K blocks
spread over the teacher's L: the first, the last and evenly between, as distilled students start from every other
block of their teacher. A list names the blocks, counted from 1 as `--layer` counts them. The healed cut has K
blocks either way (the same size and speed); only its starting weights differ, and with them the config's
per-block fields (Gemma 3's sliding or full attention), which follow the blocks placed.

On minilm-l6, with the same texts and schedule, `spread` heals far better than `first`
(`benchmarks/results/heal.md`, "Why the cut starts from spread blocks"): the default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from layerpick._util.numerals import ascii_int
from layerpick.errors import LayerpickError

WORDS = ("spread", "first")
DEFAULT = "spread"
GRAMMAR = "spread, first, or the teacher's blocks to start from, counted from 1 (e.g. 1,3,6)"


class BlocksError(LayerpickError):
    """A --blocks value the heal cannot use."""


def check_syntax(text: str) -> None:
    """Refuse what no model could take, before any model loads."""
    if text not in WORDS:
        _numbers(text)


def choose(text: str, k: int, num_layers: int) -> tuple[int, ...]:
    """The teacher's blocks (1-based) the cut at K of `num_layers` starts from."""
    if text == "first":
        return tuple(range(1, k + 1))
    if text == "spread":
        return spread(k, num_layers)
    blocks = _numbers(text)
    if len(blocks) != k or list(blocks) != sorted(set(blocks)) or blocks[0] < 1 or blocks[-1] > num_layers:
        raise BlocksError(
            f"--blocks {text!r}: name {k} different blocks of the teacher's 1..{num_layers} in rising order, one "
            f"for each block the cut keeps"
        )
    return blocks


def spread(k: int, num_layers: int) -> tuple[int, ...]:
    """K of 1..L: the first, the last and evenly between (rounded down); K = 1 keeps the last."""
    if k == 1:
        return (num_layers,)
    return tuple(1 + i * (num_layers - 1) // (k - 1) for i in range(k))


def is_first(blocks: Sequence[int]) -> bool:
    return tuple(blocks) == tuple(range(1, len(blocks) + 1))


def seat_config(cut_dir: Path, teacher_config: Any, blocks: Sequence[int]) -> None:
    """Give the cut's saved config the teacher's per-block fields of `blocks` (before the cut is loaded)."""
    from transformers import AutoConfig

    from layerpick.core import surgery

    config = AutoConfig.from_pretrained(str(cut_dir))
    changed = surgery.chosen_blocks_config(config, teacher_config, [block - 1 for block in blocks])
    if changed.to_dict() != config.to_dict():
        changed.save_pretrained(str(cut_dir))


def seat_weights(student_model: Any, teacher_model: Any, blocks: Sequence[int]) -> None:
    """Copy the teacher's `blocks` into the student's K blocks, in order (the student loaded from the seated cut)."""
    from layerpick.core import surgery

    student_blocks, teacher_blocks = surgery.blocks(student_model), surgery.blocks(teacher_model)
    for place, block in enumerate(blocks):
        student_blocks[place].load_state_dict(teacher_blocks[block - 1].state_dict())


def _numbers(text: str) -> tuple[int, ...]:
    parts = [part.strip() for part in str(text).split(",")]
    numbers = [ascii_int(part) for part in parts]
    if not parts or any(number is None for number in numbers):
        raise BlocksError(f"--blocks must be {GRAMMAR} (got {text!r})")
    return tuple(numbers)  # type: ignore[arg-type]
