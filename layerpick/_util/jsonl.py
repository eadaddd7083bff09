"""Reading JSON files: a JSON Lines file (one object per non-blank line) and an optional JSON file, each with a
one-line error naming the file (and line) when it is not valid JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator


def read_optional_json(path: Path, error: type[Exception]) -> Any | None:
    """The parsed content of `path`, or None when there is no such file; `error` naming the file when the file
    is not valid JSON."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as problem:
        raise error(f"{path}: not valid JSON ({problem.msg})") from None


class JsonlError(ValueError):
    """A JSON Lines file that is not UTF-8, or a line that is not one JSON object (the message is one line)."""


def read_objects(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of `path`."""
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield number, _object(line, path, number)
    except UnicodeDecodeError as error:
        raise JsonlError(f"{path}: not valid UTF-8 (byte {error.start})") from None


def _object(line: str, path: Path, number: int) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise JsonlError(f"{path}:{number}: not valid JSON ({error.msg})") from None
    if not isinstance(row, dict):
        raise JsonlError(f"{path}:{number}: expected a JSON object per line")
    return row
