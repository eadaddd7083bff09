"""`layerpick run`: select, validate (with --tasks), export and bench in one output folder, then one report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from layerpick._util import interrupt
from layerpick._util.formatting import number
from layerpick.bench.run import BenchConfig
from layerpick.cli import options as opt
from layerpick.core import registry
from layerpick.core.models import LoadOptions
from layerpick.errors import LayerpickError
from layerpick.frontier.choice import ChoiceOptions
from layerpick.selection.job import SelectConfig, default_output
from layerpick.workflow.report import RUN_REPORT_PAGE
from layerpick.workflow.run import RunConfig, RunResult, run_workflow, speedup_summary


@opt.with_load_options
@opt.with_select_options
def run(
    model: opt.ModelArg = None,
    tasks: Annotated[Optional[list[str]], typer.Option(
        "--tasks", "-t", help="MTEB task names or task folders (comma-separated or repeated); none: no validation.",
        envvar="LAYERPICK_TASKS")] = None,
    layers: Annotated[Optional[str], typer.Option(
        help="Layers to validate: 'all', or a mix of K, last and selected (default: selected; all with --choose "
             "validated or --max-loss).")] = None,
    task_data: Annotated[Optional[list[Path]], typer.Option(
        "--task-data", help="Folder of task folders named after MTEB tasks (offline).", envvar="LAYERPICK_TASK_DATA")]
    = None,
    output: Annotated[Optional[Path], typer.Option(
        help="Output folder (default layerpick-out/<model>/run); an earlier run's finished stages there are reused.")]
    = None,
    force: Annotated[bool, typer.Option("--force", help="Recompute every stage, reusing nothing.")] = False,
    normalize: Annotated[Optional[bool], typer.Option(
        "--normalize/--no-normalize", help="Unit-length embeddings, or raw pooled ones (default: as the model's own "
        "sentence-transformers pipeline; raw for other models).")] = None,
    bench: Annotated[bool, typer.Option("--bench/--no-bench", help="Measure the export against the full model.")]
    = True,
    bench_batch_sizes: Annotated[str, typer.Option(help="Batch sizes for the bench.")] = "1,32",
    bench_texts: Annotated[int, typer.Option(help="Texts per bench pass.")] = BenchConfig.texts,
    bench_repeats: Annotated[int, typer.Option(help="Timed passes per model and batch size.")] = 3,
    bench_memory: Annotated[bool, typer.Option("--bench-memory/--no-bench-memory",
                                               help="Measure peak memory (a fresh process per model).")] = True,
    threads: opt.Threads = None,
    choose: opt.Choose = None,
    max_loss: opt.MaxLoss = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a summary object (JSON) on stdout only.")] = False,
    quiet: opt.Quiet = False,
    selection: SelectConfig = SelectConfig(),
    load: LoadOptions = LoadOptions(),
) -> None:
    """Select a layer, validate it, export it and bench it, into one folder with one report (report.html).

    Example: layerpick run smollm2-135m --tasks STSBenchmark,tasks/BIOSSES --limit 256 --output runs/smollm2
    """
    name = registry.model_or_default(model)
    from layerpick.validation import split_items  # mteb-free until a command runs

    items = tuple(item for value in tasks or [] for item in split_items(value))
    choice = ChoiceOptions.parse(choose, max_loss)
    sizes = opt.parse_sizes(bench_batch_sizes, "--bench-batch-sizes")
    bench_config = BenchConfig(batch_sizes=sizes, texts=bench_texts, repeats=bench_repeats, device=load.device,
                               memory=bench_memory, threads=threads) if bench else None
    layers = layers or ("all" if choice.validated else "selected")
    config = RunConfig(tasks=items, layers=layers, task_data=tuple(task_data or ()), normalize=normalize,
                       bench=bench_config, select=selection, choice=choice, force=force)
    target = output or default_output(name) / "run"
    interrupt.final_output(target / RUN_REPORT_PAGE)  # the last file the run writes
    result = run_workflow(name, target, load, config, progress=not quiet, announce=_announcer(quiet))
    files = result.report_files
    if as_json:
        typer.echo(json.dumps(summary(result, files), indent=2))
    else:
        _render(result, files)
    failures = (result.validation or {}).get("failures")
    if failures:
        raise LayerpickError(f"{len(failures)} validation task(s) failed ({', '.join(failures)}); see {files[0]}")


def summary(result: RunResult, files: list[Path]) -> dict:
    """The answer in a few keys: which layer, how good, how much faster, and where everything is."""
    comparison = (result.validation or {}).get("comparison")
    return {
        "model": result.model,
        "num_layers": result.select.num_layers,
        "selected_layer": result.select.selected_layer,
        "rule": result.select.rule,
        "exported_layer": result.export["layer"],
        "choice": result.config.choice.describe(),
        "prompt": result.select.prompt,
        "transform": result.export.get("transform"),
        "validation": comparison,
        "speedup": speedup_summary(result.bench),
        "export": str(result.export_dir),
        "parity_passed": result.export["parity"]["passed"],
        "report": [str(path) for path in files],
        "stages": result.stages,
    }


def _announcer(quiet: bool):
    console = Console(stderr=True, highlight=False)

    def announce(stage: str, reused: bool) -> None:
        if not quiet:
            console.print(f"[bold]{stage}[/bold]: " + ("reusing the finished stage" if reused else "running"))

    return announce


def _render(result: RunResult, files: list[Path]) -> None:
    console = Console(highlight=False, soft_wrap=True)  # whole lines, also when piped
    select, layer = result.select, result.export["layer"]
    how = select.rule if layer == select.selected_layer and not result.config.choice.validated else (
        f"{' '.join(result.config.choice.flags())}; the rule {select.rule} picked layer {select.selected_layer}")
    prompt = (select.prompt or {}).get("name", "none")
    wrapped = "" if prompt == "none" else f", prompt {prompt}"
    transform = result.export.get("transform")
    wrapped += f", transform {transform['name']} ({transform['output_dim']} dimensions)" if transform else ""
    console.print(f"[bold]layer {layer} of {select.num_layers}[/bold] ({how}{wrapped})")
    comparison = (result.validation or {}).get("comparison")
    if comparison:
        chosen = [(name, comparison[name]) for name in ("selected", "last", "best")]
        console.print("mean task score: " + ", ".join(
            f"{name} layer {c['layer']} {c['mean_score']:.4f}" for name, c in chosen if c["mean_score"] is not None))
    section = (result.validation or {}).get("frontier")
    if section:
        console.print(f"frontier (mean task score against ideal speed-up): layers "
                      f"{', '.join(str(k) for k in section['layers'])}")
        if result.config.choice.validated:
            console.print(f"exported {section['reason']}")
    for row in (result.bench or {}).get("rows", []):
        console.print(f"batch {row['batch_size']}: throughput x{_number(row['throughput_ratio'])} vs the full model")
    console.print(f"export: {result.export_dir}")
    console.print("report: " + ", ".join(str(path) for path in files))


def _number(value) -> str:
    return number(value, ".2f")
