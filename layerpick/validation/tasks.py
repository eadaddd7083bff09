"""Task resolution: `--tasks` items (MTEB task names, MTEB benchmark names, local folders) -> TaskSpecs.

A TaskSpec hands out a fresh, data-loaded mteb task for every evaluation (`new_task()`), so no random state or
in-place change carries over from one layer's evaluation to the next; the data itself is read once.
Hub-backed tasks download on first use (normal mteb loading); folders never touch the network.
"""

from __future__ import annotations

import copy
import difflib
import logging
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Sequence

import mteb
from mteb.abstasks import AbsTask
from mteb.abstasks.aggregated_task import AbsTaskAggregate
from mteb.abstasks.retrieval import AbsTaskRetrieval

from layerpick.validation import inject
from layerpick.validation.errors import TaskFormatError, TaskNotFoundError
from layerpick.validation.folders import FolderData, is_task_folder, read_folder

logger = logging.getLogger(__name__)


@dataclass
class TaskSpec:
    """One task to validate: its name, type and main score, and where its data comes from."""

    name: str
    type: str
    main_score: str
    origin: str  # "mteb" (hub data), "mteb+folder" (MTEB task, local data), "folder" (custom task)
    folder: Path | None
    dataset_revision: str
    _make: Callable[[], AbsTask] = field(repr=False)
    notes: list[str] = field(default_factory=list)

    def new_task(self) -> AbsTask:
        """A fresh task instance with its data in place, ready for `mteb.evaluate`."""
        with quiet_mteb():
            return self._make()

    @property
    def is_retrieval(self) -> bool:
        """Whether the task encodes documents apart from queries (retrieval, reranking)."""
        return "Retrieval" in self.type or "Reranking" in self.type

    def describe(self) -> dict:
        return {
            "type": self.type,
            "main_score_name": self.main_score,
            "origin": self.origin,
            "folder": str(self.folder) if self.folder else None,
            "dataset_revision": self.dataset_revision,
            "notes": list(self.notes),
        }


def split_items(text: str) -> list[str]:
    """Split a comma-separated --tasks value, keeping commas inside parentheses ('MTEB(eng, v2)') and inside a
    path that exists ('data/a,b': a value, or a run of its comma-separated parts, naming one is taken whole)."""
    parts = _split_commas(text)
    items, start = [], 0
    while start < len(parts):
        end = _longest_path(parts, start)
        items.append(",".join(parts[start:end]))
        start = end
    return [item.strip() for item in items if item.strip()]


