"""`layerpick run`: select, validate (with --tasks), export and bench in one output folder, then one report."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick import workflow
from layerpick._util import interrupt
from layerpick.benchmark.config import BenchConfig
from layerpick.cli import options as opt
from layerpick.cli.options import default
from layerpick.core import registry
from layerpick.core.load_options import LoadOptions
from layerpick.errors import LayerpickError
from layerpick.frontier.choice import ChoiceOptions
from layerpick.cli.onnx_options import GraphFormat, Quantize
from layerpick.healing.config import HealConfig
from layerpick._util.outputs import model_output_dir
from layerpick.selection.config import SelectConfig
from layerpick.workflow.render import announcer, render_run, run_summary
from layerpick._util.filenames import RUN_REPORT_PAGE
from layerpick.workflow.config import NONE, RunConfig


@opt.with_load_options
@opt.with_select_options
@opt.with_choice_options
def run(
    model: opt.ModelArg = None,
    tasks: opt.Tasks = None,
    layers: Annotated[
        Optional[str],
        typer.Option(
            help="Layers to validate: 'all', or a mix of K, last and selected "
            f"(default: {default(RunConfig, 'layers')}; "
            "all with --choose validated or --max-loss)."
        ),
    ] = None,
    static: opt.StaticExports = None,
    task_data: opt.TaskData = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            help="Output folder (default layerpick-out/<model>/run); an earlier run's finished stages there are reused."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Recompute every stage, reusing nothing.")] = default(
        RunConfig, "force"
    ),
    normalize: opt.Normalize = default(RunConfig, "normalize"),
    bench: Annotated[
        bool, typer.Option("--bench/--no-bench", help="Measure the export against the full model.")
    ] = default(RunConfig, "bench") is not None,
    bench_batch_sizes: Annotated[str, typer.Option(help="Batch sizes for the bench.")] = opt.sizes_text(
        default(BenchConfig, "batch_sizes")
    ),
    bench_texts: Annotated[int, typer.Option(help="Texts per bench pass.")] = default(BenchConfig, "texts"),
    bench_repeats: Annotated[int, typer.Option(help="Timed passes per model and batch size.")] = default(
        BenchConfig, "repeats"
    ),
    bench_memory: Annotated[
        bool, typer.Option("--bench-memory/--no-bench-memory", help="Measure peak memory (a fresh process per model).")
    ] = default(BenchConfig, "memory"),
    threads: opt.Threads = default(BenchConfig, "threads"),
    heal_layers: Annotated[
        str,
        typer.Option(
            "--heal-layers",
            help="Export a healed cut instead of a plain one: heal these cuts (e.g. 2,3,4, or all) on --fit-texts "
            "(else --calibration) and keep the shallowest close enough to the full model. auto: where select "
            "keeps the last layer of a trained embedder, the cuts at half and three quarters of its depth; "
            "none: never heal.",
        ),
    ] = "auto",
    heal_minutes: Annotated[
        Optional[float],
        typer.Option(
            "--heal-minutes",
            help=f"Fit the heal's texts and epochs to about this many minutes for the first cut on this machine "
            f"(default {default(RunConfig, 'heal_minutes'):g}; with --heal-epochs alone: every text, those epochs).",
        ),
    ] = None,
    heal_max_loss: Annotated[
        Optional[float],
        typer.Option("--heal-max-loss", help="With --heal-layers: heal's --max-loss (default 0.12)."),
    ] = None,
    heal_epochs: Annotated[
        Optional[int],
        typer.Option("--heal-epochs", help="With --heal-layers: heal's --epochs, passes over the texts (default 10)."),
    ] = None,
    heal_blocks: Annotated[
        Optional[str],
        typer.Option("--heal-blocks", help="With --heal-layers: heal's --blocks, spread or first (default spread)."),
    ] = None,
    format: GraphFormat = default(RunConfig, "format"),
    quantize: Quantize = default(RunConfig, "quantize"),
    as_json: opt.Json = False,
    quiet: opt.Quiet = False,
    selection: SelectConfig = SelectConfig(),
    choice: ChoiceOptions = ChoiceOptions(),
    load: LoadOptions = LoadOptions(),
) -> None:
    """Select a layer, validate it, export it and bench it, into one folder with one report (report.html).

    Example: layerpick run smollm2-135m --tasks STSBenchmark,tasks/BIOSSES --limit 256 --output runs/smollm2
    """
    name = registry.model_or_default(model)
    from layerpick.validation import split_items  # mteb-free until a command runs

    items = tuple(item for value in tasks or [] for item in split_items(value))
    sizes = opt.parse_sizes(bench_batch_sizes, "--bench-batch-sizes")
    bench_config = BenchConfig(
        batch_sizes=sizes,
        texts=bench_texts,
        repeats=bench_repeats,
        device=load.device,
        memory=bench_memory,
        threads=threads,
    )
    config = opt.build(
        RunConfig,
        locals(),
        tasks=items,
        layers=layers or ("all" if choice.validated else default(RunConfig, "layers")),
        task_data=tuple(task_data or ()),
        static_exports=tuple(static or ()),
        bench=bench_config if bench else None,
        select=selection,
        heal=heal_config(heal_layers, heal_max_loss, heal_epochs, heal_blocks),
        heal_minutes=heal_budget(heal_minutes, heal_epochs),
    )
    target = output or model_output_dir(name) / "run"
    interrupt.final_output(target / RUN_REPORT_PAGE)  # the last file the run writes
    result = workflow.run_workflow(name, target, load, config, progress=not quiet, announce=announcer(quiet))
    files = result.report_files
    if as_json:
        typer.echo(json.dumps(run_summary(result, files), indent=2))
    else:
        render_run(result, files)
    failures = result.validation.failures if result.validation else None
    if failures:
        raise LayerpickError(f"{len(failures)} validation task(s) failed ({', '.join(failures)}); see {files[0]}")


def heal_config(layers: str, max_loss: float | None, epochs: int | None, blocks: str | None) -> HealConfig | None:
    """run's heal options as a HealConfig (None for `--heal-layers none`); unset ones keep run's defaults."""
    if layers == NONE:
        return None
    given = {"layers": layers, "max_loss": max_loss, "epochs": epochs, "blocks": blocks}
    return dataclasses.replace(default(RunConfig, "heal"), **{k: v for k, v in given.items() if v is not None})


def heal_budget(minutes: float | None, epochs: int | None) -> float | None:
    """`--heal-minutes`, else run's default budget unless `--heal-epochs` asks for its epochs over every text."""
    if minutes is not None or epochs is not None:
        return minutes
    return default(RunConfig, "heal_minutes")
