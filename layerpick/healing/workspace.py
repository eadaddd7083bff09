"""A heal's work folder beside its output (`.NAME.heal`): the cut, the teacher's vectors and the per-epoch
checkpoints, kept while the run is unfinished so that the same command resumes it.

Owns the folder's life: created on the first run, reused by a run with the same settings (`key`), started over
when they changed, removed when the healed export is in place, and removed on a failure that left nothing worth
resuming (no checkpoint), so bad input leaves nothing behind.
"""

from __future__ import annotations

import json
import logging
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

logger = logging.getLogger(__name__)

KEY_FILE = "heal-run.json"
CHECKPOINTS = "checkpoints"
TEXTS_FILE = "texts.sha256"


def work_folder(output: Path) -> Path:
    return output.parent / f".{output.name}.heal"


def has_checkpoint(work: Path) -> bool:
    folder = work / CHECKPOINTS
    return folder.is_dir() and any(path.name.startswith("checkpoint-") for path in folder.iterdir())


@contextmanager
def workspace(output: Path, key: dict[str, Any]) -> Iterator[Path]:
    """The work folder of the heal that writes `output` with settings `key`; see the module docstring."""
    work = work_folder(Path(output))
    created = [p for p in (work.parent, *work.parent.parents) if not p.exists()]
    if work.is_dir() and _read_key(work) != key:
        logger.warning("a heal with other settings left %s: starting over", work)
        shutil.rmtree(work)
    if has_checkpoint(work):
        logger.warning("resuming the heal kept in %s", work)
    work.mkdir(parents=True, exist_ok=True)
    (work / KEY_FILE).write_text(json.dumps(key, indent=2, default=str) + "\n", encoding="utf-8")
    try:
        yield work
    except BaseException:
        if has_checkpoint(work):
            logger.warning("the heal stopped; its checkpoints are kept in %s: run the same command to resume", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
            for parent in created:  # innermost first
                _remove_if_empty(parent)
        raise
    shutil.rmtree(work, ignore_errors=True)


def reset_training(work: Path) -> None:
    """Forget checkpoints made on other texts (the texts' hash changed under the same settings)."""
    shutil.rmtree(work / CHECKPOINTS, ignore_errors=True)


def _read_key(work: Path) -> Any:
    try:
        return json.loads((work / KEY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def settle_texts(work: Path, digest: str) -> None:
    """Record the hash of the texts this run trains on; checkpoints made on other texts are dropped."""
    path = work / TEXTS_FILE
    if path.is_file() and path.read_text(encoding="utf-8").strip() != digest:
        logger.warning("the texts changed since the heal kept in %s was interrupted: training starts over", work)
        reset_training(work)
    path.write_text(digest + "\n", encoding="utf-8")
