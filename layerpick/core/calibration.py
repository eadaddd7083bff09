"""Calibration texts: load from a source, clean, deduplicate, take a seeded sample.

Sources: the embedded default set (no argument), a text file with one text per line, a JSONL file (one
object per line, the text in `field`), or a local task folder in MTEB-like layout (texts are read from its
test split, or its corpus and queries for retrieval).

A source may also be a stream: a pipe or FIFO (`--calibration <(cmd)`, `/dev/stdin`), a character device. A
stream can be read only once, and one command loads its calibration texts several times (the texts, the fit
set drawn from them, a run's input hash), so its bytes are read once per process and kept (`read_source_bytes`);
a stream's lines are texts, or JSONL objects when `field` is given or its name ends in `.jsonl`.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from layerpick._util.jsonl import JsonlError, json_kind, parse_objects, read_objects
from layerpick.errors import CalibrationError

EMBEDDED = "embedded"
# What one text source may hold: `/dev/zero` or a mistyped multi-GB file would otherwise be read until memory runs
# out. Far above a calibration or fit set (thousands of texts) and a corpus to heal on (tens of thousands).
MAX_SOURCE_BYTES = 512 * 2**20
MAX_SOURCE_LINES = 2_000_000
TASK_TEXT_FIELDS = ("text", "sentence1", "sentence2", "sentences")
DEFAULT_FIELD = "text"  # the JSONL field a text is read from when no --field is given


@dataclass(frozen=True)
class CalibrationSet:
    """The texts, the source they were read from, and the JSONL field they were read from (None: a text file, a
    folder, the embedded set, or JSONL read from its default field `text`)."""

    texts: list[str]
    source: str
    field: str | None = None

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for text in self.texts:
            digest.update(text.encode("utf-8") + b"\n")
        return digest.hexdigest()

    def describe(self) -> dict:
        described = {"source": self.source, "count": len(self.texts), "sha256": self.sha256}
        return {**described, "field": self.field} if self.field is not None else described


def load_calibration(
    source: str | Path | None = None, *, field: str | None = None, limit: int | None = None, seed: int = 0
) -> CalibrationSet:
    """Texts from `source` (the embedded set when None), cleaned, deduplicated, optionally sampled."""
    if limit is not None and limit < 1:
        raise CalibrationError(f"--limit must be at least 1 (got {limit})")
    raw, name, read_field = _read_source(source, field)
    texts = clean(raw)
    if not texts:
        raise CalibrationError(f"calibration source {name} contains no texts")
    if limit is not None and limit < len(texts):
        keep = sorted(random.Random(seed).sample(range(len(texts)), limit))
        texts = [texts[i] for i in keep]
    return CalibrationSet(texts, name, read_field)


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


def _read_source(source: str | Path | None, field: str | None) -> tuple[list[str], str, str | None]:
    """The raw texts, the recorded name, and the JSONL field they were read from (None: not JSONL, or `text`)."""
    if source is None or str(source) == EMBEDDED:
        data = resources.files("layerpick").joinpath("data/calibration.txt").read_text(encoding="utf-8")
        return data.splitlines(), EMBEDDED, None
    path = Path(source).expanduser()
    if path.is_dir():
        return _read_task_folder(path), recorded_name(path), None
    if not path.exists():
        raise CalibrationError(f"calibration file not found: {path}")
    data = read_source_bytes(path)
    if _reads_as_jsonl(path, field):
        read = field or DEFAULT_FIELD
        return _read_jsonl_field(data, path, read), recorded_name(path), None if read == DEFAULT_FIELD else read
    return _decode(data, path).splitlines(), recorded_name(path), None


def _reads_as_jsonl(path: Path, field: str | None) -> bool:
    """A `.jsonl` file, or a stream (a pipe, a device) when a field is named."""
    return path.suffix == ".jsonl" or (field is not None and not path.is_file() and not path.is_dir())


def check_field(field: str | None, sources: dict[str, str | Path | None], why: str = "") -> None:
    """`--field` names the text's field in JSONL texts: refused in one line when none of `sources` (option ->
    the source it reads; None: the embedded set) is JSONL, where it would be ignored without a word. `why`
    says why a command reads no texts at all (an empty `sources`)."""
    if field is None:
        return
    if not field.strip():
        raise CalibrationError("--field must name a JSONL field (got an empty string)")
    named = {option: source for option, source in sources.items() if source is not None and str(source) != EMBEDDED}
    if any(_may_be_jsonl(Path(source).expanduser(), field) for source in named.values()):
        return
    if not sources:
        raise CalibrationError(
            f"--field {field} names the text's field in JSONL texts, and no texts are read here{why}"
        )
    if not named:
        options = " or ".join(sources)
        raise CalibrationError(
            f"--field {field} names the text's field in JSONL texts, and {options} is the embedded set here: "
            f"give a JSONL file with {options}"
        )
    given = ", ".join(f"{option} {source}" for option, source in named.items())
    raise CalibrationError(
        f"--field {field} names the text's field in JSONL texts, and {given} "
        f"{'is' if len(named) == 1 else 'are'} not JSONL (a text file: one text per line; a task folder: its own "
        "fields); drop --field or give a .jsonl file"
    )


def _may_be_jsonl(path: Path, field: str) -> bool:
    """Read as JSONL with `field`, or missing (its own error names it then)."""
    return not path.exists() or (not path.is_dir() and _reads_as_jsonl(path, field))


def recorded_name(path: Path) -> str:
    """The name a report records for a source: a file or folder by its absolute path, so that a later command
    finds it from any working directory; a stream (a pipe, a device) by the name it was read under."""
    return os.path.abspath(path) if path.is_file() or path.is_dir() else str(path)


def is_rereadable(source: str) -> bool:
    """Whether a recorded source can be read again by a later command: a file or folder that is still there."""
    path = Path(source)
    return path.is_file() or path.is_dir()


_STREAMS: dict[tuple[str, int, int], bytes] = {}  # every stream read in this process: by name and identity


def read_source_bytes(path: Path) -> bytes:
    """The bytes of a file; of a stream (a pipe, a FIFO, a device: not a regular file), the bytes read the
    first time, kept for every later read in this process."""
    if path.is_file():
        return _read_bytes(path)
    key = _stream_key(path)
    if key not in _STREAMS:
        _STREAMS[key] = _read_bytes(path)
    return _STREAMS[key]


def _stream_key(path: Path) -> tuple[str, int, int]:
    """A stream's name and its device and inode: /dev/fd/N names a new pipe once fd N is reused."""
    try:
        status = path.stat()
    except OSError:
        return str(path), -1, -1
    return str(path), status.st_dev, status.st_ino


