"""Local folder data -> the in-memory datasets mteb task classes evaluate, and custom tasks for other folders.

A folder named after an MTEB task keeps that task's class and metadata (protocol, splits, main score); only its
data comes from the folder, and its dataset revision becomes the folder's content hash. Any other folder gets
a custom task built on mteb's abstract task of the folder's kind.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from mteb.abstasks import AbsTask
from mteb.abstasks.classification import AbsTaskClassification
from mteb.abstasks.clustering import AbsTaskClustering
from mteb.abstasks.clustering_legacy import AbsTaskClusteringLegacy
from mteb.abstasks.pair_classification import AbsTaskPairClassification
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
from mteb.abstasks.sts import AbsTaskSTS
from mteb.abstasks.task_metadata import TaskMetadata

from layerpick.validation.errors import TaskFormatError
from layerpick.validation.folders import FolderData

logger = logging.getLogger(__name__)

KIND_OF_TYPE = {
    "Classification": "classification",
    "STS": "sts",
    "PairClassification": "pair-classification",
    "Clustering": "clustering",
    "Retrieval": "retrieval",
}
TYPE_OF_KIND = {kind: task_type for task_type, kind in KIND_OF_TYPE.items()}
MAIN_SCORE = {
    "classification": "accuracy",
    "sts": "cosine_spearman",
    "pair-classification": "max_ap",
    "clustering": "v_measure",
    "retrieval": "ndcg_at_10",
}
_BASES = {
    "classification": AbsTaskClassification,
    "sts": AbsTaskSTS,
    "pair-classification": AbsTaskPairClassification,
    "clustering": AbsTaskClusteringLegacy,
    "retrieval": AbsTaskRetrieval,
}
DEFAULT_LANGUAGE = "eng-Latn"


def kind_of_task(task: AbsTask) -> str:
    """The folder kind an MTEB task can read from, or a TaskFormatError for task types folders cannot hold."""
    kind = KIND_OF_TYPE.get(task.metadata.type)
    bases = (AbsTaskClustering, AbsTaskClusteringLegacy) if kind == "clustering" else _BASES.get(kind)
    if kind is None or not isinstance(task, bases):
        raise TaskFormatError(
            f"{task.metadata.name} is a {task.metadata.type} task; local folders hold only "
            f"{', '.join(KIND_OF_TYPE)} tasks"
        )
    return kind


def subset_map(task: AbsTask, data: FolderData) -> dict[str, str]:
    """Folder subset -> task subset. A flat folder feeds 'default', else 'en', else the task's only subset."""
    available = list(task.metadata.hf_subsets)
    if list(data.subsets) == ["default"]:
        for candidate in ("default", "en"):
            if candidate in available:
                return {"default": candidate}
        if len(available) == 1:
            return {"default": available[0]}
        raise TaskFormatError(
            f"{data.path}: {task.metadata.name} has subsets {', '.join(available)}; "
            "put each in a subfolder named after it"
        )
    unknown = [s for s in data.subsets if s not in available]
    if unknown:
        raise TaskFormatError(
            f"{data.path}: {task.metadata.name} has no subset {unknown[0]!r} (subsets: {', '.join(available)})"
        )
    return {s: s for s in data.subsets}


def build_dataset(task: AbsTask, data: FolderData, subsets: dict[str, str]) -> dict[str, Any]:
    """The `task.dataset` mteb would hold after loading: {subset: {split: data}} with the task's column names."""
    builder = _BUILDERS[data.kind]
    dataset: dict[str, Any] = {}
    for folder_subset, task_subset in subsets.items():
        splits = data.subsets[folder_subset]
        built = {split: builder(task, rows) for split, rows in splits.items()}
        dataset[task_subset] = built if data.kind == "retrieval" else DatasetDict(built)
    return dataset


def fresh_copy(dataset: dict[str, Any]) -> dict[str, Any]:
    """A copy whose retrieval split dicts can be mutated by one evaluation without touching the next."""
    if isinstance(dataset, DatasetDict):
        return dataset
    copy: dict[str, Any] = {}
    for subset, splits in dataset.items():
        if isinstance(splits, DatasetDict) or not isinstance(splits, dict):
            copy[subset] = splits  # datasets are immutable; evaluations derive new ones
        else:
            copy[subset] = {split: dict(value) if isinstance(value, dict) else value for split, value in splits.items()}
    return copy


