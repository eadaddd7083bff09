"""Progress bars on stderr for long passes (rich), silent when disabled."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def stderr_progress() -> Progress:
    """A rich display on stderr with layerpick's columns: description, bar, done/total, elapsed, remaining."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=False,
    )


@contextmanager
def progress_bar(description: str, total: int, enabled: bool = True) -> Iterator:
    """Yield an `advance(n=1)` callable; draws a rich bar on stderr when enabled."""
    if not enabled:
        yield lambda n=1: None
        return
    with stderr_progress() as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
