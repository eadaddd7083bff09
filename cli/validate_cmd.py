"""`layerpick validate`: MTEB scores of every layer (one forward pass per distinct text), or of an export.

Also `--materialize DIR`: write MTEB tasks into local task folders (needs internet) and exit.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick import validation
from layerpick._util import interrupt
from layerpick._util.filenames import VALIDATION_FILE
from layerpick.cli import options as opt
from layerpick.cli.options import default
from layerpick.core import registry
from layerpick.core.load_options import LoadOptions
from layerpick.frontier.choice import ChoiceOptions
from layerpick.validation.config import ValidateConfig


@opt.with_load_options
@opt.with_choice_options
def validate(
    model: opt.ModelArg = None,
    tasks: opt.Tasks = None,
    layers: Annotated[
        str,
        typer.Option(
            help="all, or a comma-separated mix of K, last and selected (needs --report; adds the last layer)."
        ),
    ] = default(ValidateConfig, "layers"),
    report: Annotated[
        Optional[Path], typer.Option(help="A select report.json: compare its choice and metrics.")
    ] = default(ValidateConfig, "report"),
    output: Annotated[
        Optional[Path],
        typer.Option(
            help="Output directory (default layerpick-out/<model>/validation); "
            "finished (task, layer) results found there are reused."
        ),
    ] = default(ValidateConfig, "output_dir"),
    exported: Annotated[
        Optional[Path],
        typer.Option(
            help="Validate an exported sentence-transformers directory (its own output) instead of a model's layers."
        ),
    ] = default(ValidateConfig, "exported_dir"),
    documents_by: Annotated[
        Optional[str],
        typer.Option(
            "--documents-by",
            help="Asymmetric retrieval: encode retrieval tasks' documents with this sentence-transformers model "
            "(alias, folder or hub id; e.g. the full model of a healed cut), queries with what is validated.",
        ),
    ] = default(ValidateConfig, "documents_by"),
    static: opt.StaticExports = None,
    task_data: opt.TaskData = None,
    store: Annotated[
        Optional[Path],
        typer.Option(help="Representation store directory (default: the layerpick cache).", envvar="LAYERPICK_STORE"),
    ] = default(ValidateConfig, "store_dir"),
    normalize: opt.Normalize = default(ValidateConfig, "normalize"),
    materialize: Annotated[
        Optional[Path],
        typer.Option(help="Write the --tasks as local task folders into this directory (needs internet) and exit."),
    ] = None,
    pooling: opt.Pooling = default(ValidateConfig, "pooling"),
    prompt: opt.Prompt = default(ValidateConfig, "prompt"),
    transform: opt.Transform = default(ValidateConfig, "transform"),
    fit_texts: opt.FitTexts = default(ValidateConfig, "fit_texts"),
    field: opt.Field = default(ValidateConfig, "field"),
    representation: opt.Representation = default(ValidateConfig, "representation"),
    batch_size: opt.BatchSize = default(ValidateConfig, "batch_size"),
    max_length: opt.MaxLength = default(ValidateConfig, "max_length"),
    as_json: opt.Json = False,
    quiet: opt.Quiet = False,
    choice: ChoiceOptions = ChoiceOptions(),
    load: LoadOptions = LoadOptions(),
) -> None:
    """Score layers on MTEB tasks: every layer from one forward pass per distinct text, resumable.

    Example: layerpick validate minilm-l6 --tasks STSBenchmark,tasks/my-sts-folder --layers all
    """
    from layerpick.validation.render import render_failures, render_validation  # torch, once a command runs

    items = [item for value in tasks or [] for item in validation.split_items(value)]
    if not items:
        raise typer.BadParameter("give at least one task", param_hint="--tasks")
    _quiet_mteb_logging()
    if materialize is not None:
        for folder in validation.materialize_tasks(items, materialize):
            typer.echo(f"wrote {folder}")
        return
    config = opt.build(
        validation.ValidateConfig,
        locals(),
        tasks=tuple(items),
        output_dir=output,
        exported_dir=exported,
        store_dir=store,
        static_exports=tuple(static or ()),
        task_data=task_data or (),
        progress=not quiet,
    )
    source = None if exported and model is None else registry.model_or_default(model)
    interrupt.final_output(validation.validation_output(source, config) / VALIDATION_FILE)  # written last
    result = validation.run_validation(source, items, config, load_options=load)
    if as_json:
        typer.echo(json.dumps(result.report.to_json(), indent=2))
    else:
        render_validation(result.report.to_json(), result.files, result.output_dir)
    if result.failures:
        render_failures(result.failures)
        names = ", ".join(result.failures)
        raise validation.ValidationFailedError(
            f"{len(result.failures)} task(s) failed ({names}); the others were written to {result.files[0]}"
        )


def _quiet_mteb_logging() -> None:
    """mteb warns about superseded tasks on every evaluation; validation.json records them as notes."""
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        logging.getLogger("mteb").setLevel(logging.ERROR)
