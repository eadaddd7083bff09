"""validation.png: main score against relative depth k/L for each task and their mean (with several template or
transform variants, every variant's mean; `--static` tables' means at the layer they came from), the ideal
speed-up on a top axis; with a select report, its
unsupervised metrics (min-max normalised) on a second axis. frontier.png: the mean score against the ideal
speed-up, the frontier and the picks marked, static tables as lines at their score; with several variants, every
(variant, layer) pair and the frontier over them all. matplotlib's Agg backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerpick._util.finite import is_finite
from layerpick.frontier.plot import (
    add_speedup_axis,
    draw_frontier,
    draw_pair_frontier,
    draw_statics,
    frontier_figure,
    save_figure,
)
from layerpick.selection.result import SelectReport


def plot_validation(data: dict[str, Any], path: Path, report: SelectReport | None = None) -> Path:
    """Draw the validation.json content `data` (and a select `report`) into `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth = max(data["num_layers"], 1)
    figure, axis = plt.subplots(figsize=(9, 5.5))
    draw_scores(axis, data, depth)
    _static_points(axis, data.get("static_exports") or [], depth)
    _markers(axis, data, depth)
    axis.set_xlabel("relative depth k/L")
    axis.set_ylabel("main score")
    axis.set_title(f"{data['model']}: MTEB main score by layer")
    axis.grid(alpha=0.3)
    handles, labels = axis.get_legend_handles_labels()
    if report is not None:
        second = axis.twinx()
        palette = matplotlib.colormaps["Dark2"]
        for index, (metric, values) in enumerate(report.scores.items()):
            _line(
                second,
                _min_max(values),
                depth,
                label=f"{metric} (select)",
                linestyle="--",
                linewidth=1,
                color=palette(index % palette.N),
                markersize=2,
            )
        second.set_ylabel("select metric, min-max normalised")
        extra_handles, extra_labels = second.get_legend_handles_labels()
        handles, labels = handles + extra_handles, labels + extra_labels
    axis.legend(handles, labels, fontsize=7, loc="best")
    if data.get("cost"):
        add_speedup_axis(axis, data["cost"]["ideal_speedup"], depth)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


VARIANT_STYLES = ("-", "--", ":", "-.")
VARIANT_COLOURS = ("black", "darkred", "darkblue", "darkgreen", "darkorange", "indigo")
MEAN_SCORE = "mean main score over the tasks"  # the frontier plots' quality axis


def draw_scores(axis, data: dict[str, Any], depth: int) -> None:
    """Each task's main score by relative depth (the leading variant's, named so with several) and the mean:
    with several variants, every variant's mean, one line style each."""
    variants = data.get("by_prompt") or {}
    lead = f" ({next(iter(variants))})" if len(variants) > 1 else ""
    for name, task in data["tasks"].items():
        _line(axis, task["main_score_by_layer"], depth, label=f"{name}{lead}", linewidth=1.2, alpha=0.8)
    if len(variants) < 2:
        _line(axis, data["mean_by_layer"], depth, label="mean", linewidth=3, color="black")
        return
    for index, (variant, entry) in enumerate(variants.items()):
        _line(
            axis,
            entry["mean_by_layer"],
            depth,
            label=f"mean: {variant}",
            linewidth=2.5,
            color=VARIANT_COLOURS[index % len(VARIANT_COLOURS)],
            linestyle=VARIANT_STYLES[index % len(VARIANT_STYLES)],
        )


def plot_frontier_png(data: dict[str, Any], path: Path) -> Path:
    """The evaluated layers' mean task score against their ideal speed-up, the frontier joined, and the
    unsupervised pick, the validated pick, the last and the best layers marked; with several variants, every
    (variant, layer) pair (`plot_pair_frontier_png`)."""
    if data.get("pair_frontier") and len(data.get("by_prompt") or {}) > 1:
        return plot_pair_frontier_png(data, path)
    section = data["frontier"]
    picks = section["picks"]
    marks = {
        "unsupervised pick": picks.get("unsupervised", {}).get("layer"),
        "validated pick": picks["validated"]["layer"],
        "best": section["best_layer"],
        "last": data["last_layer"],
    }
    layers = [k for k in data["layers_evaluated"] if k >= 1]
    choice = "exported/chosen: layer " + str(section["chosen_layer"]) if section.get("chosen_layer") else ""
    figure, axis = frontier_figure()
    draw_frontier(
        axis, data["mean_by_layer"], data["cost"]["ideal_speedup"], layers, section["layers"], marks, MEAN_SCORE
    )
    draw_statics(axis, data.get("static_exports") or [])
    return save_figure(figure, axis, f"{data['model']}: mean task score against ideal speed-up. {choice}", Path(path))


def plot_pair_frontier_png(data: dict[str, Any], path: Path) -> Path:
    """Every (template, transform) variant's layers against their ideal speed-up, the frontier over every pair
    joined, the best pair and (with --choose validated or --max-loss) the chosen pair marked."""
    section = data["pair_frontier"]
    table = {variant: entry["mean_by_layer"] for variant, entry in data["by_prompt"].items()}
    on_frontier = [(pair["variant"], pair["layer"]) for pair in section["pairs"]]
    marks = {"best": _pair(section["best"]), "validated pick": _pair(section.get("chosen"))}
    layers = [k for k in data["layers_evaluated"] if k >= 1]
    figure, axis = frontier_figure()
    draw_pair_frontier(axis, table, data["cost"]["ideal_speedup"], layers, on_frontier, marks, MEAN_SCORE)
    draw_statics(axis, data.get("static_exports") or [])
    return save_figure(
        figure, axis, f"{data['model']}: mean task score against ideal speed-up, every variant", Path(path)
    )


def _pair(entry: dict[str, Any] | None) -> tuple[str, int] | None:
    return (entry["variant"], entry["layer"]) if entry else None


def _line(axis, values, depth: int, **style) -> None:
    points = [(k / depth, v) for k, v in enumerate(values or []) if is_finite(v)]
    if points:
        axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", **{"markersize": 3, **style})


def _static_points(axis, statics: list[dict[str, Any]], depth: int) -> None:
    """Each scored static table's mean at the relative depth of the layer it was distilled from."""
    for entry in statics:
        if is_finite(entry.get("mean")):
            axis.scatter(
                [entry["layer"] / depth],
                [entry["mean"]],
                marker="P",
                s=70,
                color="tab:red",
                zorder=5,
                label=f"static {entry['name']} (mean)",
            )


def _markers(axis, data: dict[str, Any], depth: int) -> None:
    marks = (
        ("selected_layer", "tab:green", "selected"),
        ("best_layer", "tab:orange", "best"),
        ("last_layer", "tab:gray", "last"),
    )
    for key, color, text in marks:
        layer = data.get(key)
        if layer is not None:
            axis.axvline(layer / depth, color=color, linestyle=":", linewidth=1.5)
            axis.annotate(
                f"{text} ({layer})",
                (layer / depth, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=7,
                color=color,
            )


def _min_max(values) -> list[float | None]:
    finite = [v for v in values or [] if is_finite(v)]
    if not finite:
        return []
    low, high = min(finite), max(finite)
    span = high - low
    return [((v - low) / span if span else 0.5) if is_finite(v) else None for v in values]
