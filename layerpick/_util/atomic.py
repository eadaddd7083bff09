"""Making files and folders appear whole or not at all, with the permissions the user's umask gives.

Owns every way layerpick publishes what it writes: a file written beside its target under a unique name and
renamed over it (`write_text_atomic`), a folder filled under a temporary name beside its target and renamed
into place (`atomic_directory`), and a staging folder whose files replace a target's one by one
(`staging_directory` + `commit_files`). Before anything becomes visible:

- permissions follow the umask like any file the user creates (`tempfile` makes 0600 files and 0700
  folders, and transformers saves weights 0600; another user serving an export must be able to read it);
- an interrupt the user asked for is honoured even if a library swallowed its KeyboardInterrupt
  (`layerpick._util.interrupt.check`), so an interrupted command never commits a result.

The renames themselves run shielded from interrupts (`interrupt.shielded`) and report what they placed
(`interrupt.placed`), so a command whose output is in place succeeds whatever arrives after. A staging name
carries the process id (`.NAME.partial-PID-XXXX`); a staging folder or temporary file whose process is gone
(killed by SIGKILL, a crash, a power cut) is swept by the next command that stages beside the same target.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from layerpick._util import interrupt
from layerpick._util.numerals import is_ascii_number

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
def atomic_file(path: Path, needed: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write; when the block succeeds it replaces `path` in one rename.
    An interrupted or failed write leaves the old file (or none); one that fails for want of space is a
    DiskFullError naming `path` (and `needed`, the bytes the caller expected to write)."""
    path = Path(path)
    sweep_stale(path)
    handle, name = tempfile.mkstemp(prefix=f"{_stage_prefix(path, 'tmp')}", suffix=".tmp", dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        publish(temporary)
        with interrupt.shielded():
            os.replace(temporary, path)
            interrupt.placed(path)
    except Exception as error:
        _raise_as_disk_full(error, temporary, path, needed)
        raise
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename; an interrupted write leaves the old file (or none)."""
    with atomic_file(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


@contextmanager
def staging_directory(target: Path, needed: int | None = None) -> Iterator[Path]:
    """An empty folder beside `target` (same file system, so renames are atomic), removed on exit; parents of
    `target` that this creates are removed again when the block fails. A write that fails for want of space
    becomes a DiskFullError naming `target` (and `needed`, the bytes the caller expected to write)."""
    target = Path(target)
    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target)
    staging = Path(tempfile.mkdtemp(prefix=_stage_prefix(target, "partial"), dir=target.parent))
    done = False
    try:
        yield staging
        done = True
    except Exception as error:
        _raise_as_disk_full(error, staging, target, needed)
        if isinstance(error, OSError) and _written_under(error, staging):  # name the user's path, not the staging one
            from layerpick._util.output_errors import OutputLocationError

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
    with interrupt.shielded():
        for name in names:
            os.replace(staging / name, target / name)
            moved.append(target / name)
        interrupt.placed(target)
    return moved


def swap_into_place(built: Path, target: Path, previous: Path) -> None:
    """Rename `built` to `target`; an existing `target` is first moved to `previous` (same file system), and
    put back if the rename fails."""
    with interrupt.shielded():
        if target.exists() or target.is_symlink():
            target.rename(previous)
        try:
            built.rename(target)
        except BaseException:
            if previous.exists():
                previous.rename(target)
            raise
        interrupt.placed(target)


def sweep_stale(target: Path) -> list[Path]:
    """Remove the staging folders and temporary files beside `target` whose process is no longer alive (what
    SIGKILL or a crash left); return what was removed."""
    target = Path(target)
    removed = []
    if not target.parent.is_dir():
        return removed
    for kind in ("partial", "tmp"):
        for item in target.parent.glob(f".{glob.escape(target.name)}.{kind}-*"):
            if not _holder_alive(item.name[len(f".{target.name}.{kind}-") :]):
                shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink(missing_ok=True)
                removed.append(item)
    return removed


def _stage_prefix(target: Path, kind: str) -> str:
    return f".{target.name}.{kind}-{os.getpid()}-"


def _holder_alive(rest: str) -> bool:
    """Whether the process named in a staging name's `PID-XXXX` tail still runs (names without a process id,
    from older versions, count as alive: nobody can tell)."""
    pid = rest.split("-", 1)[0]
    if not is_ascii_number(pid):
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _raise_as_disk_full(error: Exception, written: Path, target: Path, needed: int | None) -> None:
    """Raise DiskFullError (naming `target`) when `error` came from a full disk: said so by the error, or seen
    on the file system while the partial files in `written` are still there."""
    from layerpick._util import disk
    from layerpick.errors import LayerpickError

    if isinstance(error, disk.DiskFullError):
        return
    ours = isinstance(error, LayerpickError) and not _wraps_a_library_error(error)  # our own diagnosis stands
    if disk.is_disk_full(error) or (not ours and disk.nearly_full(written)):
        if needed:
            raise disk.DiskFullError(target, needed) from error
        written_bytes = disk.tree_bytes(written) if written.exists() else 0
        if written_bytes:
            raise disk.DiskFullError(target, written_bytes, at_least=True) from error
        raise disk.DiskFullError(target, free=disk.free_bytes(written)) from error  # nothing could be written


def _wraps_a_library_error(error: BaseException) -> bool:
    from layerpick.errors import LayerpickError

    return error.__cause__ is not None and not isinstance(error.__cause__, LayerpickError)


def _written_under(error: OSError, folder: Path) -> bool:
    names = [name for name in (error.filename, getattr(error, "filename2", None)) if name]
    return error.errno in WRITE_ERRNOS and any(str(name).startswith(str(folder)) for name in names)


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
