"""`layerpick heal`: cut a model after layer K and train the cut to give back its teacher's sentence vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from layerpick import healing
from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.cli.options import default
from layerpick.core import registry
from layerpick.core.load_options import LoadOptions
from layerpick.cli.onnx_options import GraphFormat, Quantize
from layerpick.healing.config import HealConfig


@opt.with_load_options
def heal(
    model: opt.ModelArg = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory to write the healed export to.")] = ...,
    layer: Annotated[
        Optional[int], typer.Option("--layer", "-k", help="Keep K blocks (1..L-1): which ones, --blocks.")
    ] = None,
    layers: Annotated[
        Optional[str],
        typer.Option(
            "--layers",
            help="Choose K without labels: heal each of these cuts (e.g. 2,3,4, or all) on the same texts and keep "
            "the shallowest whose held-out cosine to the teacher is at least 1 - --max-loss.",
        ),
    ] = default(HealConfig, "layers"),
    max_loss: Annotated[
        Optional[float],
        typer.Option(
            "--max-loss",
            help="With --layers: the loss of held-out cosine to the teacher (1.0) a kept cut may have (default 0.12).",
        ),
    ] = default(HealConfig, "max_loss"),
    blocks: Annotated[
        str,
        typer.Option(
            "--blocks",
            help="Which of the teacher's blocks the K kept start from: spread (the first, the last and evenly "
            "between), first (the plain cut export makes), or one cut's list counted from 1, e.g. 1,3,6.",
        ),
    ] = default(HealConfig, "blocks"),
    fit_texts: Annotated[
        Optional[List[Path]],  # a Path list: click splits its env var at os.pathsep (as PATH), not at spaces
        typer.Option(
            "--fit-texts",
            help="Unlabelled texts to heal on: a text file, JSONL (`text`), a task folder, or a BEIR folder whose "
            "corpus.jsonl is split into passages of the model's length, joined by as many of its sentences. Repeat "
            "it to pool sources (a corpus and the queries it serves; in the env var, separate them as in PATH). "
            "Default: the embedded calibration set.",
            envvar="LAYERPICK_FIT_TEXTS",
        ),
    ] = default(HealConfig, "fit_texts"),
    field: opt.Field = default(HealConfig, "field"),
    pooling: opt.Pooling = default(HealConfig, "pooling"),
    epochs: Annotated[int, typer.Option(help="Passes over the texts (a checkpoint after each).")] = default(
        HealConfig, "epochs"
    ),
    checkpoint_minutes: Annotated[
        float,
        typer.Option(
            "--checkpoint-minutes",
            help="Also checkpoint within an epoch after this many minutes of training, so an interrupt loses at "
            "most that much (0: after every step).",
        ),
    ] = default(HealConfig, "checkpoint_minutes"),
    learning_rate: Annotated[float, typer.Option("--learning-rate", help="AdamW's peak learning rate.")] = default(
        HealConfig, "learning_rate"
    ),
    batch_size: Annotated[
        int, typer.Option("--batch-size", help="Texts per training step.", envvar="LAYERPICK_BATCH_SIZE")
    ] = default(HealConfig, "batch_size"),
    seed: Annotated[
        int, typer.Option(help="Seed of the held-out split, the sampling and the training.", envvar="LAYERPICK_SEED")
    ] = default(HealConfig, "seed"),
    held_out: Annotated[
        float, typer.Option("--held-out", help="Share of the texts held back to measure fidelity (at least 50 texts).")
    ] = default(HealConfig, "held_out"),
    max_texts: Annotated[
        Optional[int], typer.Option("--max-texts", help="Use at most this many texts (a seeded sample).")
    ] = default(HealConfig, "max_texts"),
    loss: Annotated[str, typer.Option(help="cosine+mse, mse or cosine, to the teacher's vectors.")] = default(
        HealConfig, "loss"
    ),
    format: GraphFormat = default(HealConfig, "format"),
    quantize: Quantize = default(HealConfig, "quantize"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing export at --output.")] = default(
        HealConfig, "overwrite"
    ),
    as_json: opt.Json = False,
    quiet: opt.Quiet = False,
    load: LoadOptions = LoadOptions(),
) -> None:
    """Cut MODEL after layer K and train the cut, on unlabelled texts, to reproduce the full model's sentence vectors.

    Run the same command again after an interrupt: it resumes from the last checkpoint (one per epoch, and one
    every --checkpoint-minutes within an epoch).

    Example: layerpick heal minilm-l6 --layer 3 --fit-texts my-corpus/ --output minilm-l3-healed
    """
    config = opt.build(HealConfig, locals(), progress=not quiet, fit_texts=tuple(map(str, fit_texts or ())) or None)
    from layerpick.healing.render import render_heal, render_sweep  # torch, once a command runs

    interrupt.final_output(output)  # once the healed export is in place, the command has succeeded
    result = healing.heal_or_sweep(registry.model_or_default(model), layer, output, config, load_options=load)
    if as_json:
        typer.echo(json.dumps(result.heal_section(), indent=2))
    elif isinstance(result, healing.HealSweep):
        render_sweep(result)
    else:
        render_heal(result)
