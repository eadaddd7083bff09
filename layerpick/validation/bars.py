"""Progress bars of a validation run on stderr: tasks, layers of the current task, and encoding of new texts."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.progress import Progress

from layerpick._util.progress import stderr_progress


class ValidationBars:
    """One rich display with a row per level; every method is a no-op when disabled."""

    def __init__(self, total_tasks: int, enabled: bool = True) -> None:
        self.enabled = enabled
        self.total_tasks = total_tasks
        self._progress: Progress | None = None
        self._tasks_row = self._layers_row = None

    def __enter__(self) -> "ValidationBars":
        if self.enabled:
            self._progress = stderr_progress()
            self._progress.start()
            self._tasks_row = self._progress.add_task("tasks", total=self.total_tasks)
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def start_task(self, name: str, layers: int) -> None:
        if self._progress is None:
            return
        if self._layers_row is not None:
            self._progress.remove_task(self._layers_row)
        self._layers_row = self._progress.add_task(f"  {name}: layers", total=layers)

    def layer_done(self) -> None:
        if self._progress is not None and self._layers_row is not None:
            self._progress.advance(self._layers_row)

    def task_done(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._tasks_row)

    @contextmanager
    def encoding(self, description: str, total: int) -> Iterator:
        """A temporary row for one forward pass over new texts; yields `advance(n)`."""
        if self._progress is None:
            yield lambda n=1: None
            return
        row = self._progress.add_task(f"    {description}", total=total)
        try:
            yield lambda n=1: self._progress.advance(row, n)
        finally:
            self._progress.remove_task(row)
