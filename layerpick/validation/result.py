"""The validate stage's result: `ValidationReport` (validation.json, "layerpick-validation/1") and `ValidationRun`.

`ValidationReport` is the one place that knows validation.json's keys: what the run evaluated (the model or
export, its representation, the layers), each task's main score by layer, their mean, the frontier and the
failures. Readers in other stages (bench's cuts, compare, run, the model card) read it through `read` /
`from_json`. Nested sections (a task's entry, the frontier) stay JSON objects; their keys are written by
`validation/run.py` and `validation/picks.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from layerpick._util.documents import Document
from layerpick.errors import ReportFormatError


@dataclass(frozen=True)
class ValidationReport(Document):
    """Every evaluated layer's main score on every task, the mean by layer and what was chosen from it."""

    model: str
    num_layers: int
    tasks: dict[str, dict[str, Any]]
    mean_by_layer: list[float | None]
    failures: dict[str, str] = field(default_factory=dict)
    model_path: str | None = None
    exported_dir: str | None = None
    exported_layer: int | None = None
    family: str | None = None
    device: str | None = None
    representation: str | None = None
    pooling: str | None = None
    max_length: int | None = None
    dtype: str | None = None
    normalize: bool | None = None
    prompt: dict[str, Any] | None = None
    transform: dict[str, Any] | None = None  # the post-pooling transform of a single transformed variant
    static: dict[str, Any] | None = None
    store: str | None = None
    notes: list[str] = field(default_factory=list)
    cost: dict[str, Any] | None = None
    layers_evaluated: list[int] = field(default_factory=list)
    mean_over: list[str] = field(default_factory=list)
    selected_layer: int | None = None
    last_layer: int | None = None
    best_layer: int | None = None
    comparison: dict[str, Any] | None = None
    frontier: dict[str, Any] | None = None
    metric_correlations: dict[str, Any] | None = None
    select_report: dict[str, Any] | None = None
    texts_encoded: int = 0
    timings: dict[str, float | None] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    by_prompt: dict[str, dict[str, Any]] | None = None  # several (template, transform) variants side by side
    best_pair: dict[str, Any] | None = None
    pair_frontier: dict[str, Any] | None = None
    results_dir: str | None = None
    static_exports: list[dict[str, Any]] | None = None  # `--static`: each table's scores beside the layers
    documents_by: dict[str, Any] | None = None  # `--documents-by`: retrieval documents by another model
    extra: dict[str, Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "layerpick-validation/1"
    WHAT: ClassVar[str] = "a layerpick validation.json"
    NOUN: ClassVar[str] = "validation"
    REQUIRED: ClassVar[tuple[str, ...]] = ("model", "num_layers", "tasks", "mean_by_layer")
    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "exported_layer",
        "transform",
        "static",
        "by_prompt",
        "best_pair",
        "pair_frontier",
        "static_exports",
        "documents_by",
    )

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> ValidationReport:
        num = values["num_layers"]
        if not isinstance(num, int) or isinstance(num, bool) or num < 1:
            raise ReportFormatError(f"{where}: num_layers must be a positive integer, not {num!r}")
        if not isinstance(values["tasks"], dict):
            raise ReportFormatError(f"{where}: tasks must be an object of task name -> results")
        if not isinstance(values["mean_by_layer"], list):
            raise ReportFormatError(f"{where}: mean_by_layer must be a list of one value per layer")
        return cls(**values, extra=extra)

    @property
    def ok(self) -> bool:
        return not self.failures

    def task_scores(self, name: str) -> list[float | None]:
        """One task's main score by layer (None where a layer was not evaluated)."""
        return self.tasks[name]["main_score_by_layer"]


@dataclass(frozen=True)
class ValidationRun:
    """What `run_validation` found (`report` is validation.json), where it wrote it and the files written."""

    report: ValidationReport
    output_dir: Path
    files: tuple[Path, ...]

    @property
    def failures(self) -> dict[str, str]:
        return self.report.failures

    @property
    def ok(self) -> bool:
        return self.report.ok
