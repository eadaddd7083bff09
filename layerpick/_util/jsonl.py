"""Reading JSON files: a JSON Lines file (one object per non-blank line, from a path or from bytes already read)
and an optional JSON file, each with a one-line error naming the file (and line) when it is not valid JSON;
and the words for what a JSON value is (`json_kind`), for messages about a field of the wrong type."""

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


def parse_objects(data: bytes, name: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of `data`, the content of `name` (a stream read once)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JsonlError(f"{name}: not valid UTF-8 (byte {error.start})") from None
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a string
        if line.strip():
            yield number, _object(line, name, number)


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in words: 'a number', 'null', 'a list', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _object(line: str, path: str | Path, number: int) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise JsonlError(f"{path}:{number}: not valid JSON ({error.msg})") from None
    if not isinstance(row, dict):
        raise JsonlError(f"{path}:{number}: expected a JSON object per line")
    return row
