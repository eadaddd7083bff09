"""`layerpick compare`'s result: compare.json ("layerpick-compare/1") as `ComparisonReport`.

The table (one row per model: chosen layer, its relative depth, validated scores and gains), every model's curves
by layer and relative depth, the metric directions and the plots written. The rows' and models' keys are
written by `compare/table.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from layerpick._util.documents import Document


@dataclass(frozen=True)
class ComparisonReport(Document):
    """Several models' select reports (and validations) side by side on relative depth."""

    table: list[dict[str, Any]]
    models: list[dict[str, Any]]
    metrics: dict[str, str]
    plots: list[str]
    inputs: list[str] = field(default_factory=list)
    versions: dict[str, str | None] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "layerpick-compare/1"
    WHAT: ClassVar[str] = "a layerpick compare.json"
    NOUN: ClassVar[str] = "comparison"
    REQUIRED: ClassVar[tuple[str, ...]] = ("table", "models", "metrics", "plots")
