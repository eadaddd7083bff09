"""Local task folders: detect which kind of task a folder holds, read it, and check it.

A task folder holds the rows a task evaluates (after MTEB's own dataset transform), one JSON object per line,
UTF-8. The kind is implied by the files and their fields:

| kind | files | fields per line |
|---|---|---|
| classification | `train.jsonl`, `test.jsonl` (+ `validation.jsonl`) | `text`, `label` (int or str) |
| sts | `test.jsonl` | `sentence1`, `sentence2`, `score` (any numeric scale) |
| pair-classification | `test.jsonl` | `sentence1`, `sentence2`, `label` (0/1) |
| clustering | `test.jsonl`, one line per cluster set | `sentences` [..], `labels` [..] (same length) |
| retrieval (BEIR layout) | `corpus.jsonl`, `queries.jsonl`, `qrels.tsv` (test) or `qrels/<split>.tsv` | see below |

Retrieval: corpus lines `_id`, `title`, `text`; query lines `_id`, `text`; qrels are tab-separated
`query-id`, `corpus-id`, `score` under that header row. Only queries with judgements are evaluated (as mteb).

A folder that could not give a score is refused here, before any model loads: STS scores that are all equal
(nothing to correlate with), fewer than two pairs, a single training label, qrels none of whose documents are
in the corpus (every score would be 0) or none of whose queries are in the queries file. Qrels that name some
absent ids are kept as mteb scores them (such a document is never retrieved, such a query is not evaluated),
with a one-line warning that counts them.

Each `<split>.jsonl` is a split. A folder named after an MTEB task evaluates that task's eval splits found in
it (and trains on its train split); any other folder is a custom task evaluated on `test`. Other fields are
ignored. A multi-subset task (languages) keeps each subset in a subfolder named after it; a flat folder
feeds the task's 'default' subset, else 'en', else its only subset. The optional `task.json` of a custom
folder may set `eval_langs` (default eng-Latn), `main_score` and `description`.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from layerpick._util.jsonl import JsonlError, json_kind, read_objects, read_optional_json
from layerpick.validation.errors import TaskFormatError

logger = logging.getLogger(__name__)

KINDS = ("classification", "sts", "pair-classification", "clustering", "retrieval")
RETRIEVAL_FILES = ("corpus.jsonl", "queries.jsonl")
TASK_JSON = "task.json"
FORMAT_HINT = (
    "expected test.jsonl with text+label (plus train.jsonl), sentence1+sentence2+score, sentence1+sentence2+label "
    "or sentences+labels, or corpus.jsonl+queries.jsonl+qrels.tsv"
)


@dataclass(frozen=True)
class FolderData:
    """A task folder read into memory: `subsets[subset][split]` holds that split's rows in a kind-specific form.

    Row lists for classification/sts/pair-classification/clustering; for retrieval a dict with `corpus`,
    `queries` (lists of dicts) and `qrels` ({query id: {doc id: score}}). `revision` is a content hash.
    """

    kind: str
    path: Path
    subsets: dict[str, dict[str, Any]]
    revision: str
    options: dict[str, Any]

    @property
    def splits(self) -> list[str]:
        return sorted({split for splits in self.subsets.values() for split in splits})


def is_task_folder(path: Path) -> bool:
    return path.is_dir() and (_has_data_files(path) or any(_has_data_files(p) for p in _subdirs(path)))


def read_folder(path: Path) -> FolderData:
    """Read and check a task folder; a TaskFormatError names the file and line of the first problem."""
    path = Path(path)
    if not path.is_dir():
        raise TaskFormatError(f"task folder not found: {path}")
    if _has_data_files(path):
        subsets = {"default": path}
    else:
        subsets = {p.name: p for p in _subdirs(path) if _has_data_files(p)}
    if not subsets:
        raise TaskFormatError(f"{path} matches no task format ({FORMAT_HINT})")
    kinds = {name: detect_kind(folder) for name, folder in subsets.items()}
    if len(set(kinds.values())) > 1:
        raise TaskFormatError(f"{path}: subfolders hold different kinds of task: {kinds}")
    kind = next(iter(kinds.values()))
    data = {name: _READERS[kind](folder) for name, folder in subsets.items()}
    return FolderData(kind, path, data, folder_revision(path), _task_options(path))


def detect_kind(folder: Path) -> str:
    """The kind of task the files in `folder` imply (see the module docstring)."""
    names = {p.name for p in folder.iterdir() if p.is_file()}
    if any(name in names for name in RETRIEVAL_FILES) or _qrels_files(folder):
        return "retrieval"
    if "test.jsonl" not in names:
        splits = sorted(n[:-6] for n in names if n.endswith(".jsonl"))
        raise TaskFormatError(f"{folder}: no test split (test.jsonl); found splits: {', '.join(splits) or 'none'}")
    keys = set(_first_row(folder / "test.jsonl"))
    if "sentences" in keys or "labels" in keys:
        return "clustering"
    if {"sentence1", "sentence2"} <= keys:
        if "score" in keys:
            return "sts"
        if "label" in keys:
            return "pair-classification"
        raise TaskFormatError(f"{folder / 'test.jsonl'}: pairs without 'score' (STS) or 'label' (pair classification)")
    if "text" in keys:
        if "label" not in keys:
            raise TaskFormatError(f"{folder / 'test.jsonl'}: rows have 'text' but no 'label' (classification)")
        return "classification"
    raise TaskFormatError(f"{folder} matches no task format: test.jsonl has fields {sorted(keys)} ({FORMAT_HINT})")


def folder_revision(path: Path) -> str:
    """A short content hash of every file under `path`: results of different data never mix."""
    digest = hashlib.sha256()
    for file in sorted(p for p in Path(path).rglob("*") if p.is_file() and p.suffix in (".jsonl", ".tsv", ".json")):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return f"local-{digest.hexdigest()[:12]}"


def read_jsonl(path: Path) -> list[dict]:
    rows = [row for _, row in _objects(path)]
    if not rows:
        raise TaskFormatError(f"{path}: no rows")
    return rows


def _objects(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line; a one-line TaskFormatError for anything else."""
    try:
        yield from read_objects(path)
    except JsonlError as error:
        raise TaskFormatError(str(error)) from None


