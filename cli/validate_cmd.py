"""`layerpick validate`: MTEB scores of every layer (one forward pass per distinct text), or of an export.

Also `--materialize DIR`: write MTEB tasks into local task folders (needs internet) and exit.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from layerpick import validation
from layerpick._util import interrupt
from layerpick._util.filenames import VALIDATION_FILE
from layerpick._util.formatting import COST_HEADER, cost_cells, number
from layerpick.cli import options as opt
from layerpick.core import registry
from layerpick.core.cost import LayerCosts
from layerpick.core.models import LoadOptions
from layerpick.frontier.choice import ChoiceOptions
from layerpick.validation.picks import frontier_table, picks_lines

TASKS_HELP = (
    "MTEB task names, MTEB benchmark names, or task folders; comma-separated or repeated (a path that exists "
    "is taken whole, commas and all). A folder named after "
    "an MTEB task (e.g. data/STSBenchmark) runs that task on the folder's data, offline; any other folder is a "
    "custom task of the kind its files imply: test.jsonl with text+label (and train.jsonl), sentence1+sentence2+"
    "score (STS), sentence1+sentence2+label (pair classification), sentences+labels per line (clustering), or "
    "corpus.jsonl+queries.jsonl+qrels.tsv (retrieval)."
)


@opt.with_load_options
def validate(
    model: opt.ModelArg = None,
    tasks: Annotated[Optional[list[str]], typer.Option("--tasks", "-t", help=TASKS_HELP, envvar="LAYERPICK_TASKS")]
    = None,
    layers: Annotated[str, typer.Option(help="all, or a comma-separated mix of K, last and selected (needs --report; adds the last layer).")]
    = "all",
    report: Annotated[Optional[Path], typer.Option(help="A select report.json: compare its choice and metrics.")]
    = None,
    output: Annotated[Optional[Path], typer.Option(help="Output directory (default layerpick-out/<model>/validation); "
                                                   "finished (task, layer) results found there are reused.")] = None,
    exported: Annotated[Optional[Path], typer.Option(help="Validate an exported sentence-transformers directory "
                                                     "(its own output) instead of a model's layers.")] = None,
    task_data: Annotated[Optional[list[Path]], typer.Option("--task-data", help="Folder holding task folders named "
                                                            "after MTEB tasks; used instead of the hub.",
                                                            envvar="LAYERPICK_TASK_DATA")] = None,
    store: Annotated[Optional[Path], typer.Option(help="Representation store directory (default: the layerpick "
                                                  "cache).", envvar="LAYERPICK_STORE")] = None,
    normalize: Annotated[Optional[bool], typer.Option("--normalize/--no-normalize", help="Unit-length vectors or "
                                                      "raw pooled ones (default: as the model's own "
                                                      "sentence-transformers pipeline; raw for other models).")]
    = None,
    materialize: Annotated[Optional[Path], typer.Option(help="Write the --tasks as local task folders into this "
                                                        "directory (needs internet) and exit.")] = None,
    pooling: opt.Pooling = None,
    prompt: Annotated[Optional[str], typer.Option(
        "--prompt", help=f"Prompt template each text is wrapped in: {opt.PROMPT_HELP}; or several names, "
        "comma-separated (none,eol), to evaluate every (template, layer) pair side by side. With a template, "
        "last-token pooling is the default. Default: the --report's template, else none.",
        envvar="LAYERPICK_PROMPT")] = None,
    transform: Annotated[Optional[str], typer.Option(
        "--transform", help=f"Post-pooling transforms fitted per layer on the fit texts: {opt.TRANSFORM_HELP}; "
        "several, comma-separated (none,whiten-256), are evaluated side by side. Default: the --report's, else "
        "none.", envvar="LAYERPICK_TRANSFORM")] = None,
    fit_texts: opt.FitTexts = None,
    representation: opt.Representation = "exported",
    batch_size: opt.BatchSize = 32,
    max_length: Annotated[Optional[int], typer.Option(help="Truncate texts to this many tokens (default: the "
                                                      "model's sentence-transformers setting, else 512).",
                                                      envvar="LAYERPICK_MAX_LENGTH")] = None,
    choose: opt.Choose = None,
    max_loss: opt.MaxLoss = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print validation.json on stdout and nothing else.")] = False,
    quiet: opt.Quiet = False,
    load: LoadOptions = LoadOptions(),
) -> None:
    """Score layers on MTEB tasks: every layer from one forward pass per distinct text, resumable.

    Example: layerpick validate minilm-l6 --tasks STSBenchmark,tasks/my-sts-folder --layers all
    """
    items = [item for value in tasks or [] for item in validation.split_items(value)]
    if not items:
        raise typer.BadParameter("give at least one task", param_hint="--tasks")
    choice = ChoiceOptions.parse(choose, max_loss)
    _quiet_mteb_logging()
    if materialize is not None:
        for folder in validation.materialize_tasks(items, materialize):
            typer.echo(f"wrote {folder}")
        return
    config = validation.ValidateConfig(
        layers=layers, report=report, output_dir=output, pooling=pooling, representation=representation,
        batch_size=batch_size, max_length=max_length, normalize=normalize, exported_dir=exported, store_dir=store,
        task_data=task_data or (), progress=not quiet, choice=choice, prompt=prompt, transform=transform,
        fit_texts=fit_texts)
    source = None if exported and model is None else registry.model_or_default(model)
    interrupt.final_output(validation.validation_output(source, config) / VALIDATION_FILE)  # written last
    result = validation.run_validation(source, items, config, load_options=load)
    if as_json:
        typer.echo(json.dumps(result.data, indent=2))
    else:
        _render(result)
    if result.failures:
        _render_failures(result)
        names = ", ".join(result.failures)
        raise validation.ValidationFailedError(
            f"{len(result.failures)} task(s) failed ({names}); the others were written to {result.files[0]}")


def _render(result: "validation.ValidationReport") -> None:
    data = result.data
    console = Console()
    console.print(_table(data))
    comparison = data["comparison"]
    chosen = [(name, comparison[name]) for name in ("selected", "last", "best")]
    parts = [f"{name} layer {c['layer']}: {_fmt(c['mean_score'])}" for name, c in chosen if c["mean_score"] is not None]
    if parts:
        console.print("mean score at " + ", ".join(parts))
    if data.get("frontier"):
        header, rows = frontier_table(data)
        console.print(_plain_table("frontier: mean score against ideal speed-up", header, rows))
        for line in picks_lines(data["frontier"]):
            console.print(line, highlight=False)
    if data.get("by_prompt"):
        console.print(_prompt_table(data))
    if data.get("metric_correlations"):
        console.print(_correlations(data["metric_correlations"]))
    for note in data.get("notes", []):
        console.print(f"note: {note}")
    console.print(f"wrote {result.files[0]} and {', '.join(path.name for path in result.files[1:])} (+ MTEB "
                  f"results under {result.output_dir / data['results_dir']})")


def _table(data: dict) -> Table:
    names = list(data["tasks"])
    vectors = "unit vectors" if data.get("normalize") else "raw vectors"
    prompt = (data.get("prompt") or {}).get("name", "none")
    wrapped = "" if prompt == "none" else f", prompt {prompt}"
    transform = (data.get("transform") or {}).get("name")
    wrapped += f", transform {transform}" if transform else ""
    title = (f"{data['model']}: main score by layer ({data.get('representation')} representation, "
             f"{data.get('pooling') or 'own'} pooling, {vectors}{wrapped})")
    table = Table(title=title)
    table.add_column("layer", justify="right")
    for name in names:
        table.add_column(f"{name}\n{data['tasks'][name]['main_score_name']}", justify="right")
    table.add_column("mean", justify="right", style="bold")
    costs = LayerCosts.from_json(data["cost"]) if data.get("cost") else None
    for column in COST_HEADER if costs else ():
        table.add_column(column, justify="right")
    table.add_column("")
    marks = {key: data.get(f"{key}_layer") for key in ("selected", "last", "best")}
    frontier = (data.get("frontier") or {}).get("layers", [])
    for k in data["layers_evaluated"]:
        row = [_fmt(data["tasks"][name]["main_score_by_layer"][k]) for name in names]
        cost = cost_cells(costs.params_kept[k], costs.params_full, costs.ideal_speedup[k]) if costs else ()
        tags = ", ".join([key for key, layer in marks.items() if layer == k] + (["frontier"] if k in frontier else []))
        table.add_row(str(k), *row, _fmt(data["mean_by_layer"][k]), *cost, tags, style="green" if tags else None)
    return table


def _plain_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for index, column in enumerate(header):
        table.add_column(column, justify="right" if 0 < index < len(header) - 1 else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _prompt_table(data: dict) -> Table:
    """Every (template, transform)'s mean score by layer, side by side; the best pair marked."""
    table = Table(title="mean score by layer and prompt template (+ transform)")
    table.add_column("layer", justify="right")
    entries = data["by_prompt"]
    for label, entry in entries.items():
        table.add_column(f"{label}\n{entry['pooling']}", justify="right")
    best = data.get("best_pair") or {}
    for k in data["layers_evaluated"]:
        cells = [_fmt(entry["mean_by_layer"][k]) + (" ◀" if (label, k) == (best.get("prompt"), best.get("layer"))
                                                     else "") for label, entry in entries.items()]
        table.add_row(str(k), *cells)
    return table


def _correlations(correlations: dict) -> Table:
    table = Table(title="Spearman across layers: select metric vs mean task score")
    for column in ("metric", "rho", "p", "layers", "agrees with the metric's direction"):
        table.add_column(column, justify="right" if column != "metric" else "left")
    for metric, entry in correlations.items():
        agrees = entry.get("agrees_with_direction")
        table.add_row(metric, _fmt(entry["spearman"]), _fmt(entry["p_value"]), str(entry["n_layers"]),
                      "" if agrees is None else ("yes" if agrees else "no"))
    return table


def _render_failures(result: "validation.ValidationReport") -> None:
    console = Console(stderr=True)
    for task, message in result.failures.items():
        console.print(f"[red]failed[/red] {task}: {message}", highlight=False)


def _fmt(value) -> str:
    return number(value)


def _quiet_mteb_logging() -> None:
    """mteb warns about superseded tasks on every evaluation; validation.json records them as notes."""
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        logging.getLogger("mteb").setLevel(logging.ERROR)
