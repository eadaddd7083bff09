"""Reading one input file of `layerpick compare`: a select report.json or a validate validation.json.

Owns: telling the two kinds apart by their format key (not their names), reading each through its stage's
document type (`SelectReport`, `ValidationReport`), checking the shapes the comparison
reads (curves of L+1 numbers or nulls, layers in 0..L; NaN and infinities become None), refusing a validation
with no mean score at any layer (nothing of it could be compared or drawn), and the error types for input that
cannot be compared.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerpick.errors import LayerpickError, ReportFormatError
from layerpick.selection.result import SelectReport
from layerpick.validation.result import ValidationReport


class CompareError(LayerpickError):
    """Inputs that cannot be compared (or an output that cannot be written)."""


class ReportNotFoundError(CompareError):
    """A report file or folder that does not exist, or a folder holding no report."""


class NotAReportError(CompareError):
    """A file that is not a layerpick select report or validation.json."""


@dataclass(frozen=True)
class Source:
    """One file read: `kind` is "select" (a report.json) or "validation" (a validation.json)."""

    path: Path
    kind: str
    data: dict[str, Any]


def read_source(path: Path) -> Source:
    """A select report.json or a validation.json, checked for the keys and shapes the comparison reads."""
    path = Path(path)
    raw = _read_object(path)
    kind = _kind(path, raw)
    data = _document(path, kind, raw)
    check = _check_select if kind == "select" else _check_validation
    return Source(path, kind, check(path, data))


def _read_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`, or the error that says why it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportNotFoundError(f"report not found: {path}") from None
    except IsADirectoryError:
        raise ReportNotFoundError(f"no report in {path}") from None
    except UnicodeDecodeError:
        raise NotAReportError(f"{path} is not a layerpick report: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotAReportError(
            f"{path} is not a layerpick report: not valid JSON ({error.msg}, line {error.lineno})"
        ) from None
    if not isinstance(data, dict):
        raise NotAReportError(f"{path} is not a layerpick report: expected a JSON object, found {type(data).__name__}")
    return data


def _kind(path: Path, data: dict) -> str:
    """ "select" or "validation", by the file's format key."""
    kinds = {SelectReport.FORMAT: "select", ValidationReport.FORMAT: "validation"}
    found = data.get("format")
    if found not in kinds:
        named = f"format {found!r}" if found is not None else "no format key"
        raise NotAReportError(
            f"{path} is not a layerpick report: {named} (expected {SelectReport.FORMAT} for a "
            f"select report.json or {ValidationReport.FORMAT} for a validation.json)"
        )
    return kinds[found]


def _document(path: Path, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """The file read through its stage's document type (the same checks every reader makes), as JSON."""
    document = SelectReport if kind == "select" else ValidationReport
    try:
        return document.from_json(data, str(path)).to_json()
    except ReportFormatError as error:
        raise NotAReportError(str(error)) from None


def _check_select(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    data["selected_layer"] = _layer(path, data, "selected_layer", required=True)
    if not isinstance(data["scores"], dict):
        raise NotAReportError(f"{path}: scores must be an object of metric name -> values by layer")
    data["scores"] = {
        str(name): _curve(path, f"scores[{name!r}]", values, data["num_layers"])
        for name, values in data["scores"].items()
        if values is not None
    }
    return data


def _check_validation(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    data["mean_by_layer"] = _curve(path, "mean_by_layer", data["mean_by_layer"], data["num_layers"])
    if not isinstance(data["tasks"], dict):
        raise NotAReportError(f"{path}: tasks must be an object of task name -> results")
    if all(value is None for value in data["mean_by_layer"]):
        raise NotAReportError(f"{path}: no layer has a mean task score ({_why_unscored(data)}); nothing to compare")
    for name in ("selected_layer", "best_layer"):
        data[name] = _layer(path, data, name, required=False)
    return data


def _why_unscored(data: dict[str, Any]) -> str:
    failures = data.get("failures")
    if isinstance(failures, dict) and failures:
        return f"failed: {', '.join(str(name) for name in failures)}"
    return "no tasks" if not data["tasks"] else "no task was scored at every layer evaluated"


def _layer(path: Path, data: dict, key: str, *, required: bool) -> int | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not _is_int(value) or not 0 <= value <= data["num_layers"]:
        raise NotAReportError(f"{path}: {key} must be a layer in 0..{data['num_layers']} (got {value!r})")
    return int(value)


def _curve(path: Path, name: str, values: Any, num_layers: int) -> list[float | None]:
    """A list of L+1 numbers or nulls; NaN and infinities become None."""
    if not isinstance(values, list) or len(values) != num_layers + 1:
        found = f"{len(values)} values" if isinstance(values, list) else type(values).__name__
        raise NotAReportError(f"{path}: {name} must hold {num_layers + 1} values, one per layer (found {found})")
    if not all(v is None or _is_number(v) for v in values):
        raise NotAReportError(f"{path}: {name} must hold numbers or nulls")
    return [float(v) if _is_number(v) and math.isfinite(v) else None for v in values]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
