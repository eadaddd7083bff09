"""The plots of `layerpick compare`, drawn from compare.json's content with matplotlib's Agg backend.

Owns: `metric-<name>.png` (one metric against relative depth k/L, a line per model that has it, a star at its
selected layer) and `mean-task-score.png` (the mean task score, a line per validated model, a star at the
selected layer and a diamond at the best), in one colour per model across every plot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerpick.frontier.scores import best_layer


def plot_metric(data: dict[str, Any], metric: str, path: Path) -> Path:
    """One metric against relative depth: a line per model that has it, a star at its selected layer."""
    direction = data["metrics"].get(metric)
    title = f"{metric}: {direction} is better (per paper)" if direction else metric
    curves = [(m, m["scores"][metric]) for m in data["models"] if metric in m["scores"]]
    return _plot(data, curves, title, metric, path)


def plot_mean_score(data: dict[str, Any], path: Path) -> Path:
    """The mean task score against relative depth: a line per validated model, a star at its selected layer."""
    curves = [(m, m["mean_by_layer"]) for m in data["models"] if m["mean_by_layer"] is not None]
    return _plot(data, curves, "mean task score by relative depth", "mean main score", path, best=True)


def _plot(data: dict[str, Any], curves, title: str, ylabel: str, path: Path, best: bool = False) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    palette = matplotlib.colormaps["tab10" if len(data["models"]) <= 10 else "tab20"]
    colors = {m["label"]: palette(i % palette.N) for i, m in enumerate(data["models"])}
    figure, axis = plt.subplots(figsize=(8, 5))
    for model, values in curves:
        _curve(axis, model, values, colors[model["label"]], best)
    _decorate(axis, title, ylabel, legend=bool(axis.get_legend_handles_labels()[0]), best=best)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _curve(axis, model: dict[str, Any], values, color, best: bool) -> None:
    """One model's line (its scored layers), then its markers."""
    depth = model["depth"]
    points = [(depth[k], v) for k, v in enumerate(values) if v is not None]
    if points:
        axis.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker="o",
            markersize=3,
            linewidth=1.5,
            color=color,
            label=f"{model['label']} (L={model['num_layers']})",
        )
    if best:
        _mark(axis, best_layer(values), values, depth, color, "D", 13, filled=False)
    _mark(axis, model["selected_layer"], values, depth, color, "*", 14)


def _decorate(axis, title: str, ylabel: str, *, legend: bool, best: bool) -> None:
    axis.set_xlabel("relative depth k/L")
    axis.set_ylabel(ylabel)
    axis.set_xlim(-0.03, 1.03)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    if legend:
        axis.legend(
            fontsize=8, loc="best", title="★ selected layer" + (", ◇ best layer" if best else ""), title_fontsize=8
        )


def _mark(axis, layer: int | None, values, depth, color, marker: str, size: float, filled: bool = True) -> None:
    """A marker at (k/L, value at k); a dotted vertical line where the curve has no value at k."""
    if layer is None:
        return
    value = values[layer]
    if value is None:
        axis.axvline(depth[layer], color=color, linestyle=":", linewidth=1.2)
        return
    axis.plot(
        [depth[layer]],
        [value],
        marker=marker,
        markersize=size,
        color=color,
        linestyle="none",
        markerfacecolor=color if filled else "none",
        markeredgecolor="black" if filled else color,
        zorder=3,
    )
