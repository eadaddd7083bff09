"""`layerpick collect`: one forward pass, every layer pooled, saved as safetensors with a summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.core import registry
from layerpick.core.collect_job import collect_layers
from layerpick.core.models import LoadOptions


@opt.with_load_options
def collect(
    model: opt.ModelArg = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the pooled states here (.safetensors).")] = None,
    calibration: opt.Calibration = None,
    field: opt.Field = None,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    pooling: opt.Pooling = None,
    representation: opt.Representation = "exported",
    batch_size: opt.BatchSize = 16,
    max_length: opt.MaxLength = 512,
    prompt: opt.Prompt = None,
    quiet: opt.Quiet = False,
    load: LoadOptions = LoadOptions(),
) -> None:
    """Collect every layer's pooled representation of the calibration texts in one forward pass.

    Example: layerpick collect minilm-l6 --limit 64 --output states.safetensors
    """
    interrupt.final_output(output)  # None without --output: nothing is written
    result = collect_layers(
        registry.model_or_default(model),
        load,
        calibration=calibration, field=field, limit=limit, seed=seed, pooling=pooling,
        representation=representation, batch_size=batch_size, max_length=max_length, progress=not quiet,
        output=output, prompt=prompt,
    )
    _render(result)


def _render(result) -> None:
    wrapped = "" if result.prompt == "none" else f", prompt {result.prompt}"
    table = Table(title=f"{result.model}: {result.count} texts, {result.pooling} pooling, {result.representation}"
                        f"{wrapped}")
    for column in ("layer", "mean norm", "mean cosine between texts"):
        table.add_column(column, justify="right")
    for layer, (norm, cosine) in enumerate(zip(result.mean_norm, result.mean_cosine)):
        table.add_row(str(layer), f"{norm:.3f}", f"{cosine:.3f}")
    console = Console()
    console.print(table)
    for note in result.notes:
        console.print(f"note: {note}")
    if result.output:
        console.print(f"wrote {result.output}")
