"""Write MTEB tasks into local task folders (the format `folders` reads), for machines without internet.

`materialize_tasks` downloads each task the normal mteb way (needs the Hugging Face hub) and writes the rows
it evaluates, after mteb's own dataset transform; `write_task_folder` does the writing for any loaded task,
so a folder read back by `validate` gives the same evaluation. A multi-subset task gets one subfolder per
subset; a task whose only subset is 'default' is written flat.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any, Iterable, Sequence

from mteb.abstasks import AbsTask
from mteb.abstasks.clustering_legacy import AbsTaskClusteringLegacy

from layerpick._util.atomic import atomic_directory
from layerpick.validation import inject
from layerpick.validation.errors import TaskFormatError
from layerpick.validation.tasks import quiet_mteb, resolve_tasks

logger = logging.getLogger(__name__)


def materialize_tasks(names: Sequence[str], output_dir: Path, *, overwrite: bool = False) -> list[Path]:
    """Download MTEB tasks (names or benchmarks) and write each as `output_dir/<task name>/`."""
    written = []
    for spec in resolve_tasks(names):
        if spec.origin != "mteb":
            raise TaskFormatError(f"{spec.name} is already a local folder ({spec.folder})")
        task = spec.new_task()  # downloads the data the normal mteb way
        written.append(write_task_folder(task, Path(output_dir) / spec.name, overwrite=overwrite))
    return written


def write_task_folder(task: AbsTask, folder: Path, *, overwrite: bool = False) -> Path:
    """Write a loaded task's evaluated rows as a task folder (atomic: built beside `folder`, then renamed)."""
    with quiet_mteb():
        kind = inject.kind_of_task(task)
    if not task.data_loaded or task.dataset is None:
        raise TaskFormatError(f"{task.metadata.name}: load its data before writing it")
    folder = Path(folder)
    if folder.exists() and not overwrite:
        raise TaskFormatError(f"{folder} exists (pass overwrite to replace it)")
    with atomic_directory(folder) as work:
        subsets = list(task.hf_subsets)
        for subset in subsets:
            target = work if subsets == ["default"] else work / subset
            target.mkdir(exist_ok=True)
            _WRITERS[kind](task, _subset_data(task, subset), target)
    return folder


def _subset_data(task: AbsTask, subset: str) -> Any:
    dataset = task.dataset
    return dataset[subset] if subset in dataset else dataset  # single-subset hub tasks hold splits at the top


def _write_classification(task, data, folder: Path) -> None:
    text, label = inject.text_column(task.input_column_name), task.label_column_name
    for split in dict.fromkeys([task.train_split, *task.eval_splits]):
        rows = data[split]
        _write_jsonl(folder / f"{split}.jsonl", ({"text": t, "label": y} for t, y in zip(rows[text], rows[label])))


def _write_sts(task, data, folder: Path) -> None:
    first, second = (inject.text_column(c) for c in task.column_names)
    for split in task.eval_splits:
        rows = data[split]
        _write_jsonl(
            folder / f"{split}.jsonl",
            ({"sentence1": a, "sentence2": b, "score": s} for a, b, s in zip(rows[first], rows[second], rows["score"])),
        )


def _write_pairs(task, data, folder: Path) -> None:
    first, second = inject.text_column(task.input1_column_name), inject.text_column(task.input2_column_name)
    for split in task.eval_splits:
        rows = data[split]
        if len(rows) == 1:  # mteb v1 layout: one row holding the lists
            rows = rows[0]
        _write_jsonl(
            folder / f"{split}.jsonl",
            (
                {"sentence1": a, "sentence2": b, "label": int(y)}
                for a, b, y in zip(rows[first], rows[second], rows[task.label_column_name])
            ),
        )


def _write_clustering(task, data, folder: Path) -> None:
    text, label = inject.text_column(task.input_column_name), task.label_column_name
    for split in task.eval_splits:
        rows = data[split]
        if isinstance(task, AbsTaskClusteringLegacy):
            sets = ({"sentences": s, "labels": y} for s, y in zip(rows[text], rows[label]))
        else:  # one document per row: written as a single cluster set
            sets = [{"sentences": list(rows[text]), "labels": list(rows[label])}]
        _write_jsonl(folder / f"{split}.jsonl", sets)


def _write_retrieval(task, data, folder: Path) -> None:
    splits = list(task.eval_splits)
    corpus, queries = {}, {}
    for split in splits:
        part = data[split]
        if part.get("top_ranked"):
            raise TaskFormatError(f"{task.metadata.name}: reranking data (top_ranked) has no folder format")
        for row in part["corpus"]:
            corpus.setdefault(
                str(row["id"]), {"_id": str(row["id"]), "title": row.get("title") or "", "text": row["text"]}
            )
        for row in part["queries"]:
            queries.setdefault(str(row["id"]), {"_id": str(row["id"]), "text": _query_text(row)})
        target = folder / "qrels.tsv" if splits == ["test"] else folder / "qrels" / f"{split}.tsv"
        _write_qrels(target, part["relevant_docs"])
    _write_jsonl(folder / "corpus.jsonl", corpus.values())
    _write_jsonl(folder / "queries.jsonl", queries.values())


def _query_text(row: dict) -> str:
    if not isinstance(row.get("text"), str):
        raise TaskFormatError("only plain-text queries can be written (no conversations or images)")
    return row["text"]


def _write_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["query-id", "corpus-id", "score"])
        for query, docs in qrels.items():
            for doc, score in docs.items():
                writer.writerow([query, doc, int(score)])


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


_WRITERS = {
    "classification": _write_classification,
    "sts": _write_sts,
    "pair-classification": _write_pairs,
    "clustering": _write_clustering,
    "retrieval": _write_retrieval,
}
