"""Calibration texts: load from a source, clean, deduplicate, take a seeded sample.

Sources: the embedded default set (no argument), a text file with one text per line, a JSONL file (one
object per line, the text in `field`), or a local task folder in MTEB-like layout (texts are read from its
test split, or its corpus and queries for retrieval).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from layerpick._util.jsonl import JsonlError, read_objects
from layerpick.errors import CalibrationError

EMBEDDED = "embedded"
TASK_TEXT_FIELDS = ("text", "sentence1", "sentence2", "sentences")


@dataclass(frozen=True)
class CalibrationSet:
    texts: list[str]
    source: str

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for text in self.texts:
            digest.update(text.encode("utf-8") + b"\n")
        return digest.hexdigest()

    def describe(self) -> dict:
        return {"source": self.source, "count": len(self.texts), "sha256": self.sha256}


def load_calibration(
    source: str | Path | None = None, *, field: str | None = None, limit: int | None = None, seed: int = 0
) -> CalibrationSet:
    """Texts from `source` (the embedded set when None), cleaned, deduplicated, optionally sampled."""
    if limit is not None and limit < 1:
        raise CalibrationError(f"--limit must be at least 1 (got {limit})")
    raw, name = _read_source(source, field)
    texts = clean(raw)
    if not texts:
        raise CalibrationError(f"calibration source {name} contains no texts")
    if limit is not None and limit < len(texts):
        keep = sorted(random.Random(seed).sample(range(len(texts)), limit))
        texts = [texts[i] for i in keep]
    return CalibrationSet(texts, name)


def clean(texts: list[str]) -> list[str]:
    """Strip whitespace, drop blanks, remove duplicates (first occurrence kept, order preserved)."""
    seen: set[str] = set()
    out = []
    for text in texts:
        text = text.strip()
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _read_source(source: str | Path | None, field: str | None) -> tuple[list[str], str]:
    if source is None or str(source) == EMBEDDED:
        data = resources.files("layerpick").joinpath("data/calibration.txt").read_text(encoding="utf-8")
        return data.splitlines(), EMBEDDED
    path = Path(source).expanduser()
    if path.is_dir():
        return _read_task_folder(path), str(path)
    if not path.is_file():
        raise CalibrationError(f"calibration file not found: {path}")
    if path.suffix == ".jsonl":
        return _read_jsonl_field(path, field or "text"), str(path)
    return _read_text(path).splitlines(), str(path)


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CalibrationError(f"{path} is not valid UTF-8 (byte {error.start})") from None


def _read_jsonl(path: Path) -> list[dict]:
    try:
        return [row for _, row in read_objects(path)]
    except JsonlError as error:
        raise CalibrationError(str(error)) from None


def _read_jsonl_field(path: Path, field: str) -> list[str]:
    rows = _read_jsonl(path)
    missing = [i for i, row in enumerate(rows, start=1) if not isinstance(row.get(field), str)]
    if missing:
        keys = sorted(rows[missing[0] - 1].keys())
        raise CalibrationError(
            f"{path}: line {missing[0]} has no text field {field!r} (its fields: {', '.join(keys)}); use --field"
        )
    return [row[field] for row in rows]


def _read_task_folder(path: Path) -> list[str]:
    files = [path / "test.jsonl"] if (path / "test.jsonl").is_file() else []
    files += [p for p in (path / "queries.jsonl", path / "corpus.jsonl") if p.is_file()]
    if not files:
        raise CalibrationError(f"{path} is not a task folder: no test.jsonl, queries.jsonl or corpus.jsonl")
    texts: list[str] = []
    for file in files:
        for row in _read_jsonl(file):
            texts.extend(_row_texts(row))
    return texts


def _row_texts(row: dict) -> list[str]:
    out = []
    for key in TASK_TEXT_FIELDS:
        value = row.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str))
    return out
