"""The select stage's result: `SelectReport`, its JSON form (`report.json`) and reading it back.

The one place that knows the keys of a select report: `to_json` writes them after the `format` key
("layerpick-select/1"), `from_json` checks them once for every reader (export, validate, compare, run).
Keys a reader does not know are kept in `extra` and written back, so a newer report survives a round trip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from layerpick._util.documents import Document
from layerpick._util.filenames import REPORT_FILE
from layerpick.core.cost import LayerCosts
from layerpick.errors import ReportFormatError


@dataclass(frozen=True)
class SelectReport(Document):
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

    FORMAT: ClassVar[str] = "layerpick-select/1"
    WHAT: ClassVar[str] = "a layerpick select report"
    NOUN: ClassVar[str] = "report"
    REQUIRED: ClassVar[tuple[str, ...]] = ("model", "num_layers", "selected_layer", "rule", "scores")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("prompt", "by_prompt", "transform")  # absent rather than null

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> SelectReport:
        _check_shape(values, where)
        return cls(**values, extra=extra)

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


def read_select_report(path: Path) -> SelectReport:
    """A `layerpick select` report.json from disk, checked; one-line errors for missing or malformed files."""
    path = Path(path)
    if path.is_dir():
        raise ReportFormatError(f"report not found: {path} is a folder (give its {REPORT_FILE})")
    return SelectReport.read(path)


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
