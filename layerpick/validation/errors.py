"""The one-line errors of the validation stage (all `LayerpickError`s, so the CLI maps them to exit code 1)."""

from layerpick.errors import LayerpickError, ReportFormatError

__all__ = [
    "ReportFormatError",
    "StaticExportError",
    "StoreError",
    "TaskFormatError",
    "TaskNotFoundError",
    "ValidationFailedError",
]


class TaskNotFoundError(LayerpickError):
    """A `--tasks` item that is no MTEB task, no MTEB benchmark and no folder."""


class TaskFormatError(LayerpickError):
    """A task folder whose files match no supported format, or miss labels, scores or the test split."""


class StaticExportError(LayerpickError):
    """A `--static` folder that is no static export of the model validated."""


class StoreError(LayerpickError):
    """A representation store that cannot be read or written."""


class ValidationFailedError(LayerpickError):
    """Some tasks failed to evaluate; the others finished and their results were written."""
