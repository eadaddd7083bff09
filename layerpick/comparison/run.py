"""Compare several models: select reports (and validation results) overlaid on relative depth k/L.

Owns the `layerpick compare` entry point, `compare_reports`: load the inputs, build the comparison, render its
files into a staging folder and move them into place. The parts live beside it:

- `layerpick.comparison.read`: one input file, a select `report.json` or a `validate` `validation.json` (told apart
  by their keys, not their names), checked; the error types.
- `layerpick.comparison.inputs`: what the inputs name (files, or folders holding `report.json` or
  `select/report.json`, and `validation.json`, `validation/validation.json` or `validate/validation.json`, the
  layouts of `layerpick-out/<model>/` and of a `layerpick run` folder, else the same in its immediate
  subfolders, so `layerpick-out` compares every model there). A select report and a validation found for the
  same folder are one model: its metric curves and its mean task score by layer. Each model is labelled by its
  name (and `@revision` when the report has one); duplicate labels get the folder name, then a number.
- `layerpick.comparison.table`: `compare.json` (every curve and the table) and `compare.md` (the table).
- `layerpick.comparison.plot`: `metric-<name>.png` (the metric against relative depth, one line per model, a star at
  the selected layer) and `mean-task-score.png` (when any model is validated).
- `layerpick.comparison.output`: the output folder, written atomically (everything is rendered into a temporary
  folder beside it first, then renamed into place). An existing non-empty output is replaced only with
  `overwrite`, and only when it holds nothing but a previous compare output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from layerpick._util.output_errors import OutputExistsError
from layerpick._util.outputs import check_output_location
from layerpick.comparison.inputs import Entry, load_entries, short_name
from layerpick.comparison.result import ComparisonReport
from layerpick.comparison.output import (
    JSON_NAME,
    MARKDOWN_NAME,
    MEAN_PLOT,
    check_output,
    plot_name,
    staged_output,
)
from layerpick.comparison.plot import plot_mean_score, plot_metric
from layerpick.comparison.read import (
    CompareError,
    NotAReportError,
    ReportNotFoundError,
    Source,
    read_source,
)
from layerpick.comparison.table import build_comparison, table_row, to_markdown

__all__ = [
    "CompareError",
    "Comparison",
    "Entry",
    "NotAReportError",
    "OutputExistsError",
    "ReportNotFoundError",
    "Source",
    "build_comparison",
    "check_output",
    "ComparisonReport",
    "compare_reports",
    "load_entries",
    "plot_mean_score",
    "plot_metric",
    "read_source",
    "short_name",
    "table_row",
    "to_markdown",
    "write_comparison",
]


@dataclass(frozen=True)
class Comparison:
    """What `compare_reports` found (`report` is compare.json), the output folder and the files written."""

    report: ComparisonReport
    entries: tuple[Entry, ...]
    output: Path
    files: tuple[Path, ...]


def compare_reports(inputs: Sequence[str | Path], output: str | Path, *, overwrite: bool = False) -> Comparison:
    """Load `inputs`, build the comparison and write it into `output` (see the module docstring)."""
    output = Path(output)
    check_output(output, overwrite)
    check_output_location(output, "--output")
    entries = load_entries(inputs)
    report = ComparisonReport.from_json({"format": ComparisonReport.FORMAT, **build_comparison(entries, inputs)})
    files = write_comparison(report, output, overwrite=overwrite)
    return Comparison(report, tuple(entries), output, tuple(files))


def write_comparison(report: ComparisonReport, output: Path, *, overwrite: bool = False) -> list[Path]:
    """Render every file into a temporary folder beside `output`, then move it into place."""
    output = Path(output)
    with staged_output(output, overwrite) as staging:
        _render(report.to_json(), staging)
    return [output / name for name in (JSON_NAME, MARKDOWN_NAME, *report.plots)]


def _render(data: dict[str, Any], folder: Path) -> None:
    """compare.json, compare.md and the plots, into `folder` (the plot functions are looked up here, at call time)."""
    (folder / JSON_NAME).write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    (folder / MARKDOWN_NAME).write_text(to_markdown(data), encoding="utf-8")
    for metric in data["metrics"]:
        plot_metric(data, metric, folder / plot_name(metric))
    if MEAN_PLOT in data["plots"]:
        plot_mean_score(data, folder / MEAN_PLOT)
