"""A full disk, told as the user's problem with the user's path: checked before a large write where the size is
known, and recognised after a failed write whatever library made it.

Libraries report a full disk in their own words: an OSError with errno 28 (Python), "No space left on device
(os error 28)" inside a SafetensorError (Rust), or an unrelated-looking failure ("Wire format was corrupt",
from protobuf writing a truncated ONNX file). `is_disk_full` recognises the first two by the error chain and
`nearly_full` the last by the file system itself, right after the failure and before the partial files are
removed. `DiskFullError` names the output the user gave, never a staging path, and the size when known.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from layerpick._util.output_errors import OutputLocationError

FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
FULL_WORDS = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122")
NEARLY_FULL_BYTES = 1 << 20  # less than this free after a failed write: the write failed for want of space
MB = 1e6


class DiskFullError(OutputLocationError):
    """The disk holding an output has no room for it."""

    def __init__(
        self, path: Path, needed: int | None = None, free: int | None = None, *, at_least: bool = False
    ) -> None:
        sizes = [
            f"{'at least ' if at_least else ''}{_mb(needed)} MB needed" if needed else None,
            f"{_mb(free)} MB free" if free is not None else None,
        ]
        detail = ", ".join(size for size in sizes if size)
        super().__init__(f"no space left on device while writing {path}" + (f" ({detail})" if detail else ""))
        self.path, self.needed, self.free = Path(path), needed, free


def free_bytes(path: Path) -> int:
    """The bytes this process may still write on the file system holding `path` (or its nearest existing parent;
    root may use the blocks reserved for it)."""
    stats = os.statvfs(nearest_existing(path))
    blocks = stats.f_bfree if hasattr(os, "geteuid") and os.geteuid() == 0 else stats.f_bavail
    return blocks * stats.f_frsize


def nearest_existing(path: Path) -> Path:
    """`path` made absolute, or its nearest parent that exists (where a file written at `path` would land)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_free(path: Path, needed: int) -> None:
    """Raise DiskFullError before writing `needed` bytes at `path` when the disk cannot hold them."""
    free = free_bytes(path)
    if free < needed:
        raise DiskFullError(path, needed, free)


def is_disk_full(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised from, reports a full disk or an exceeded quota."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in FULL_ERRNOS:
            return True
        if any(words in str(error).lower() for words in FULL_WORDS):
            return True
        error = error.__cause__ or error.__context__
    return False


def nearly_full(path: Path) -> bool:
    """Whether the file system holding `path` has (almost) no room left: read right after a failed write."""
    try:
        return free_bytes(path) < NEARLY_FULL_BYTES
    except OSError:
        return False


def tree_bytes(path: Path) -> int:
    """The bytes of the files under `path` (what a failed write had written when the disk filled)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file() and not item.is_symlink())


def _mb(size: int) -> str:
    return f"{size / MB:.1f}" if size < 10 * MB else f"{size / MB:.0f}"
