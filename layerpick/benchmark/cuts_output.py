"""What a multi-cut bench writes: cuts.json, cuts.md (one table: the cuts, then any static exports timed beside
them, marked `static`) and cuts.png (the cuts' measured against ideal speed-up, and validated score against
speed-up when a validation was given; a static table has no ideal speed-up, its speed-up is drawn as a line),
all into one folder, atomically; and `bench_cuts_and_write`, the multi-cut bench from its options to its files."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.cuts import CutsResult, plan_cuts, run_cuts
from layerpick.benchmark.statics import StaticRow

FILES = ("cuts.json", "cuts.md", "cuts.png")


def to_markdown(result: CutsResult) -> str:
    scored = result.full_validated_score is not None
    lines = [
        f"# layerpick bench: cuts of {result.model}",
        "",
        f"{len(result.layers)} cut(s) against the full model ({result.num_layers} layers), side by side in one "
        f"process: {result.texts} texts, {result.repeats} interleaved repeats, {result.device}, "
        f"{result.threads} threads. Speed-up = cut texts/s / full texts/s; ideal = compute per token "
        f"(attention at {result.seq_length} tokens)."
        + (
            f" {len({row.path for row in result.statics})} static export(s) timed in the same run, marked static."
            if result.statics
            else ""
        ),
        "",
    ]
    header = [
        "layer",
        "batch",
        "texts/s cut / full",
        "measured speed-up",
        "ideal speed-up",
        "% of ideal",
        "p50 ms cut / full",
        "peak MB",
        "memory",
        "params kept",
        "size MB",
    ] + (["validated mean"] if scored else [])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in result.rows:
        cells = [
            str(row.layer),
            str(row.batch_size),
            f"{row.texts_per_s:.1f} / {row.full_texts_per_s:.1f}",
            f"{row.measured_speedup:.2f}x",
            f"{row.ideal_speedup:.2f}x",
            f"{row.measured_speedup / row.ideal_speedup:.0%}",
            f"{row.latency_median_ms:.1f} / {row.full_latency_median_ms:.1f}",
            _mb(row.peak_memory_bytes),
            "–" if row.memory_ratio is None else f"{row.memory_ratio:.2f}x",
            f"{row.params_kept / result.params_full:.0%}",
            _mb(row.size_bytes),
        ]
        lines.append("| " + " | ".join(cells + ([_score(row.validated_score)] if scored else [])) + " |")
    lines += [_static_line(row, scored) for row in result.statics]
    if scored:
        lines += [
            "",
            f"Full model's validated mean score: {_score(result.full_validated_score)} "
            f"(validation: `{result.validation}`).",
        ]
    if result.full_size_bytes:
        lines += [
            "",
            f"Size on disk: the full model's weights {_mb(result.full_size_bytes)} MB; a cut's is its "
            "export's estimated weights (the full weights' share kept), a static export's every file of "
            "its directory.",
        ]
    if result.memory_method:
        lines += ["", f"Memory: {result.memory_method}."]
    lines += [""] + [f"- {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def _static_line(row: StaticRow, scored: bool) -> str:
    cells = [
        f"static {row.name} (layer {row.layer})",
        str(row.batch_size),
        f"{row.texts_per_s:.1f} / {row.full_texts_per_s:.1f}",
        f"{row.measured_speedup:.2f}x",
        "–",
        "–",
        f"{row.latency_median_ms:.1f} / {row.full_latency_median_ms:.1f}",
        _mb(row.peak_memory_bytes),
        "–" if row.memory_ratio is None else f"{row.memory_ratio:.2f}x",
        "table",
        _mb(row.size_bytes),
    ]
    return "| " + " | ".join(cells + (["–"] if scored else [])) + " |"


def plot_cuts(result: CutsResult, path: Path) -> Path:
    from layerpick.frontier.plot import pyplot

    plt = pyplot()
    scored = result.full_validated_score is not None
    figure, axes = plt.subplots(1, 2 if scored else 1, figsize=(13 if scored else 7, 5), squeeze=False)
    left = axes[0][0]
    sizes = sorted({row.batch_size for row in result.rows})
    top = max(max(r.ideal_speedup, r.measured_speedup) for r in result.rows) * 1.1
    left.plot([1, top], [1, top], color="gray", linestyle="--", linewidth=1, label="measured = ideal")
    for size in sizes:
        rows = [r for r in result.rows if r.batch_size == size]
        left.plot(
            [r.ideal_speedup for r in rows], [r.measured_speedup for r in rows], marker="o", label=f"batch {size}"
        )
        for r in rows:
            left.annotate(
                str(r.layer),
                (r.ideal_speedup, r.measured_speedup),
                textcoords="offset points",
                xytext=(3, 3),
                fontsize=7,
            )
    for row in result.statics:
        if row.batch_size == sizes[-1]:
            left.axhline(
                row.measured_speedup,
                color="tab:red",
                linestyle=":",
                linewidth=1,
                label=f"static {row.name} (layer {row.layer}), batch {row.batch_size}",
            )
    _label_axes(
        left,
        "ideal speed-up",
        "measured speed-up (throughput, cut / full)",
        f"{result.model}: cuts against the full model",
    )
    if scored:
        _plot_scores(axes[0][1], result, sizes)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)


def _plot_scores(axis, result: CutsResult, sizes: list[int]) -> None:
    for size in sizes:
        rows = [r for r in result.rows if r.batch_size == size and r.validated_score is not None]
        axis.plot(
            [r.measured_speedup for r in rows],
            [r.validated_score for r in rows],
            marker="o",
            linestyle="",
            label=f"measured, batch {size}",
        )
    rows = [r for r in result.rows if r.batch_size == sizes[0] and r.validated_score is not None]
    axis.scatter(
        [r.ideal_speedup for r in rows], [r.validated_score for r in rows], marker="x", color="black", label="ideal"
    )
    for r in rows:
        axis.annotate(
            str(r.layer), (r.ideal_speedup, r.validated_score), textcoords="offset points", xytext=(3, 3), fontsize=7
        )
    axis.scatter(
        [1.0],
        [result.full_validated_score],
        marker="v",
        color="tab:gray",
        s=60,
        label=f"full model ({result.num_layers})",
    )
    _label_axes(axis, "speed-up over the full model", "validated mean task score", "validated score against speed-up")


def _label_axes(axis, xlabel: str, ylabel: str, title: str) -> None:
    """Name `axis`'s axes and title it; a light grid and the legend."""
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_title(title, fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)


