"""A benchmark on the terminal, as `layerpick bench` prints it: the two models, their speed side by side (ratios
export / full), the transform's cost and the notes; with `--layers`, the cuts' markdown table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from layerpick.benchmark.cuts import CutsResult
    from layerpick.benchmark.run import BenchResult


def render_bench(result: "BenchResult") -> None:
    """The tables and lines `layerpick bench` prints on stdout for an export against its full model."""
    console = Console()
    console.print(models_table(result))
    console.print(speed_table(result))
    single = next((row for row in result.rows if row.batch_size == 1), None)
    if single is not None:
        console.print(
            single_query_line(single.exported.latency_median_ms, single.baseline.latency_median_ms), soft_wrap=True
        )
    console.print(
        f"{result.texts} texts, {result.repeats} interleaved repeats, {result.device}, "
        f"{result.threads} threads, export on {result.backend}. Ratios are export / full."
    )
    if result.memory_method:
        console.print(f"memory: {result.memory_method}")
    if result.transform:
        cost = ", ".join(
            f"{batch}: {entry['us_per_text']:.1f} us per text"
            + (
                f" ({entry['share_of_export_time']:.2%} of the export's time)"
                if entry["share_of_export_time"] is not None
                else ""
            )
            for batch, entry in result.transform["cost"].items()
        )
        console.print(
            f"transform {result.transform['name']} ({result.transform['input_dim']} -> "
            f"{result.transform['output_dim']}): {cost}",
            highlight=False,
        )
    for note in result.notes:
        console.print(f"note: {note}")


def render_cuts(result: "CutsResult", written: Iterable[Path]) -> None:
    """What `layerpick bench --layers` prints: the cuts' markdown (`bench.cuts_output.to_markdown`) and the files
    it wrote."""
    from layerpick.benchmark.cuts_output import to_markdown

    console = Console(soft_wrap=True, highlight=False)
    console.print(to_markdown(result))
    console.print("wrote " + ", ".join(str(path) for path in written), markup=False, emoji=False)


def models_table(result: "BenchResult") -> Table:
    table = Table(title="models")
    for column in ("", "layers", "parameters", "weights (MB)", "path"):
        table.add_column(column, justify="left" if column in ("", "path") else "right")
    for role, facts in (("export", result.exported), ("full", result.baseline)):
        layers = "?" if facts.layers is None else str(facts.layers)  # 0: a static table
        table.add_row(role, layers, f"{facts.parameters:,}", _mb(facts.weights_bytes), facts.path)
    table.add_row("ratio", "", _x(result.parameter_ratio), _x(result.weights_ratio), "")
    return table


def single_query_line(export_ms: float, full_ms: float) -> str:
    """Batch 1's median latency: what a query encoder answering one query at a time costs."""
    return (
        f"one text at a time (a query encoder's latency): p50 {export_ms:.1f} ms against {full_ms:.1f} ms for the "
        f"full model ({full_ms / export_ms:.2f}x faster)"
    )


def speed_table(result: "BenchResult") -> Table:
    table = Table(title="export / full model")
    for column in ("batch", "texts/s", "speed-up", "p50 ms", "p90 ms", "peak MB", "memory"):
        table.add_column(column, justify="right")
    for row in result.rows:
        exported, full = row.exported, row.baseline
        table.add_row(
            str(row.batch_size),
            f"{exported.texts_per_s:.1f} / {full.texts_per_s:.1f}",
            _x(row.throughput_ratio),
            f"{exported.latency_median_ms:.1f} / {full.latency_median_ms:.1f}",
            f"{exported.latency_p90_ms:.1f} / {full.latency_p90_ms:.1f}",
            f"{_mb(exported.peak_memory_bytes)} / {_mb(full.peak_memory_bytes)}",
            _x(row.memory_ratio),
        )
    return table


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
