"""The settings of one pass over texts (`CollectConfig`: pooling, representation, batch size, length, prompt),
free of torch so that the command line's options and every config check read them without importing it
(`core.collect` runs the pass)."""

from __future__ import annotations

from dataclasses import dataclass

from layerpick.core.prompts import PLAIN, Prompt
from layerpick.errors import LayerpickError

REPRESENTATIONS = ("exported", "raw")


@dataclass(frozen=True)
class CollectConfig:
    pooling: str | None = None  # None: the family's default
    representation: str = "exported"
    batch_size: int = 16
    max_length: int = 512
    progress: bool = True
    prompt: Prompt | str | None = PLAIN  # the template each text is wrapped in (a Prompt, name or template)

    def check(self) -> "CollectConfig":
        """One-line errors for a bad pooling, representation, batch size or length, before any model loads."""
        if self.pooling is not None:
            from layerpick.core.pooling import check_pooling  # beside the pooling maths (torch)

            check_pooling(self.pooling)
        if self.representation not in REPRESENTATIONS:
            raise LayerpickError(
                f"unknown representation {self.representation!r}; choose one of {', '.join(REPRESENTATIONS)}"
            )
        if self.batch_size < 1:
            raise LayerpickError(f"--batch-size must be at least 1 (got {self.batch_size})")
        if self.max_length < 1:
            raise LayerpickError(f"--max-length must be at least 1 (got {self.max_length})")
        return self
