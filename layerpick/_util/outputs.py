"""The checks of an output location, made before any work: can layerpick write there, and may it replace
what is there?

A command that loads a model for a minute and then finds its output folder read-only wastes that minute and
reports a temporary staging path the user never named. `check_output_location` looks at the path the user
gave (or the default), before anything is loaded: an existing path must be the right kind (folder or file),
the folder that will hold it must be reachable through folders (not through a file), and writing there must
really work; a probe file is created and removed, which also catches read-only file systems and full disks
that permission bits do not show (and is right for root, who ignores permission bits).

`model_output_dir` is where every command writes without `--output` (layerpick-out/<model>/).

`check_replaceable` is the one policy for an output folder that already exists, shared by export, compare and
run: a file or a symbolic link is never replaced; an empty folder is used; a folder that holds anything layerpick
did not make is never touched, `--overwrite` or not; one that holds an earlier output of the same command is
replaced only with `--overwrite` (run resumes it instead, so it passes `overwrite=True`).
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Callable

from layerpick._util.disk import DiskFullError, nearest_existing
from layerpick._util.output_errors import OutputExistsError, OutputLocationError

OUTPUT_ROOT = Path("layerpick-out")  # where the commands write when no --output is given


def model_output_dir(model: str) -> Path:
    """The folder a model's outputs go to by default: layerpick-out/<the model's last path part>."""
    return OUTPUT_ROOT / Path(model.rstrip("/")).name


REASONS = {
    errno.EROFS: "is on a read-only file system",
    errno.EACCES: "is not writable (permission denied)",
    errno.EPERM: "is not writable (operation not permitted)",
    errno.ENOSPC: "is on a full disk",
    errno.EDQUOT: "is over its disk quota",
}


def check_replaceable(
    path: Path, *, overwrite: bool, owned: Callable[[Path], bool], what: str, option: str = "--output"
) -> None:
    """Raise OutputExistsError unless the folder `path` may be written: missing, empty, or (with `overwrite`)
    holding an earlier layerpick `what` (`owned(path)` says so)."""
    path = Path(path)
    _check_links(path, f"{option} {path}")  # a loop is told as one, by every command
    if not path.exists() and not path.is_symlink():
        return
    label = f"{option} {path}"
    if path.is_symlink():
        raise OutputExistsError(f"{label} is a symbolic link; give the directory itself")
    if not path.is_dir():
        raise OutputExistsError(f"{label} exists and is not a directory; refusing to replace it")
    if not any(path.iterdir()):
        return
    if not owned(path):
        raise OutputExistsError(
            f"{label} is not empty and holds no earlier layerpick {what}; refusing to replace "
            "it (choose a new or empty directory)"
        )
    if not overwrite:
        raise OutputExistsError(f"{label} already holds a layerpick {what} (pass --overwrite to replace it)")


def check_output_location(path: Path, option: str | None = "--output", *, is_file: bool = False) -> None:
    """Raise OutputLocationError, naming `option` and the user's `path`, when `path` cannot be written.

    `is_file`: the output is one file (else a folder, created if missing). Nothing is created; the probe
    file is removed again."""
    path = Path(path).expanduser()
    label = f"{option} {path}" if option else str(path)
    _check_links(path, label)
    if path.exists():
        if is_file and path.is_dir():
            raise OutputLocationError(f"cannot write {label}: it is a directory, not a file")
        if not is_file and not path.is_dir():
            raise OutputLocationError(f"cannot write {label}: it exists and is not a directory")
        holder = path.parent if is_file else path
    else:
        holder = nearest_existing(path.parent)
        if not holder.is_dir():
            raise OutputLocationError(f"cannot write {label}: {holder} is a file, not a directory")
    _probe(holder, label, "it" if holder == path else str(holder), path)


def _check_links(path: Path, label: str) -> None:
    """Refuse a path that runs through a symbolic link that loops or points nowhere (`Path.exists` says False
    for both, and the first write then fails deep inside a library)."""
    for part in (path, *path.parents):
        if not os.path.islink(part):
            continue
        try:
            os.stat(part)
        except OSError as error:
            what = "loops (too many levels of symbolic links)" if error.errno == errno.ELOOP else "points nowhere"
            where = "it" if part == path else str(part)
            raise OutputLocationError(f"cannot write {label}: {where} is a symbolic link that {what}") from None


def _probe(folder: Path, label: str, where: str, path: Path) -> None:
    """Create, write one byte to and remove a file in `folder`: an empty file still fits on a disk whose every
    block is taken, one byte does not (a full disk is then named before any work, with the user's path)."""
    try:
        handle, name = tempfile.mkstemp(prefix=".layerpick-probe-", dir=folder)
    except OSError as error:
        _refuse(error, label, where, path)
    try:
        os.write(handle, b"\0")
        os.fsync(handle)
    except OSError as error:
        os.close(handle)
        os.unlink(name)
        _refuse(error, label, where, path)
    os.close(handle)
    os.unlink(name)


def _refuse(error: OSError, label: str, where: str, path: Path) -> None:
    """The one-line error of a failed probe: a full disk as DiskFullError naming `path`."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        raise DiskFullError(path) from None
    reason = REASONS.get(error.errno, f"cannot be written ({error.strerror or error})")
    raise OutputLocationError(f"cannot write {label}: {where} {reason}") from None