def _read_classification(folder: Path) -> dict[str, list[dict]]:
    if not (folder / "train.jsonl").exists():
        raise TaskFormatError(f"{folder}: classification needs train.jsonl beside test.jsonl")
    splits = {
        split: [_text_label(row, file, n) for n, row in enumerate(read_jsonl(file), 1)]
        for split, file in _split_files(folder).items()
    }
    labels = {row["label"] for row in splits["train"]}
    if len(labels) < 2:
        raise TaskFormatError(
            f"{folder / 'train.jsonl'}: every row has the label {next(iter(labels))!r}; "
            "a classifier needs at least two labels to learn from"
        )
    return splits


def _text_label(row: dict, file: Path, number: int) -> dict:
    return {"text": _text(row, "text", file, number), "label": _label(row, file, number)}


def _read_sts(folder: Path) -> dict[str, list[dict]]:
    splits = {
        split: [_pair(row, "score", file, n) for n, row in enumerate(read_jsonl(file), 1)]
        for split, file in _split_files(folder).items()
    }
    for split, rows in splits.items():
        scores = {row["score"] for row in rows}
        if len(scores) < 2:
            raise TaskFormatError(
                f"{folder / f'{split}.jsonl'}: every row has the score {next(iter(scores)):g}; "
                "STS needs at least two different scores to correlate with"
            )
    return splits


def _read_pairs(folder: Path) -> dict[str, list[dict]]:
    splits = {
        split: [_pair(row, "label", file, n) for n, row in enumerate(read_jsonl(file), 1)]
        for split, file in _split_files(folder).items()
    }
    for split, rows in splits.items():
        if len(rows) < 2:
            raise TaskFormatError(f"{folder / f'{split}.jsonl'}: pair classification needs at least two pairs")
    return splits


