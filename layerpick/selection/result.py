"""The select stage's result: `SelectReport`, its JSON form (`report.json`) and reading it back.

The one place that knows the keys of a select report: `to_json` writes them (the on-disk format is unchanged
from the dict form), `from_json` checks them once for every reader (export, validate, compare, run).
Keys a reader does not know are kept in `extra` and written back, so a newer report survives a round trip.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerpick._util.filenames import REPORT_FILE
from layerpick.core.cost import LayerCosts
from layerpick.errors import ReportFormatError

# The keys every reader needs, in the order a "missing ..." message names them.
REQUIRED_KEYS = ("model", "num_layers", "selected_layer", "rule", "scores")


@dataclass(frozen=True)
class SelectReport:
    """Every layer's metric scores, the rule and the layer it chose, and how the run was made."""

    model: str
    num_layers: int
    selected_layer: int
    rule: str
    scores: dict[str, list[float | None]]
    model_path: str | None = None
    revision: str | None = None
    family: str | None = None
    representation: str = "exported"
    pooling: str | None = None
    tolerance: float = 0.0
    include_layer0: bool = False
    rule_best_layer: int | None = None
    choice: str = ""
    directions: dict[str, str] = field(default_factory=dict)
    skipped_texts: int = 0
    calibration: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    views: int | None = None
    alpha: float | None = None
    max_length: int | None = None
    dtype: str | None = None
    device: str | None = None
    notes: list[str] = field(default_factory=list)
    versions: dict[str, str | None] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    min_speedup: float | None = None
    cost: dict[str, Any] | None = None  # LayerCosts.to_json(): params kept and ideal speed-up per layer
    objective: list[float | None] | None = None  # the rule's goodness per layer over all candidates, 0..1
    frontier: list[int] | None = None  # layers no other beats on both the objective and the ideal speed-up
    prompt: dict[str, Any] | None = None  # the template selected with: {"name", "template"}; None before prompts
    by_prompt: dict[str, dict[str, Any]] | None = None  # several templates: label -> pooling, scores, objective
    transform: dict[str, Any] | None = None  # the post-pooling transform: name, kind, dim, fit set, output_dim
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The report.json object: the same keys and order as every earlier report."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        order = ("model", "model_path", "revision", "num_layers", "family", "representation", "pooling", "prompt",
                 "transform", "rule", "tolerance", "include_layer0", "min_speedup", "selected_layer", "rule_best_layer", "choice",
                 "scores", "by_prompt", "directions", "cost", "objective", "frontier", "skipped_texts",
                 "calibration", "seed", "views", "alpha", "max_length", "dtype", "device", "notes", "versions",
                 "timings")
        optional = ("prompt", "by_prompt", "transform")  # absent rather than null, as in reports made before prompts
        return {**{key: data[key] for key in order if key not in optional or data[key] is not None}, **self.extra}

    @classmethod
    def from_json(cls, data: Any, where: str = "report") -> SelectReport:
        """A report from its JSON object; a one-line `ReportFormatError` naming `where` when it is not one."""
        if not isinstance(data, dict):
            raise ReportFormatError(f"{where} is not a layerpick select report (expected a JSON object)")
        missing = [key for key in REQUIRED_KEYS if key not in data]
        if missing:
            raise ReportFormatError(f"{where} is not a layerpick select report: missing {', '.join(missing)}")
        _check_shape(data, where)
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in data.items() if k in known},
                   extra={k: v for k, v in data.items() if k not in known})

    def check_scores(self, where: str = "report") -> None:
        """Every metric's curve has one value per layer (checked by readers that use the curves)."""
        for metric, values in self.scores.items():
            if values is not None and (not isinstance(values, list) or len(values) != self.num_layers + 1):
                found = f"{len(values)} values" if isinstance(values, list) else type(values).__name__
                raise ReportFormatError(f"{where}: scores[{metric!r}] has {found}, expected {self.num_layers + 1}")

    @property
    def costs(self) -> LayerCosts | None:
        """The per-layer cost, when the report has one (reports before the cost model do not)."""
        return LayerCosts.from_json(self.cost) if self.cost else None

    def __getitem__(self, key: str) -> Any:
        """Read access by report.json key, so code written against the earlier dict form keeps working."""
        return self.to_json()[key]


def read_select_report(path: Path) -> SelectReport:
    """A `layerpick select` report.json from disk, checked; one-line errors for missing or malformed files."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportFormatError(f"report not found: {path}") from None
    except IsADirectoryError:
        raise ReportFormatError(f"report not found: {path} is a folder (give its {REPORT_FILE})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportFormatError(f"cannot read report {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise ReportFormatError(f"{path} is not valid JSON ({error.msg}, line {error.lineno})") from None
    return SelectReport.from_json(data, str(path))


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _check_shape(data: dict[str, Any], where: str) -> None:
    num = data["num_layers"]
    if not _is_int(num) or num < 1:
        raise ReportFormatError(f"{where}: num_layers must be a positive integer, not {num!r}")
    if not _is_int(data["selected_layer"]):
        raise ReportFormatError(f"{where}: selected_layer must be an integer, not {data['selected_layer']!r}")
    if not 0 <= data["selected_layer"] <= num:
        raise ReportFormatError(f"{where}: selected_layer must be a layer in 0..{num} (got {data['selected_layer']})")
    if not isinstance(data["scores"], dict):
        raise ReportFormatError(f"{where}: scores must be an object of metric name -> values by layer")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