def custom_task_class(data: FolderData, name: str) -> type[AbsTask]:
    """An mteb task class of the folder's kind whose metadata describes the folder."""
    options = data.options
    subsets = list(data.subsets)
    languages = options.get("eval_langs", [DEFAULT_LANGUAGE])
    if len(subsets) > 1 and not isinstance(languages, dict):
        languages = {subset: list(languages) for subset in subsets}
    metadata = TaskMetadata(
        name=name,
        description=options.get("description", f"Local {data.kind} task read from {data.path}"),
        dataset={"path": str(Path(data.path).resolve()), "revision": data.revision},
        type=TYPE_OF_KIND[data.kind],
        category="t2c" if data.kind == "classification" else "t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs=languages,
        main_score=options.get("main_score", MAIN_SCORE[data.kind]),
    )
    attributes: dict[str, Any] = {"metadata": metadata, "__module__": __name__}
    if data.kind == "sts":
        scores = [row["score"] for splits in data.subsets.values() for rows in splits.values() for row in rows]
        attributes.update(min_score=min(scores), max_score=max(scores))
    return type(f"Local{TYPE_OF_KIND[data.kind]}Task", (_BASES[data.kind],), attributes)


def _classification(task: AbsTaskClassification, rows: list[dict]) -> Dataset:
    labels = [row["label"] for row in rows]
    if len({type(label) for label in labels}) > 1:
        raise TaskFormatError(f"{task.metadata.name}: labels mix ints and strings")
    return Dataset.from_dict(
        {text_column(task.input_column_name): [row["text"] for row in rows], task.label_column_name: labels}
    )


def _sts(task: AbsTaskSTS, rows: list[dict]) -> Dataset:
    first, second = (text_column(name) for name in task.column_names)
    return Dataset.from_dict(
        {
            first: [r["sentence1"] for r in rows],
            second: [r["sentence2"] for r in rows],
            "score": [r["score"] for r in rows],
        }
    )


def _pairs(task: AbsTaskPairClassification, rows: list[dict]) -> Dataset:
    return Dataset.from_dict(
        {
            text_column(task.input1_column_name): [r["sentence1"] for r in rows],
            text_column(task.input2_column_name): [r["sentence2"] for r in rows],
            task.label_column_name: [r["label"] for r in rows],
        }
    )


def _clustering(task: AbsTask, rows: list[dict]) -> Dataset:
    text, label = text_column(task.input_column_name), task.label_column_name
    rows = _uniform_labels(rows)
    if isinstance(task, AbsTaskClusteringLegacy):
        return Dataset.from_dict({text: [r["sentences"] for r in rows], label: [r["labels"] for r in rows]})
    return Dataset.from_dict(
        {text: [s for r in rows for s in r["sentences"]], label: [lab for r in rows for lab in r["labels"]]}
    )


def _uniform_labels(rows: list[dict]) -> list[dict]:
    """Cluster labels are categories: when sets mix ints and strings, all become strings (v-measure is unchanged)."""
    kinds = {type(label) for row in rows for label in row["labels"]}
    if len(kinds) <= 1 or list in kinds:
        return rows
    return [{"sentences": row["sentences"], "labels": [str(label) for label in row["labels"]]} for row in rows]


def _retrieval(task: AbsTaskRetrieval, split: dict) -> RetrievalSplitData:
    qrels = split["qrels"]
    corpus = Dataset.from_dict(
        {
            "id": [d["_id"] for d in split["corpus"]],
            "title": [d["title"] for d in split["corpus"]],
            "text": [d["text"] for d in split["corpus"]],
        }
    )
    queries = [q for q in split["queries"] if q["_id"] in qrels]  # as mteb's loader: queries with judgements
    return RetrievalSplitData(
        corpus=corpus,
        queries=Dataset.from_dict({"id": [q["_id"] for q in queries], "text": [q["text"] for q in queries]}),
        relevant_docs={qid: dict(docs) for qid, docs in qrels.items()},
        top_ranked=None,
    )


def text_column(name: Any) -> str:
    if not isinstance(name, str):
        raise TaskFormatError(f"multimodal input columns {name!r} cannot come from a text folder")
    return name


_BUILDERS = {
    "classification": _classification,
    "sts": _sts,
    "pair-classification": _pairs,
    "clustering": _clustering,
    "retrieval": _retrieval,
}