def _pair(row: dict, target: str, file: Path, number: int) -> dict:
    value = _score(row, file, number) if target == "score" else _binary_label(row, file, number)
    return {
        "sentence1": _text(row, "sentence1", file, number),
        "sentence2": _text(row, "sentence2", file, number),
        target: value,
    }


def _read_clustering(folder: Path) -> dict[str, list[dict]]:
    return {
        split: [_cluster_set(row, file, n) for n, row in enumerate(read_jsonl(file), 1)]
        for split, file in _split_files(folder).items()
    }


def _cluster_set(row: dict, file: Path, number: int) -> dict:
    sentences, labels = row.get("sentences"), row.get("labels")
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise TaskFormatError(f"{file}:{number}: 'sentences' must be a list of strings")
    if not isinstance(labels, list):
        raise TaskFormatError(f"{file}:{number}: missing 'labels' (a list, one label per sentence)")
    if len(labels) != len(sentences):
        raise TaskFormatError(f"{file}:{number}: {len(sentences)} sentences but {len(labels)} labels")
    return {"sentences": sentences, "labels": labels}


def _read_retrieval(folder: Path) -> dict[str, dict]:
    for name in RETRIEVAL_FILES:
        if not (folder / name).exists():
            raise TaskFormatError(
                f"{folder}: retrieval needs corpus.jsonl, queries.jsonl and qrels.tsv ({name} missing)"
            )
    qrels = _qrels_files(folder)
    if "test" not in qrels:
        raise TaskFormatError(f"{folder}: no test split (qrels.tsv or qrels/test.tsv)")
    corpus_file, queries_file = folder / "corpus.jsonl", folder / "queries.jsonl"
    corpus = [_document(row, corpus_file, n) for n, row in enumerate(read_jsonl(corpus_file), 1)]
    queries = [_query(row, queries_file, n) for n, row in enumerate(read_jsonl(queries_file), 1)]
    ids = {row["_id"] for row in corpus}, {row["_id"] for row in queries}
    return {
        split: {"corpus": corpus, "queries": queries, "qrels": _check_qrels(_read_qrels(file), file, *ids)}
        for split, file in qrels.items()
    }


def _check_qrels(
    qrels: dict[str, dict[str, int]], file: Path, documents: set[str], queries: set[str]
) -> dict[str, dict[str, int]]:
    """Refuse judgements that cannot give a score (no judged document in the corpus, no judged query in the
    queries file); warn, with the counts, about judgements that name some absent ids."""
    judged = {doc for docs in qrels.values() for doc in docs}
    if not judged & documents:
        raise TaskFormatError(
            f"{file}: none of the {len(judged)} documents it judges is in corpus.jsonl "
            f"(e.g. {min(judged)!r}); every score would be 0"
        )
    if not set(qrels) & queries:
        raise TaskFormatError(
            f"{file}: none of the {len(qrels)} queries it judges is in queries.jsonl "
            f"(e.g. {min(qrels)!r}); no query could be evaluated"
        )
    pairs = [(query, doc) for query, docs in qrels.items() for doc in docs]
    absent = [(query, doc) for query, doc in pairs if query not in queries or doc not in documents]
    if absent:
        _warn_once(
            f"{file}: {len(absent)} of {len(pairs)} judgements name ids not in the folder "
            f"({_absent_ids(set(qrels) - queries, judged - documents)})"
        )
    return qrels


def _absent_ids(queries: set[str], documents: set[str]) -> str:
    """'2 queries not in queries.jsonl, not evaluated; 1 document not in corpus.jsonl, never retrieved'."""
    parts = [f"{len(queries)} {'query' if len(queries) == 1 else 'queries'} not in queries.jsonl, not evaluated"]
    parts += [f"{len(documents)} document{'' if len(documents) == 1 else 's'} not in corpus.jsonl, never retrieved"]
    return "; ".join(part for part, count in zip(parts, (queries, documents)) if count)


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    """A warning about a folder's data, once per process (`layerpick run` reads its task folders twice)."""
    if message not in _WARNED:
        _WARNED.add(message)
        logger.warning(message)


