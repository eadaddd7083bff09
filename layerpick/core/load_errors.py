"""Why a model could not be loaded, in one line that names the file: the one place that classifies loading errors.

Loading goes through transformers, safetensors, tokenizers, gguf and sentence-transformers, which report a
truncated weights file as `SafetensorError: header too large`, a broken tokenizer.json as a bare
`JSONDecodeError`, a file that is not GGUF as a `ValueError`, a missing model as an `OSError`, none of them
naming the file at fault. `loading(source)` wraps a load: an error of one of those kinds is re-raised as a
`ModelFileError` (a file that is there but broken) naming the file and what is wrong with it, found by
checking the model's files, or as a `ModelNotFoundError`. Anything else is a bug and passes through.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from layerpick.errors import LayerpickError, ModelFileError, ModelNotFoundError

GGUF_MAGIC = b"GGUF"
MAX_SAFETENSORS_HEADER = 100_000_000  # safetensors itself refuses larger headers
CONTENT_ERRORS = (OSError, ValueError, KeyError, IndexError, EOFError)  # what a broken or missing file raises


@contextmanager
def loading(source: str | Path, *, what: str = "model", allow_pickle: bool = True) -> Iterator[None]:
    """Re-raise the errors of loading `source` (a folder or a file) as one-line LayerpickErrors."""
    try:
        yield
    except LayerpickError:
        raise
    except Exception as error:  # noqa: BLE001 - classified below; anything unknown is re-raised as it is
        problem = explain(source, error, what=what, allow_pickle=allow_pickle)
        if problem is None:
            raise
        raise problem from error


def explain(
    source: str | Path, error: BaseException, *, what: str = "model", allow_pickle: bool = True
) -> LayerpickError | None:
    """The one-line error for a failed load of `source`, or None when `error` is not a loading problem."""
    if not (_is_safetensors_error(error) or isinstance(error, CONTENT_ERRORS)):
        return None
    broken = find_broken_file(Path(source))
    if broken is not None:
        file, reason = broken
        return ModelFileError(f"cannot load {what} {source}: {file} {reason}")
    text = first_line(error)
    if not allow_pickle and ("safetensors" in text.lower() or ".bin" in text):
        return ModelNotFoundError(
            f"cannot load {source}: no safetensors weights found (pass --allow-pickle to trust pickle files)"
        )
    return ModelNotFoundError(f"cannot load {what} {source}: {text}")


def find_broken_file(source: Path) -> tuple[Path, str] | None:
    """The first file of a model folder (or the model file itself) that is unreadable, and what is wrong."""
    if source.is_file():
        files = [source]
    elif source.is_dir():
        files = sorted(
            p
            for pattern in ("*", "*/*")
            for p in source.glob(pattern)  # the model and its modules
            if p.is_file() and not p.name.startswith(".")
        )
    else:
        return None
    for file in files:
        reason = file_problem(file)
        if reason is not None:
            return file, reason
    return None


def file_problem(file: Path) -> str | None:
    """What is wrong with one model file, by its kind (safetensors, GGUF, JSON); None when it reads fine."""
    suffix = file.suffix.lower()
    if suffix == ".safetensors":
        return _safetensors_problem(file)
    if suffix == ".gguf":
        return gguf_problem(file)
    if suffix == ".json":
        return _json_problem(file)
    return None


def gguf_problem(file: Path) -> str | None:
    """Whether `file` can be a GGUF file at all (its first bytes): a cheap check before a long conversion."""
    with open(file, "rb") as handle:
        head = handle.read(8)
    if not head:
        return "is empty"
    if not head.startswith(GGUF_MAGIC):
        return "is not a GGUF file (it does not start with the GGUF magic bytes)"
    if len(head) < 8:
        return "is truncated (shorter than a GGUF header)"
    return None


def _safetensors_problem(file: Path) -> str | None:
    """A safetensors file starts with an 8-byte little-endian header size, then that much JSON, then the data."""
    from safetensors import safe_open

    size = file.stat().st_size
    if size == 0:
        return "is empty"
    with open(file, "rb") as handle:
        header = int.from_bytes(handle.read(8), "little") if size >= 8 else None
    if header is None or header > MAX_SAFETENSORS_HEADER:
        return "is not a safetensors file (its first bytes are not a safetensors header)"
    if 8 + header > size:
        return f"is truncated ({size:,} bytes; its header alone needs {8 + header:,})"
    try:
        with safe_open(str(file), "pt"):
            return None
    except Exception as error:  # noqa: BLE001 - safetensors raises its own SafetensorError
        text = first_line(error).split("deserializing header:")[-1].strip()
        if "not fully covered" in text or "incomplete" in text:
            return "is truncated (shorter than its header says)"
        return f"is not a valid safetensors file ({text})"


def _json_problem(file: Path) -> str | None:
    try:
        json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        return "is not valid UTF-8 JSON"
    except json.JSONDecodeError as error:
        return "is empty" if not file.stat().st_size else f"is not valid JSON ({error.msg} at line {error.lineno})"
    return None


def _is_safetensors_error(error: BaseException) -> bool:
    return type(error).__name__ == "SafetensorError"


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
