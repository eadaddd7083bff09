"""Small task folders of every kind written into tmp dirs, and a tiny model standing in for a real one."""

from __future__ import annotations

import json
from pathlib import Path

WORDS = (
    "the quick brown fox jumps over lazy dog layer selection model cut blocks faster serve embeddings "
    "sentences questions answers numbers"
).split()


def sentence(i: int, n: int = 5) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(n + i % 4))


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def sts_folder(root: Path, name: str = "sts", n: int = 14) -> Path:
    write_jsonl(
        root / name / "test.jsonl",
        [{"sentence1": sentence(i), "sentence2": sentence(i * 3 + 1), "score": float(i % 5)} for i in range(n)],
    )
    return root / name


def classification_folder(root: Path, name: str = "cls") -> Path:
    write_jsonl(root / name / "train.jsonl", [{"text": sentence(i), "label": i % 3} for i in range(36)])
    write_jsonl(root / name / "test.jsonl", [{"text": sentence(i + 50), "label": i % 3} for i in range(15)])
    return root / name


def pair_folder(root: Path, name: str = "pairs") -> Path:
    write_jsonl(
        root / name / "test.jsonl",
        [{"sentence1": sentence(i), "sentence2": sentence(i + i % 2), "label": i % 2} for i in range(16)],
    )
    return root / name


def clustering_folder(root: Path, name: str = "clusters") -> Path:
    write_jsonl(
        root / name / "test.jsonl",
        [
            {"sentences": [sentence(i) for i in range(24)], "labels": [f"c{i % 4}" for i in range(24)]},
            {"sentences": [sentence(i + 40) for i in range(12)], "labels": [f"c{i % 3}" for i in range(12)]},
        ],
    )
    return root / name


def retrieval_folder(root: Path, name: str = "retrieval") -> Path:
    folder = root / name
    write_jsonl(
        folder / "corpus.jsonl", [{"_id": f"d{i}", "title": f"doc {i}", "text": sentence(i, 8)} for i in range(30)]
    )
    write_jsonl(folder / "queries.jsonl", [{"_id": f"q{i}", "text": sentence(i * 3, 3)} for i in range(10)])
    (folder / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{(i * 3) % 30}\t1\n" for i in range(10))
    )
    return folder


ALL_KINDS = {
    "sts": sts_folder,
    "classification": classification_folder,
    "pair-classification": pair_folder,
    "clustering": clustering_folder,
    "retrieval": retrieval_folder,
}


def failing_classification(root: Path, monkeypatch) -> Path:
    """A classification folder named 'broken' whose evaluation fails (the folder checks refuse data that cannot
    be scored, so the evaluator's failure is injected, as an unexpected error inside mteb would arrive)."""
    from layerpick.validation import evaluate as evaluation

    folder = classification_folder(root, "broken")
    evaluate = evaluation._evaluate

    def failing(setup, layer, task, cache):
        if task.metadata.name == "broken":
            raise ValueError("This solver needs samples of at least 2 classes in the data")
        return evaluate(setup, layer, task, cache)

    monkeypatch.setattr(evaluation, "_evaluate", failing)
    return folder