def _document(row: dict, file: Path, number: int) -> dict:
    title = row.get("title") or ""
    if not isinstance(title, str):
        raise TaskFormatError(f"{file}:{number}: 'title' must be a string")
    return {"_id": _identifier(row, file, number), "title": title, "text": _text(row, "text", file, number)}


def _query(row: dict, file: Path, number: int) -> dict:
    return {"_id": _identifier(row, file, number), "text": _text(row, "text", file, number)}


def _read_qrels(file: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(file, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:3]] != ["query-id", "corpus-id", "score"]:
            raise TaskFormatError(f"{file}: the first line must be the header 'query-id<TAB>corpus-id<TAB>score'")
        for number, fields in enumerate(reader, 2):
            if not fields:
                continue
            if len(fields) < 3:
                raise TaskFormatError(f"{file}:{number}: expected query-id, corpus-id and score")
            try:
                score = int(float(fields[2]))
            except ValueError:
                raise TaskFormatError(f"{file}:{number}: score {fields[2]!r} is not a number") from None
            qrels.setdefault(fields[0], {})[fields[1]] = score
    if not qrels:
        raise TaskFormatError(f"{file}: no relevance judgements")
    return qrels


def _text(row: dict, key: str, file: Path, number: int) -> str:
    value = row.get(key)
    if key not in row:
        raise TaskFormatError(f"{file}:{number}: missing '{key}' (a string)")
    if not isinstance(value, str):
        raise TaskFormatError(f"{file}:{number}: field '{key}' is {json_kind(value)}, not a string")
    return value


def _label(row: dict, file: Path, number: int) -> int | str:
    value = row.get("label")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TaskFormatError(f"{file}:{number}: missing 'label' (an int or a string)")
    return value


def _binary_label(row: dict, file: Path, number: int) -> int:
    value = row.get("label")
    if value not in (0, 1) or isinstance(value, bool):
        raise TaskFormatError(f"{file}:{number}: 'label' must be 0 or 1 (pair classification), got {value!r}")
    return int(value)


def _score(row: dict, file: Path, number: int) -> float:
    value = row.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TaskFormatError(f"{file}:{number}: missing 'score' (a finite number)")
    return float(value)


def _identifier(row: dict, file: Path, number: int) -> str:
    value = row.get("_id", row.get("id"))
    if value is None or isinstance(value, (dict, list)):
        raise TaskFormatError(f"{file}:{number}: missing '_id'")
    return str(value)


def _split_files(folder: Path) -> dict[str, Path]:
    return {p.name[: -len(".jsonl")]: p for p in sorted(folder.glob("*.jsonl"))}


def _qrels_files(folder: Path) -> dict[str, Path]:
    files = {p.stem: p for p in sorted((folder / "qrels").glob("*.tsv"))} if (folder / "qrels").is_dir() else {}
    if (folder / "qrels.tsv").exists():
        files["test"] = folder / "qrels.tsv"
    return files


def _first_row(file: Path) -> dict:
    for _, row in _objects(file):
        return row
    raise TaskFormatError(f"{file}: no rows")


def _has_data_files(folder: Path) -> bool:
    return any(folder.glob("*.jsonl")) or (folder / "qrels.tsv").exists()


def _subdirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _task_options(path: Path) -> dict[str, Any]:
    file = path / TASK_JSON
    options = read_optional_json(file, TaskFormatError)
    if options is None:
        return {}
    unknown = set(options) - {"eval_langs", "main_score", "description"} if isinstance(options, dict) else {"?"}
    if unknown:
        raise TaskFormatError(f"{file}: only eval_langs, main_score and description may be set (got {sorted(unknown)})")
    return options


_READERS = {
    "classification": _read_classification,
    "sts": _read_sts,
    "pair-classification": _read_pairs,
    "clustering": _read_clustering,
    "retrieval": _read_retrieval,
}
