"""The select report on disk: report.json, a markdown page and a PNG of every metric against relative depth.

Writing is atomic per file set: everything is rendered in memory first, written into a temporary directory
beside the output, then moved into place, so a failure never leaves a partial report.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

from layerpick._util.filenames import REPORT_FILE
from layerpick._util.formatting import number
from layerpick.selection.result import SelectReport

ARROWS = {"min": "↓", "max": "↑"}


def to_markdown(report: SelectReport) -> str:
    """A human-readable page: header facts, the per-layer table, and the choice."""
    names = list(report.scores)
    calibration = report.calibration
    lines = [
        f"# layerpick select: {report.model}",
        "",
        f"- layers: {report.num_layers} (layer 0 = embeddings), representation: {report.representation}, "
        f"pooling: {report.pooling}",
        f"- calibration: {calibration['source']} ({calibration['count']} texts, "
        f"sha256 {calibration['sha256'][:12]})",
        f"- rule: `{report.rule}` -> **layer {report.selected_layer}** ({report.choice})",
    ]
    lines += [f"- note: {note}" for note in report.notes]
    lines += ["", "| layer | " + " | ".join(f"{n} {ARROWS[report.directions[n]]}" for n in names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    for k in range(report.num_layers + 1):
        mark = " ◀" if k == report.selected_layer else ""
        cells = [format_score(report.scores[n][k]) for n in names]
        lines.append(f"| {k}{mark} | " + " | ".join(cells) + " |")
    lines += ["", "Arrows give each metric's documented direction (the paper's reading); the rule sets its own."]
    return "\n".join(lines) + "\n"


def format_score(value) -> str:
    return number(value)


def plot_metrics(report: SelectReport, path: Path) -> None:
    """Each metric against relative depth k/L, one panel per metric, the chosen layer marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report.scores)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    figure, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    num = report.num_layers
    for axis, name in zip(axes.flat, names):
        values = report.scores[name]
        points = [(k / num, v) for k, v in enumerate(values) if v is not None and math.isfinite(v)]
        axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", color="tab:blue")
        axis.axvline(report.selected_layer / num, color="tab:red", linestyle="--", linewidth=1)
        axis.set_title(f"{name} ({report.directions[name]} is better per paper)", fontsize=9)
        axis.set_xlabel("relative depth k/L")
    for axis in list(axes.flat)[len(names):]:
        axis.set_visible(False)
    figure.suptitle(f"{report.model}: chosen layer {report.selected_layer} of {num} ({report.rule})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(report: SelectReport, output: Path) -> list[Path]:
    """Write report.json, report.md and metrics.png into `output` (created if needed), atomically."""
    output.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".layerpick-", dir=output))
    try:
        (staging / REPORT_FILE).write_text(json.dumps(report.to_json(), indent=2) + "\n")
        (staging / "report.md").write_text(to_markdown(report))
        plot_metrics(report, staging / "metrics.png")
        written = []
        for name in (REPORT_FILE, "report.md", "metrics.png"):
            os.replace(staging / name, output / name)
            written.append(output / name)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)
