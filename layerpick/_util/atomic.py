"""Making files and folders appear whole or not at all, with the permissions the user's umask gives.

Owns every way layerpick publishes what it writes: a file written beside its target under a unique name and
renamed over it (`write_text_atomic`), a folder filled under a temporary name beside its target and renamed
into place (`atomic_directory`), and a staging folder whose files replace a target's one by one
(`staging_directory` + `commit_files`). Before anything becomes visible:

- permissions follow the umask like any file the user creates (`tempfile` makes 0600 files and 0700
  folders, and transformers saves weights 0600; another user serving an export must be able to read it);
- an interrupt the user asked for is honoured even if a library swallowed its KeyboardInterrupt
  (`layerpick._util.interrupt.check`), so an interrupted command never commits a result.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from layerpick._util import interrupt

WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}


def current_umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # POSIX has no getter: set and restore at once
    os.umask(mask)
    return mask


def follow_umask(path: Path) -> None:
    """Give `path` (and everything under it, links not followed) the mode a plain create would: 0666 for
    files (0777 for executables) and 0777 for folders, less the umask."""
    mask = current_umask()
    path = Path(path)
    for item in [path, *(path.rglob("*") if path.is_dir() and not path.is_symlink() else ())]:
        mode = item.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        wanted = 0o777 if stat.S_ISDIR(mode) or mode & 0o111 else 0o666
        os.chmod(item, wanted & ~mask)


def publish(path: Path) -> None:
    """The last step before `path` becomes visible: umask permissions, and a pending interrupt honoured."""
    follow_umask(path)
    interrupt.check()


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write; when the block succeeds it replaces `path` in one rename.
    An interrupted or failed write leaves the old file (or none)."""
    path = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        publish(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename; an interrupted write leaves the old file (or none)."""
    with atomic_file(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


@contextmanager
def staging_directory(target: Path) -> Iterator[Path]:
    """An empty folder beside `target` (same file system, so renames are atomic), removed on exit; parents of
    `target` that this creates are removed again when the block fails."""
    target = Path(target)
    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    done = False
    try:
        yield staging
        done = True
    except OSError as error:
        if _written_under(error, staging):  # a full disk mid-write: name the user's path, not the staging one
            from layerpick._util.outputs import OutputLocationError

            raise OutputLocationError(f"cannot write {target}: {error.strerror or error}") from error
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if not done:
            for parent in created:  # innermost first
                _remove_if_empty(parent)


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty folder to fill; when the block succeeds it replaces `target` in one rename (an older
    `target` is removed only after the new one is in place). On failure or interrupt nothing changes."""
    target = Path(target)
    with staging_directory(target) as work:
        built = work / "result"
        built.mkdir()
        yield built
        publish(built)
        swap_into_place(built, target, work / "previous")


def commit_files(staging: Path, target: Path, names: Iterable[str]) -> list[Path]:
    """Move `names` from `staging` into the existing folder `target`, each by an atomic rename, in order."""
    publish(staging)
    moved = []
    for name in names:
        os.replace(staging / name, target / name)
        moved.append(target / name)
    return moved


def swap_into_place(built: Path, target: Path, previous: Path) -> None:
    """Rename `built` to `target`; an existing `target` is first moved to `previous` (same file system), and
    put back if the rename fails."""
    if target.exists() or target.is_symlink():
        target.rename(previous)
    try:
        built.rename(target)
    except BaseException:
        if previous.exists():
            previous.rename(target)
        raise


def _written_under(error: OSError, folder: Path) -> bool:
    names = [name for name in (error.filename, getattr(error, "filename2", None)) if name]
    return error.errno in WRITE_ERRNOS and any(str(name).startswith(str(folder)) for name in names)


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
