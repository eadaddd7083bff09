"""Torch's intra-op thread count, as `--threads N` of `layerpick serve` and `layerpick bench` sets it.

Owns: checking the requested count, setting it, reading it back, and (for a bounded run such as a benchmark)
putting the previous count back afterwards. `None` always means "leave torch's default alone".

torch keeps one process-wide count; a thread that starts using torch later (the server's embedding worker)
picks up the count that was set before, so setting it once, before loading the model, is enough.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


def check_threads(count: int | None) -> str | None:
    """Why `count` is not a usable thread count (a one-line message), or None when it is."""
    if count is None or (isinstance(count, int) and not isinstance(count, bool) and count >= 1):
        return None
    return f"--threads must be at least 1 (got {count})"


def current_threads() -> int:
    """The intra-op thread count torch uses now."""
    import torch

    return torch.get_num_threads()


def set_threads(count: int | None) -> int:
    """Use `count` intra-op threads (None: leave them as they are); returns the count before."""
    import torch

    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    return previous


@contextmanager
def threads(count: int | None) -> Iterator[int]:
    """Use `count` intra-op threads inside the block and the previous count after it; yields the count used."""
    previous = set_threads(count)
    try:
        yield current_threads()
    finally:
        if count is not None:
            set_threads(previous)
