"""One writer per output: the lock a command holds on each folder it writes (an export, a run, a validation's
output, a representation store, a select report) from its checks until its result is in place.

The lock is an `flock` on a small file beside the output (`.NAME.lock`, holding the writer's process id). The
kernel releases it when its process ends in any way, so a lock left by a dead process is simply taken over;
the file is removed when the lock is released. A second process asking for a held lock gets one line naming
the holder, at once, before it loads anything. Locks are per process and reentrant (a run that holds its
folder may export into it).
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from layerpick.errors import LayerpickError
from layerpick._util.numerals import is_ascii_number

_held: dict[str, int] = {}  # absolute output path -> how many times this process holds it


class OutputBusyError(LayerpickError):
    """Another process is writing the output this command would write."""


@contextmanager
def output_lock(path: Path, option: str = "--output") -> Iterator[None]:
    """Hold the write lock of the output `path` (named `option` in the message) for the block."""
    key = os.path.abspath(Path(path).expanduser())
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    lock_file = Path(key).parent / f".{Path(key).name}.lock"
    created = [folder for folder in (lock_file.parent, *lock_file.parent.parents) if not folder.exists()]
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    try:
        handle = _acquire(lock_file, option, path)
    except BaseException:
        _remove_empty(created)
        raise
    _held[key] = 1
    try:
        yield
    finally:
        del _held[key]
        lock_file.unlink(missing_ok=True)  # before the unlock: a waiter then finds a fresh file (see _acquire)
        os.close(handle)
        if not Path(key).exists():
            _remove_empty(created)


def _acquire(lock_file: Path, option: str, path: Path) -> int:
    while True:
        handle = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(handle)
            os.close(handle)
            raise OutputBusyError(
                f"{option} {path} is being written by process {holder}; wait for it or choose another {option}"
            ) from None
        if _same_file(handle, lock_file):  # not a file its last holder unlinked while we waited to open it
            try:
                os.ftruncate(handle, 0)
                os.write(handle, f"{os.getpid()}\n".encode())
            except OSError as error:  # ours (we hold it): removed, and the failure named with the user's path
                lock_file.unlink(missing_ok=True)
                os.close(handle)
                raise _unwritable(error, option, path) from None
            return handle
        os.close(handle)


def _unwritable(error: OSError, option: str, path: Path) -> LayerpickError:
    """A lock file that could not be written, told as the output's problem (a full disk: DiskFullError)."""
    from layerpick._util.disk import FULL_ERRNOS, DiskFullError
    from layerpick._util.output_errors import OutputLocationError

    if error.errno in FULL_ERRNOS:
        return DiskFullError(Path(path))
    return OutputLocationError(f"cannot write {option} {path}: {error.strerror or error}")


def _read_holder(handle: int) -> str:
    try:
        text = os.pread(handle, 32, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text if is_ascii_number(text) else "unknown"


def _same_file(handle: int, path: Path) -> bool:
    try:
        return os.fstat(handle).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:  # innermost first
        try:
            folder.rmdir()
        except OSError:
            pass