def write_cuts(result: CutsResult, output: Path) -> list[Path]:
    """cuts.json, cuts.md and cuts.png into `output` (created if needed); all or nothing."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".layerpick-cuts-", dir=output))
    try:
        (staging / "cuts.json").write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
        (staging / "cuts.md").write_text(to_markdown(result), encoding="utf-8")
        plot_cuts(result, staging / "cuts.png")
        for name in FILES:
            os.replace(staging / name, output / name)
        return [output / name for name in FILES]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def bench_cuts_and_write(
    source: str,
    layers: str | None,
    config: BenchConfig,
    *,
    validation: Path | None = None,
    statics: tuple[Path, ...] = (),
    output: Path | None = None,
    progress: bool = True,
) -> tuple[CutsResult, list[Path]]:
    """`layerpick bench SOURCE --layers ...`: plan the cuts (and `--static` tables, the `--validation` frontier),
    time them against the full model, and write cuts.json, cuts.md and cuts.png into `output` (None:
    layerpick-out/<model>/bench)."""
    from layerpick._util.outputs import check_output_location, model_output_dir
    from layerpick.core.models import LoadOptions

    if layers is None:
        needs = ("--static", "2,4") if statics else ("--validation", "frontier")
        raise BenchError(f"{needs[0]} needs --layers (e.g. --layers {needs[1]})")
    plan = plan_cuts(source, layers, validation, config.baseline, statics)
    target = output or model_output_dir(plan.source) / "bench"
    check_output_location(target, "--output")  # before the minutes of timing, not after
    result = run_cuts(plan, config.validate(), LoadOptions(device=config.device), progress=progress)
    return result, write_cuts(result, target)


def _mb(value: int | None) -> str:
    return "–" if value is None else f"{value / 1e6:.0f}"


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"
