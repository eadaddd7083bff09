"""`layerpick bench`: the exported model against its full model, side by side: speed, latency, memory; with
`--layers`, several cuts of one model against the full model in one run (a table and a plot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from layerpick.bench.config import BenchConfig, BenchError
from layerpick.bench.run import BenchResult, run_bench
from layerpick.cli import options as opt


def bench(
    directory: Annotated[str, typer.Argument(help="An exported sentence-transformers directory; with --layers also "
                                                  "a model (alias, directory, .gguf or hub id).")],
    baseline: Annotated[Optional[str], typer.Option(
        help="The full model: alias, directory, .gguf or hub id (default: the source in layerpick.json).")] = None,
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated batch sizes.")] = "1,32",
    texts: Annotated[int, typer.Option(help="How many calibration sentences to embed per pass.")] = BenchConfig.texts,
    repeats: Annotated[int, typer.Option(help="Timed passes per model and batch size (interleaved).")] = 3,
    memory: Annotated[bool, typer.Option(help="Measure peak memory (one fresh process per model).")] = True,
    device: opt.Device = "auto",
    threads: opt.Threads = None,
    backend: Annotated[str, typer.Option(
        help="What runs the export: torch, onnx or onnx-int8 (its ONNX graphs, through onnxruntime).")] = "torch",
    layers: Annotated[Optional[str], typer.Option(
        help="Bench several cuts in one run: comma-separated layers (e.g. 6,13,28) or 'frontier' (the frontier "
             "layers of --validation), each against the full model.")] = None,
    validation: Annotated[Optional[Path], typer.Option(
        help="A validation.json of the same model: its frontier for --layers frontier, its mean scores beside "
             "each cut.")] = None,
    static: Annotated[Optional[list[Path]], typer.Option(
        "--static", help="With --layers: a static export (layerpick export --format static) of the same model to "
        "time in the same run, beside the cuts and the full model; repeat for several.")] = None,
    output: Annotated[Optional[Path], typer.Option(
        help="With --layers: where cuts.json, cuts.md and cuts.png go (default layerpick-out/<model>/bench).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print only the result object (JSON) on stdout.")] = False,
    quiet: opt.Quiet = False,
) -> None:
    """Throughput, batch latency and peak memory of an export vs its full model, as ratios (export / full).

    Example: layerpick bench ./smollm2-k15 --batch-sizes 1,32 --texts 128 --threads 4 --json
    """
    config = BenchConfig(baseline=baseline, batch_sizes=opt.parse_sizes(batch_sizes, "--batch-sizes"), texts=texts,
                         repeats=repeats, device=device, memory=memory, threads=threads, backend=backend)
    if layers is not None or validation is not None or static:
        _bench_cuts(directory, layers, validation, config, output, as_json, quiet, tuple(static or ()))
        return
    result = run_bench(directory, config, progress=not quiet)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        _render(result)


def _bench_cuts(source: str, layers: str | None, validation: Path | None, config: BenchConfig,
                output: Path | None, as_json: bool, quiet: bool, statics: tuple[Path, ...] = ()) -> None:
    from layerpick.bench.cuts import plan_cuts, run_cuts
    from layerpick.bench.cuts_output import to_markdown, write_cuts
    from layerpick.core.models import LoadOptions
    from layerpick.selection.job import default_output

    if layers is None:
        raise BenchError(f"{'--static' if statics else '--validation'} needs --layers (e.g. --layers "
                         f"{'2,4' if statics else 'frontier'})")
    plan = plan_cuts(source, layers, validation, config.baseline, statics)
    result = run_cuts(plan, config.validate(), LoadOptions(device=config.device), progress=not quiet)
    written = write_cuts(result, output or default_output(plan.source) / "bench")
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    Console(soft_wrap=True, highlight=False).print(to_markdown(result))
    typer.echo("wrote " + ", ".join(str(path) for path in written))


def _render(result: BenchResult) -> None:
    console = Console()
    console.print(_models_table(result))
    console.print(_speed_table(result))
    console.print(f"{result.texts} texts, {result.repeats} interleaved repeats, {result.device}, "
                  f"{result.threads} threads, export on {result.backend}. Ratios are export / full.")
    if result.memory_method:
        console.print(f"memory: {result.memory_method}")
    if result.transform:
        cost = ", ".join(f"{batch}: {entry['us_per_text']:.1f} us per text"
                         + (f" ({entry['share_of_export_time']:.2%} of the export's time)"
                            if entry["share_of_export_time"] is not None else "")
                         for batch, entry in result.transform["cost"].items())
        console.print(f"transform {result.transform['name']} ({result.transform['input_dim']} -> "
                      f"{result.transform['output_dim']}): {cost}", highlight=False)
    for note in result.notes:
        console.print(f"note: {note}")


def _models_table(result: BenchResult) -> Table:
    table = Table(title="models")
    for column in ("", "layers", "parameters", "weights (MB)", "path"):
        table.add_column(column, justify="left" if column in ("", "path") else "right")
    for role, facts in (("export", result.exported), ("full", result.baseline)):
        layers = "?" if facts.layers is None else str(facts.layers)  # 0: a static table
        table.add_row(role, layers, f"{facts.parameters:,}", _mb(facts.weights_bytes), facts.path)
    table.add_row("ratio", "", _x(result.parameter_ratio), _x(result.weights_ratio), "")
    return table


def _speed_table(result: BenchResult) -> Table:
    table = Table(title="export / full model")
    for column in ("batch", "texts/s", "speed-up", "p50 ms", "p90 ms", "peak MB", "memory"):
        table.add_column(column, justify="right")
    for row in result.rows:
        exported, full = row.exported, row.baseline
        table.add_row(
            str(row.batch_size), f"{exported.texts_per_s:.1f} / {full.texts_per_s:.1f}", _x(row.throughput_ratio),
            f"{exported.latency_median_ms:.1f} / {full.latency_median_ms:.1f}",
            f"{exported.latency_p90_ms:.1f} / {full.latency_p90_ms:.1f}",
            f"{_mb(exported.peak_memory_bytes)} / {_mb(full.peak_memory_bytes)}", _x(row.memory_ratio),
        )
    return table


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
