"""A heal's work folder beside its output (`.NAME.heal`): the cut, the teacher's vectors and the per-epoch
checkpoints, kept while the run is unfinished so that the same command resumes it.

Owns the folder's life: created on the first run, reused by a run with the same settings (`key`), started over
when they changed, removed when the healed export is in place, and removed on a failure that left nothing worth
resuming (no checkpoint, and no teacher vectors or bad input), so bad input leaves nothing behind. Owns which
checkpoint a run resumes from: the last complete one.
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
STATE_FILE = "trainer_state.json"
VECTORS_FILE = "teacher-vectors.safetensors"


def work_folder(output: Path) -> Path:
    return output.parent / f".{output.name}.heal"


def last_checkpoint(work: Path) -> Path | None:
    """The latest complete checkpoint (the trainer writes trainer_state.json last); a checkpoint cut short by an
    interrupt or a full disk is removed, so the run resumes from the one before it."""
    folder = work / CHECKPOINTS
    found = [path for path in folder.glob("checkpoint-*") if path.is_dir()] if folder.is_dir() else []
    complete = []
    for path in found:
        if (path / STATE_FILE).is_file():
            complete.append(path)
        else:
            logger.warning("removing the incomplete checkpoint %s", path)
            shutil.rmtree(path, ignore_errors=True)
    return max(complete, key=_step, default=None)


def has_checkpoint(work: Path) -> bool:
    return last_checkpoint(work) is not None


def worth_keeping(work: Path, error: BaseException) -> bool:
    """Whether a stopped run leaves something to resume: a checkpoint, or (after an interrupt or a failure that is
    not the user's input) the teacher's vectors."""
    from layerpick.errors import LayerpickError

    computed = (work / VECTORS_FILE).is_file() and not isinstance(error, LayerpickError)
    return has_checkpoint(work) or computed


def _step(path: Path) -> int:
    tail = path.name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else -1


@contextmanager
def workspace(output: Path, key: dict[str, Any]) -> Iterator[Path]:
    """The work folder of the heal that writes `output` with settings `key`; see the module docstring."""
    work = work_folder(Path(output))
    created = [p for p in (work.parent, *work.parent.parents) if not p.exists()]
    kept = _read_key(work) if work.is_dir() else None
    if work.is_dir() and kept != as_json(key):
        logger.warning("a heal with other settings (%s) left %s: starting over", changed_settings(kept, key), work)
        shutil.rmtree(work)
    if has_checkpoint(work):
        logger.warning("resuming the heal kept in %s", work)
    work.mkdir(parents=True, exist_ok=True)
    (work / KEY_FILE).write_text(json.dumps(key, indent=2, default=str) + "\n", encoding="utf-8")
    try:
        yield work
    except BaseException as error:
        if worth_keeping(work, error):
            logger.warning("the heal stopped; its work is kept in %s: run the same command to resume", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
            for parent in created:  # innermost first
                _remove_if_empty(parent)
        raise
    shutil.rmtree(work, ignore_errors=True)


def reset_training(work: Path) -> None:
    """Forget checkpoints made on other texts (the texts' hash changed under the same settings)."""
    shutil.rmtree(work / CHECKPOINTS, ignore_errors=True)


# What a run key's content entries compared, said when they differ (`job.run_key` writes them).
CONTENT_WORDS = {
    "model_content": "the model's files changed: their names, sizes, modification times or small files' bytes, "
    "compared as `run` compares them",
    "texts_content": "the fit texts' bytes changed: another sha256",
}


def changed_settings(kept: Any, key: dict[str, Any]) -> str:
    """Which of `key`'s settings differ from those `kept` (a run key read back, or None), for the user; a content
    entry says what was compared."""
    if not isinstance(kept, dict):
        return "unreadable"
    new = as_json(key)
    names = sorted(name for name in {*kept, *new} if kept.get(name) != new.get(name))
    said = [f"{name}: {CONTENT_WORDS[name]}" if name in CONTENT_WORDS else name for name in names]
    return ", ".join(said) or "none"


def as_json(key: dict[str, Any]) -> Any:
    """`key` as it reads back from its JSON file (tuples as lists, other values as strings)."""
    return json.loads(json.dumps(key, default=str))


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
