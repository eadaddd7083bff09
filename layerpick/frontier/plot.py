"""Plots of the quality-speed trade-off: the frontier plot, and a speed-up axis for plots by relative depth.

Owns how cost shows in a figure: `draw_frontier` (quality against ideal speed-up, every layer a labelled point,
the frontier joined, named layers marked), `draw_pair_frontier` (the same over several variants: every
(variant, layer) pair in its variant's colour, the frontier over all pairs joined), `draw_statics` (static
tables, which have no ideal speed-up, as lines at their score), `frontier_figure` (the figure they are drawn in)
and `add_speedup_axis` (a top axis giving the ideal speed-up at layers along a
relative-depth x axis). matplotlib's Agg backend; the caller saves and closes the figure (`save_figure`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from layerpick._util.finite import is_finite

MARKS = {  # label -> (marker, colour)
    "unsupervised pick": ("s", "tab:green"),
    "validated pick": ("D", "tab:purple"),
    "exported": ("*", "tab:red"),
    "best": ("^", "tab:orange"),
    "last": ("v", "tab:gray"),
}
STATIC_COLOURS = ("tab:red", "tab:brown", "tab:pink", "tab:olive")
SPEEDUP_TICKS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0, 15.0, 30.0, 50.0, 100.0)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw_frontier(
    axis,
    quality: Sequence[float | None],
    speedup: Sequence[float],
    layers: Sequence[int],
    on_frontier: Sequence[int],
    marks: Mapping[str, int | None],
    ylabel: str,
) -> None:
    """Every layer of `layers` with a quality as a point at (ideal speed-up, quality), labelled k; the
    frontier joined by a line; each named layer in `marks` circled in its own marker."""
    points = [k for k in layers if is_finite(quality[k])]
    axis.scatter(
        [speedup[k] for k in points], [quality[k] for k in points], s=14, color="tab:blue", alpha=0.5, label="layer"
    )
    front = sorted(on_frontier, key=lambda k: speedup[k])
    axis.plot(
        [speedup[k] for k in front],
        [quality[k] for k in front],
        color="tab:blue",
        linewidth=1.5,
        marker="o",
        markersize=5,
        label="frontier",
    )
    for k in points:
        axis.annotate(str(k), (speedup[k], quality[k]), textcoords="offset points", xytext=(3, 3), fontsize=7)
    for label, layer in marks.items():
        if layer is not None and layer in points:
            _mark(axis, label, f"{label} ({layer})", speedup[layer], quality[layer])
    _speedup_x_axis(axis, [speedup[k] for k in points], ylabel)


def draw_pair_frontier(
    axis,
    table: Mapping[str, Sequence[float | None]],
    speedup: Sequence[float],
    layers: Sequence[int],
    on_frontier: Sequence[tuple[str, int]],
    marks: Mapping[str, tuple[str, int] | None],
    ylabel: str,
) -> None:
    """Every (variant, layer) pair of `table` (variant -> quality by layer) with a quality as a point at (ideal
    speed-up, quality), one colour per variant, labelled k; the frontier over all pairs joined; each named pair
    in `marks` circled."""
    plt = pyplot()
    colours = plt.get_cmap("tab10")
    xs = []
    for index, (variant, quality) in enumerate(table.items()):
        points = [k for k in layers if k < len(quality) and is_finite(quality[k])]
        xs += [speedup[k] for k in points]
        axis.scatter(
            [speedup[k] for k in points],
            [quality[k] for k in points],
            s=16,
            alpha=0.6,
            color=colours(index % 10),
            label=variant,
        )
        for k in points:
            axis.annotate(
                str(k),
                (speedup[k], quality[k]),
                textcoords="offset points",
                xytext=(3, 3),
                fontsize=6,
                color=colours(index % 10),
            )
    front = sorted(on_frontier, key=lambda pair: speedup[pair[1]])
    axis.plot(
        [speedup[k] for _, k in front],
        [table[v][k] for v, k in front],
        color="black",
        linewidth=1.2,
        marker="o",
        markersize=4,
        label="frontier (every pair)",
    )
    for label, pair in marks.items():
        if pair is not None and pair[0] in table and is_finite(table[pair[0]][pair[1]]):
            _mark(axis, label, f"{label} ({pair[0]}, layer {pair[1]})", speedup[pair[1]], table[pair[0]][pair[1]])
    if xs:
        _speedup_x_axis(axis, xs, ylabel)


def _mark(axis, kind: str, label: str, x: float, y: float) -> None:
    marker, color = MARKS.get(kind, ("o", "black"))
    axis.scatter(
        [x], [y], s=90, marker=marker, facecolors="none", edgecolors=color, linewidths=1.8, label=label, zorder=5
    )


def _speedup_x_axis(axis, xs: Sequence[float], ylabel: str) -> None:
    axis.set_xscale("log")
    low, high = min(xs), max(xs)
    ticks = [t for t in SPEEDUP_TICKS if low / 1.05 <= t <= high * 1.05]
    axis.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    axis.minorticks_off()
    axis.set_xlabel("ideal speed-up over the full model (log scale)")
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=7, loc="best")


def draw_statics(axis, statics: Sequence[Mapping]) -> None:
    """Each scored static table (validation.json's `static_exports`) as a dotted line at its mean score: a table
    does no block's work, so it has no ideal speed-up to place it at (`layerpick bench --static` measures it)."""
    scored = [entry for entry in statics if is_finite(entry.get("mean"))]
    for index, entry in enumerate(scored):
        axis.axhline(
            entry["mean"],
            color=STATIC_COLOURS[index % len(STATIC_COLOURS)],
            linestyle=":",
            linewidth=1.5,
            label=f"static {entry['name']} (from layer {entry['layer']}): {entry['mean']:.3f}",
        )
    if scored:
        axis.legend(fontsize=7, loc="best")


def frontier_figure():
    """A new figure with one axis, sized for a frontier plot: (figure, axis)."""
    return pyplot().subplots(figsize=(8, 5.2))


def save_figure(figure, axis, title: str, path: Path) -> Path:
    """Title `axis`, save `figure` to `path` and close it."""
    plt = pyplot()
    axis.set_title(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)


def add_speedup_axis(axis, speedup: Sequence[float], num_layers: int) -> None:
    """A top axis over a relative-depth x axis: ticks at the layers whose ideal speed-up is nearest to round
    values (1x, 1.5x, 2x, 3x, ...), labelled with their exact speed-up."""
    top = axis.twiny()
    top.set_xlim(axis.get_xlim())
    ticks: dict[int, float] = {}
    for target in SPEEDUP_TICKS:
        k = min(range(1, num_layers + 1), key=lambda j: abs(math.log(speedup[j] / target)))
        if abs(math.log(speedup[k] / target)) < 0.2:
            ticks[k] = speedup[k]
    top.set_xticks([k / num_layers for k in ticks])
    top.set_xticklabels([f"{value:.3g}x" for value in ticks.values()], fontsize=7)
    top.set_xlabel("ideal speed-up", fontsize=8)
