"""The select report on disk: report.json, a markdown page and a PNG of every metric against relative depth.

Writing is atomic per file set: everything is rendered in memory first, written into a temporary directory
beside the output, then moved into place, so a failure never leaves a partial report.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from layerpick._util.atomic import commit_files, staging_directory
from layerpick._util.filenames import REPORT_FILE
from layerpick._util.formatting import COST_HEADER, cost_cells, number
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
        f"- calibration: {calibration['source']} ({calibration['count']} texts, sha256 {calibration['sha256'][:12]})",
        f"- rule: `{report.rule}` -> **layer {report.selected_layer}** ({report.choice})",
    ]
    lines += cost_lines(report)
    lines += [prompt_line(report)] if report.prompt else []
    lines += [transform_line(report)] if report.transform else []
    lines += [f"- note: {note}" for note in report.notes]
    costs = report.costs
    header = [f"{n} {ARROWS[report.directions[n]]}" for n in names] + (list(COST_HEADER) if costs else [])
    lines += ["", "| layer | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for k in range(report.num_layers + 1):
        cells = [format_score(report.scores[n][k]) for n in names] + list(layer_cost_cells(report, k))
        lines.append(f"| {layer_label(report, k)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Arrows give each metric's documented direction (the paper's reading); the rule sets its own. "
        "◀ the chosen layer; ◆ on the unsupervised frontier.",
    ]
    side = side_by_side(report)
    if side:
        header, rows = side
        lines += [
            "",
            "## Prompt templates side by side",
            "",
            "The rule's metrics for every (template, layer) pair, each template from its own pass; the rule "
            "compares all pairs and chose ◀. The table above is the chosen template's.",
            "",
            "| " + " | ".join(header) + " |",
            "|---" * len(header) + "|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def cost_lines(report: SelectReport) -> list[str]:
    """The budget, the cost model and the unsupervised frontier, as markdown list items."""
    lines = []
    if report.min_speedup is not None:
        lines.append(f"- budget: ideal speed-up of at least {report.min_speedup:g}x (`--min-speedup`)")
    if report.cost:
        lines.append(f"- cost: {report.cost['model']}")
    if report.frontier:
        lines.append(
            f"- unsupervised frontier (no other layer has both a better rule objective and a higher ideal "
            f"speed-up): layers {', '.join(str(k) for k in report.frontier)}"
        )
    return lines


def layer_cost_cells(report: SelectReport, k: int) -> tuple[str, ...]:
    costs = report.costs
    if costs is None:
        return ()
    return cost_cells(costs.params_kept[k], costs.params_full, costs.ideal_speedup[k])


def layer_label(report: SelectReport, k: int) -> str:
    marks = (" ◀" if k == report.selected_layer else "") + (" ◆" if k in (report.frontier or ()) else "")
    return f"{k}{marks}"


def prompt_line(report: SelectReport) -> str:
    """The template the report selected with, in one line."""
    prompt = report.prompt or {}
    if prompt.get("template") is None:
        return "- prompt: none (plain text)"
    return f"- prompt: {prompt['name']} (`{prompt['template']}`), wrapped by the tokenizer"


def transform_line(report: SelectReport) -> str:
    """The post-pooling transform the report selected with, in one line."""
    transform = report.transform
    if not transform:
        return "- transform: none"
    fit = transform["fit"]
    return (
        f"- transform: {transform['name']} ({transform['output_dim']} dimensions), fitted per layer on "
        f"{fit['count']} texts of {fit['source']} (sha256 {fit['sha256'][:12]}); metrics on the transformed "
        "vectors, except token-level ones (token states are not transformed)"
        + (
            "; dataset-entropy is undefined under whitening (flat by construction)"
            if transform.get("kind") == "whiten"
            else ""
        )
    )


def chosen_variant(report: SelectReport) -> str:
    """The by_prompt label of the chosen (template, transform): `none`, `eol`, `none+whiten-256`."""
    name = (report.prompt or {}).get("name") or "none"
    transform = (report.transform or {}).get("name")
    return f"{name}+{transform}" if transform else name


def side_by_side(report: SelectReport) -> tuple[list[str], list[list[str]]] | None:
    """With several templates: a header and one row per layer of the rule's metrics under every template."""
    if not report.by_prompt:
        return None
    from layerpick.selection.rules import parse_rule

    metrics = parse_rule(report.rule).metrics
    chosen = chosen_variant(report)
    header = ["layer"] + [
        f"{label} ({entry['pooling']}): {metric}" for label, entry in report.by_prompt.items() for metric in metrics
    ]
    rows = []
    for k in range(report.num_layers + 1):
        cells = [str(k)]
        for label, entry in report.by_prompt.items():
            mark = " ◀" if label == chosen and k == report.selected_layer else ""
            cells += [format_score(entry["scores"][metric][k]) + mark for metric in metrics]
        rows.append(cells)
    return header, rows


def format_score(value) -> str:
    return number(value)


def plot_metrics(report: SelectReport, path: Path) -> None:
    """Each metric against relative depth k/L, one panel per metric, the chosen layer marked, the ideal
    speed-up on a top axis; a last panel with the rule's objective against the ideal speed-up (the
    unsupervised frontier)."""
    from layerpick.frontier.plot import (
        add_speedup_axis,
        draw_frontier,
        pyplot,
    )

    plt = pyplot()
    names = list(report.scores)
    costs = report.costs
    panels = len(names) + (1 if costs and report.objective else 0)
    cols = min(3, panels)
    rows = math.ceil(panels / cols)
    figure, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.5 * rows), squeeze=False)
    num = report.num_layers
    for axis, name in zip(axes.flat, names):
        values = report.scores[name]
        points = [(k / num, v) for k, v in enumerate(values) if v is not None and math.isfinite(v)]
        axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", color="tab:blue")
        axis.axvline(report.selected_layer / num, color="tab:red", linestyle="--", linewidth=1)
        axis.set_title(f"{name} ({report.directions[name]} is better per paper)", fontsize=9)
        axis.set_xlabel("relative depth k/L")
        if costs:
            add_speedup_axis(axis, costs.ideal_speedup, num)
    if panels > len(names):
        axis = axes.flat[len(names)]
        layers = [k for k, v in enumerate(report.objective) if v is not None]
        draw_frontier(
            axis,
            report.objective,
            costs.ideal_speedup,
            layers,
            report.frontier or [],
            {"unsupervised pick": report.selected_layer, "last": num},
            "rule objective (1 = best)",
        )
        axis.set_title(f"{report.rule}: objective against ideal speed-up", fontsize=9)
    for axis in list(axes.flat)[panels:]:
        axis.set_visible(False)
    figure.suptitle(f"{report.model}: chosen layer {report.selected_layer} of {num} ({report.rule})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(report: SelectReport, output: Path) -> list[Path]:
    """Write report.json, report.md and metrics.png into `output` (created if needed), atomically."""
    with staging_directory(output / "report") as staging:  # creates `output`, and removes it again on failure
        (staging / REPORT_FILE).write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        (staging / "report.md").write_text(to_markdown(report), encoding="utf-8")
        plot_metrics(report, staging / "metrics.png")
        commit_files(staging, output, ("metrics.png", "report.md", REPORT_FILE))  # the JSON, read first, last
    return [output / name for name in (REPORT_FILE, "report.md", "metrics.png")]
