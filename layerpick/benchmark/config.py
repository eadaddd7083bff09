"""Settings of `layerpick bench`: `BenchConfig`, its checks, and `BenchError` for a benchmark that cannot run.

Owns: the defaults (batch sizes, text count, repeats, memory on, torch's default thread count), the one-line
messages for bad settings, and the batch sizes a run can time (`capped`): a batch never holds more than the
texts timed, so a batch size above `texts` is measured, and labelled, as `texts`, with a one-line notice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from layerpick.errors import LayerpickError
from layerpick.exporting.load import runtime_problem


class BenchError(LayerpickError):
    """A benchmark that cannot run: no baseline, bad settings, a failed memory probe."""


@dataclass(frozen=True)
class BenchConfig:
    """What to measure; `threads=None` keeps torch's default intra-op thread count."""

    baseline: str | None = None
    batch_sizes: tuple[int, ...] = (1, 32)
    texts: int = 64
    repeats: int = 3
    device: str = "auto"
    memory: bool = True
    seed: int = 0
    threads: int | None = None
    backend: str = "torch"  # what runs the export: torch, onnx or onnx-int8 (the full model always runs on torch)

    def validate(self, prefix: str = "--") -> "BenchConfig":
        """This config, checked; errors name the options as `prefix` spells them (`run`: `--bench-`)."""
        if not self.batch_sizes or any(size < 1 for size in self.batch_sizes):
            raise BenchError(f"batch sizes must be positive integers (got {list(self.batch_sizes)})")
        if self.texts < 1 or self.repeats < 1:
            raise BenchError(f"{prefix}texts and {prefix}repeats must be at least 1 (got {self.texts}, {self.repeats})")
        problem = runtime_problem(self.backend, self.device, self.threads)
        if problem:
            raise BenchError(problem)
        return self

    def capped(self) -> tuple["BenchConfig", str | None]:
        """This config with every batch size above `texts` lowered to `texts` (sizes that become equal merged,
        the order kept), and the notice that says which were (None when none was)."""
        over = [size for size in dict.fromkeys(self.batch_sizes) if size > self.texts]
        if not over:
            return self, None
        sizes = tuple(dict.fromkeys(min(size, self.texts) for size in self.batch_sizes))
        listed = ", ".join(str(size) for size in over[:-1]) + (" and " if len(over) > 1 else "") + str(over[-1])
        notice = f"batch size{'s' if len(over) > 1 else ''} {listed} capped at the {self.texts} texts timed"
        return replace(self, batch_sizes=sizes), notice
