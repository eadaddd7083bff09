"""`layerpick bench`: the exported model against its full model, side by side: speed, latency, memory; with
`--layers`, several cuts of one model against the full model in one run (a table and a plot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick.benchmark.config import BenchConfig
from layerpick.benchmark.render import render_bench, render_cuts
from layerpick.benchmark.run import run_bench
from layerpick.cli import options as opt
from layerpick.cli.options import default


def bench(
    directory: Annotated[
        str,
        typer.Argument(
            help="An exported sentence-transformers directory; with --layers also "
            "a model (alias, directory, .gguf or hub id)."
        ),
    ],
    baseline: Annotated[
        Optional[str],
        typer.Option(help="The full model: alias, directory, .gguf or hub id (default: the source in layerpick.json)."),
    ] = default(BenchConfig, "baseline"),
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated batch sizes.")] = opt.sizes_text(
        default(BenchConfig, "batch_sizes")
    ),
    texts: Annotated[int, typer.Option(help="How many calibration sentences to embed per pass.")] = default(
        BenchConfig, "texts"
    ),
    repeats: Annotated[int, typer.Option(help="Timed passes per model and batch size (interleaved).")] = default(
        BenchConfig, "repeats"
    ),
    memory: Annotated[bool, typer.Option(help="Measure peak memory (one fresh process per model).")] = default(
        BenchConfig, "memory"
    ),
    device: opt.Device = default(BenchConfig, "device"),
    threads: opt.Threads = default(BenchConfig, "threads"),
    backend: opt.Backend = default(BenchConfig, "backend"),
    layers: Annotated[
        Optional[str],
        typer.Option(
            help="Bench several cuts in one run: comma-separated layers (e.g. 6,13,28) or 'frontier' (the frontier "
            "layers of --validation), each against the full model."
        ),
    ] = None,
    validation: Annotated[
        Optional[Path],
        typer.Option(
            help="A validation.json of the same model: its frontier for --layers frontier, its mean scores beside "
            "each cut."
        ),
    ] = None,
    static: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--static",
            help="With --layers: a static export (layerpick export --format static) of the same model to "
            "time in the same run, beside the cuts and the full model; repeat for several.",
        ),
    ] = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            help="With --layers: where cuts.json, cuts.md and cuts.png go (default layerpick-out/<model>/bench)."
        ),
    ] = None,
    as_json: opt.Json = False,
    quiet: opt.Quiet = False,
) -> None:
    """Throughput, batch latency and peak memory of an export vs its full model, as ratios (export / full).

    Example: layerpick bench ./smollm2-k15 --batch-sizes 1,32 --texts 128 --threads 4 --json
    """
    config = opt.build(BenchConfig, locals(), batch_sizes=opt.parse_sizes(batch_sizes, "--batch-sizes"))
    if output is not None and layers is None and validation is None and not static:
        raise typer.BadParameter(
            "applies with --layers (cuts.json, cuts.md, cuts.png); one bench writes nothing", param_hint="--output"
        )
    if layers is not None or validation is not None or static:
        from layerpick.benchmark.cuts_output import bench_cuts_and_write  # torch only when a bench runs

        statics = tuple(static or ())
        cuts, written = bench_cuts_and_write(
            directory, layers, config, validation=validation, statics=statics, output=output, progress=not quiet
        )
        if as_json:
            typer.echo(json.dumps(cuts.to_json(), indent=2))
        else:
            render_cuts(cuts, written)
        return
    result = run_bench(directory, config, progress=not quiet)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        render_bench(result)
