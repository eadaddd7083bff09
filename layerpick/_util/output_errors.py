"""The errors of an output location, below every module that checks or writes one (`outputs`, `disk`, `atomic`,
`locks`): a path layerpick cannot write, and a folder it may not replace. A full disk (`disk.DiskFullError`) is one
kind of the first."""

from __future__ import annotations

from layerpick.errors import LayerpickError


class OutputLocationError(LayerpickError):
    """An output path layerpick cannot write: read-only, not permitted, or in the way of a file."""


class OutputExistsError(LayerpickError):
    """An output folder that already holds something layerpick may not replace (or not without --overwrite)."""