def _read_bytes(path: Path) -> bytes:
    """The bytes of `path`, refused in one line past MAX_SOURCE_BYTES or MAX_SOURCE_LINES (read no further)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as error:
        raise CalibrationError(f"cannot read calibration source {path}: {error.strerror or error}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise CalibrationError(
            f"{path} holds more than {MAX_SOURCE_BYTES // 2**20} MiB, the most one text source may hold; "
            "pass a sample of it"
        )
    if data.count(b"\n") > MAX_SOURCE_LINES:
        raise CalibrationError(
            f"{path} holds more than {MAX_SOURCE_LINES:,} lines, the most one text source may hold; pass a sample of it"
        )
    return data


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CalibrationError(f"{path} is not valid UTF-8 (byte {error.start})") from None


def _read_jsonl(path: Path) -> list[dict]:
    try:
        return [row for _, row in read_objects(path)]
    except JsonlError as error:
        raise CalibrationError(str(error)) from None


def _read_jsonl_field(data: bytes, path: Path, field: str) -> list[str]:
    """The string in `field` of every line; a line without it, or with another kind of value, says so."""
    try:
        rows = list(parse_objects(data, path))
    except JsonlError as error:
        raise CalibrationError(str(error)) from None
    for number, row in rows:
        if field not in row:
            raise CalibrationError(
                f"{path}: line {number} has no text field {field!r} (its fields: {', '.join(sorted(row))}); use --field"
            )
        if not isinstance(row[field], str):
            raise CalibrationError(f"{path}: line {number}: field {field!r} is {json_kind(row[field])}, not a string")
    return [row[field] for _, row in rows]


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
