"""`layerpick collect`: one forward pass, every layer pooled, saved as safetensors with a summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.cli.options import default
from layerpick.core import registry
from layerpick.core.collect_config import CollectConfig
from layerpick.core.load_options import LoadOptions
from layerpick.core.render import render_collection


@opt.with_load_options
def collect(
    model: opt.ModelArg = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the pooled states here (.safetensors).")] = None,
    calibration: opt.Calibration = None,
    field: opt.Field = None,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    pooling: opt.Pooling = default(CollectConfig, "pooling"),
    representation: opt.Representation = default(CollectConfig, "representation"),
    batch_size: opt.BatchSize = default(CollectConfig, "batch_size"),
    max_length: opt.MaxLength = default(CollectConfig, "max_length"),
    prompt: opt.Prompt = None,
    quiet: opt.Quiet = False,
    load: LoadOptions = LoadOptions(),
) -> None:
    """Collect every layer's pooled representation of the calibration texts in one forward pass.

    Example: layerpick collect minilm-l6 --limit 64 --output states.safetensors
    """
    from layerpick.core.collect_job import collect_layers

    interrupt.final_output(output)  # None without --output: nothing is written
    result = collect_layers(
        registry.model_or_default(model),
        load,
        calibration=calibration,
        field=field,
        limit=limit,
        seed=seed,
        pooling=pooling,
        representation=representation,
        batch_size=batch_size,
        max_length=max_length,
        progress=not quiet,
        output=output,
        prompt=prompt,
    )
    render_collection(result)