def _split_commas(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return parts + [current]


def _longest_path(parts: list[str], start: int) -> int:
    """The end of the longest run of parts from `start` that, joined by commas, names an existing path
    (start + 1 when none of two parts or more does)."""
    for end in range(len(parts), start + 1, -1):
        joined = ",".join(parts[start:end]).strip()
        if joined and Path(joined).expanduser().exists():
            return end
    return start + 1


def resolve_tasks(items: Sequence[str], data_dirs: Sequence[Path] = ()) -> list[TaskSpec]:
    """Resolve every item up front, so a typo fails before any model is loaded; duplicates are dropped."""
    specs: dict[str, TaskSpec] = {}
    for item in items:
        for spec in _resolve_item(item, [Path(d) for d in data_dirs]):
            if spec.name in specs:
                logger.warning("task %s given twice; keeping the first", spec.name)
                continue
            specs[spec.name] = spec
    if not specs:
        raise TaskNotFoundError("no tasks given (use --tasks NAME,FOLDER,...)")
    return list(specs.values())


def folder_spec(path: Path, template: Callable[[], AbsTask] | None = None) -> TaskSpec:
    """A folder: the MTEB task it is named after with the folder's data, or a custom task of its kind."""
    data = read_folder(path)
    if template is None:
        template = _mteb_template(path.name)
    if template is None:
        return _custom_spec(data)
    return _mteb_folder_spec(data, template)


def _resolve_item(item: str, data_dirs: list[Path]) -> list[TaskSpec]:
    path = Path(item).expanduser()
    if path.is_dir():
        if not is_task_folder(path):
            raise TaskFormatError(f"{path} matches no task format (no .jsonl files, no subset subfolders)")
        return [folder_spec(path)]
    template = _mteb_template(item)
    if template is not None:
        return [_named_spec(template, data_dirs)]
    benchmark = _benchmark(item)
    if benchmark is not None:
        return [_named_spec(_copier(task), data_dirs) for task in benchmark.tasks]
    if _looks_like_path(item):
        raise TaskNotFoundError(f"task folder not found: {item}")
    raise TaskNotFoundError(_did_you_mean(item))


def _named_spec(template: Callable[[], AbsTask], data_dirs: list[Path]) -> TaskSpec:
    name = template().metadata.name
    for directory in data_dirs:
        if (directory / name).is_dir():
            return folder_spec(directory / name, template)
    return _hub_spec(template)


def _mteb_folder_spec(data: FolderData, template: Callable[[], AbsTask]) -> TaskSpec:
    probe = template()
    name, kind = probe.metadata.name, inject.kind_of_task(probe)
    if kind != data.kind:
        raise TaskFormatError(
            f"{data.path}: {name} is a {probe.metadata.type} task but the folder holds {data.kind} data"
        )
    subsets = inject.subset_map(probe, data)
    splits = [s for s in probe.eval_splits if s in data.splits]
    notes = _split_notes(probe, data, splits)
    built: dict = {}

    def make() -> AbsTask:
        task = template().filter_languages(None, hf_subsets=list(subsets.values()))
        task.filter_eval_splits(splits)
        task.metadata = _local_metadata(task, data.revision)
        if not built:
            built.update(inject.build_dataset(task, data, subsets))
        task.dataset, task.data_loaded = inject.fresh_copy(built), True
        return task

    return TaskSpec(
        name, probe.metadata.type, probe.metadata.main_score, "mteb+folder", data.path, data.revision, make, notes
    )


def _split_notes(task: AbsTask, data: FolderData, splits: list[str]) -> list[str]:
    if not splits:
        raise TaskFormatError(
            f"{data.path}: none of {task.metadata.name}'s eval splits ({', '.join(task.eval_splits)}) is in the folder"
        )
    train = getattr(task, "train_split", None)
    if inject.kind_of_task(task) == "classification" and train not in data.splits:
        raise TaskFormatError(f"{data.path}: {task.metadata.name} trains on {train}.jsonl, which is missing")
    missing = [s for s in task.eval_splits if s not in splits]
    notes = [f"folder lacks eval split(s) {', '.join(missing)}; evaluated {', '.join(splits)}"] if missing else []
    if task.superseded_by:
        notes.append(f"superseded in mteb by {task.superseded_by}")
    return notes


def _custom_spec(data: FolderData) -> TaskSpec:
    cls = inject.custom_task_class(data, data.path.name)
    built: dict = {}

    def make() -> AbsTask:
        task = cls()
        if not built:
            built.update(inject.build_dataset(task, data, {s: s for s in data.subsets}))
        task.dataset, task.data_loaded = inject.fresh_copy(built), True
        return task

    meta = cls.metadata
    return TaskSpec(
        meta.name,
        meta.type,
        meta.main_score,
        "folder",
        data.path,
        data.revision,
        make,
        [f"custom {data.kind} task (not an MTEB task)"],
    )


def _hub_spec(template: Callable[[], AbsTask]) -> TaskSpec:
    probe = template()
    meta = probe.metadata
    loaded: list = []

    def make() -> AbsTask:
        task = template()
        if isinstance(task, AbsTaskAggregate):
            return task  # mteb loads each sub-task itself
        if not loaded:
            loaded.append(download_task_data(task))
        task.dataset, task.data_loaded = inject.fresh_copy(loaded[0]), True
        return task

    notes = [f"superseded in mteb by {probe.superseded_by}"] if probe.superseded_by else []
    return TaskSpec(meta.name, meta.type, meta.main_score, "mteb", None, meta.revision, make, notes)


def download_task_data(task: AbsTask):
    try:
        task.load_data()
    except Exception as error:  # noqa: BLE001 - any hub/network failure becomes one clear line
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TaskFormatError(
            f"could not load {task.metadata.name} from the Hugging Face hub ({first}); "
            f"offline, pass a local folder named {task.metadata.name} (see `layerpick validate --help`)"
        ) from error
    if isinstance(task, AbsTaskRetrieval):
        task.convert_v1_dataset_format_to_v2(num_proc=None)
    return task.dataset


def _local_metadata(task: AbsTask, revision: str):
    dataset = {**task.metadata.dataset, "revision": revision}
    return task.metadata.model_copy(update={"dataset": dataset})


def _mteb_template(name: str) -> Callable[[], AbsTask] | None:
    try:
        with quiet_mteb():
            task = mteb.get_task(name)
    except KeyError:
        return None
    return lambda: mteb.get_task(task.metadata.name)


def _copier(task: AbsTask) -> Callable[[], AbsTask]:
    return lambda: copy.deepcopy(task)


def _benchmark(name: str):
    try:
        with quiet_mteb():
            return mteb.get_benchmark(name)
    except (KeyError, ValueError):
        return None


def _did_you_mean(item: str) -> str:
    candidates = all_task_names() + all_benchmark_names()
    lowered = {c.lower(): c for c in candidates}
    matches = [lowered[item.lower()]] if item.lower() in lowered else []
    matches += difflib.get_close_matches(item, candidates, n=3, cutoff=0.6)
    suggestion = f"; did you mean {' or '.join(dict.fromkeys(matches))}?" if matches else ""
    return f"unknown task {item!r}: no MTEB task, MTEB benchmark or folder of that name{suggestion}"


@lru_cache(maxsize=1)
def _task_names() -> tuple[str, ...]:
    with quiet_mteb():
        tasks = mteb.get_tasks(exclude_superseded=False, exclude_beta=False, exclude_private=False)
    return tuple(sorted({t.metadata.name for t in tasks}))


def all_task_names() -> list[str]:
    return list(_task_names())


def all_benchmark_names() -> list[str]:
    with quiet_mteb():
        return [b.name for b in mteb.get_benchmarks()]


def _looks_like_path(item: str) -> bool:
    return item.startswith((".", "/", "~")) or bool(re.search(r"[\\/]", item))


@contextmanager
def quiet_mteb() -> Iterator[None]:
    """mteb warns (logger and warnings) about superseded and beta tasks; layerpick records those as notes."""
    mteb_logger = logging.getLogger("mteb")
    level = mteb_logger.level
    mteb_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        mteb_logger.setLevel(level)
