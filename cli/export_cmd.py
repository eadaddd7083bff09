"""`layerpick export`: cut a model after layer K and save it as a sentence-transformers directory (or as the
static table distilled from it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick import exporting
from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.cli.options import default
from layerpick.core import registry
from layerpick.core.load_options import LoadOptions
from layerpick.exporting.config import ExportConfig
from layerpick.errors import LayerpickError
from layerpick.exporting.render import render_export, render_static_layers


@opt.with_load_options
def export(
    model: opt.ModelArg = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory to write the exported model to.")] = ...,
    layer: Annotated[Optional[int], typer.Option("--layer", "-k", help="Keep the first K blocks (1..L).")] = None,
    layers: Annotated[
        Optional[str],
        typer.Option(
            "--layers",
            help="With --format static: distil several layers in one load, comma-separated (e.g. 2,6,12); "
            "writes OUTPUT/layer-K per layer (each what --layer K gives) and OUTPUT/layers.json.",
        ),
    ] = None,
    report: Annotated[
        Optional[Path],
        typer.Option(
            help="A `layerpick select` report.json: export its layer, pooling, representation and prompt template."
        ),
    ] = default(ExportConfig, "report"),
    pooling: opt.Pooling = default(ExportConfig, "pooling"),
    prompt: opt.Prompt = default(ExportConfig, "prompt"),
    transform: opt.Transform = default(ExportConfig, "transform"),
    fit_texts: opt.FitTexts = default(ExportConfig, "fit_texts"),
    field: opt.Field = default(ExportConfig, "field"),
    normalize: opt.Normalize = default(ExportConfig, "normalize"),
    max_seq_length: Annotated[
        Optional[int],
        typer.Option(
            "--max-seq-length",
            help="Truncate inputs to this many tokens (default: the "
            "model's sentence-transformers setting, else min(model limit, 512)).",
        ),
    ] = default(ExportConfig, "max_seq_length"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing export at --output.")] = default(
        ExportConfig, "overwrite"
    ),
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="sentence-transformers; onnx: also onnx/model.onnx (needs layerpick\\[onnx]); static: "
            "instead a model2vec static table distilled from the cut (needs layerpick\\[static]).",
        ),
    ] = default(ExportConfig, "format"),
    static_dims: Annotated[
        Optional[int],
        typer.Option(
            "--static-dims",
            help="PCA dimensions of the static table (with --format static; default 256, or the "
            "hidden size where smaller).",
        ),
    ] = default(ExportConfig, "static_dims"),
    quantize: Annotated[
        Optional[str],
        typer.Option(help="int8: also onnx/model_quantized.onnx (dynamic int8), checked against the float graph."),
    ] = default(ExportConfig, "quantize"),
    quiet: opt.Quiet = False,
    load: LoadOptions = LoadOptions(),
) -> None:
    """Export MODEL cut after layer K as a sentence-transformers embedder, checked against layer K.

    Example: layerpick export smollm2-135m --layer 12 --output smollm2-l12 --format onnx --quantize int8

    Example: layerpick export minilm-l6 --layer 4 --output minilm-static --format static --static-dims 128

    Example: layerpick export minilm-l6 --layers 2,4,6 --output minilm-static --format static
    """
    config = opt.build(ExportConfig, locals(), progress=not quiet)
    interrupt.final_output(output)  # once the export is in place, the command has succeeded
    if layers is not None:
        _export_layers(registry.model_or_default(model), layer, layers, output, config, load)
        return
    result = exporting.export_model(
        registry.model_or_default(model or _model_from_report(report)), layer, output, config, load_options=load
    )
    render_export(result)


def _export_layers(
    model: str, layer: int | None, layers: str, output: Path, config: ExportConfig, load: LoadOptions
) -> None:
    from layerpick.exporting.static_layers import export_static_layers

    if layer is not None:
        raise exporting.ExportError("give --layer K or --layers K1,K2,..., not both")
    result = export_static_layers(model, layers, output, config, load_options=load)
    render_static_layers(result)


def _model_from_report(report: Path | None) -> str | None:
    """Without MODEL, a report names the model it was made for."""
    if report is None:
        return None
    from layerpick.selection.result import read_select_report

    try:
        return read_select_report(report).model or None
    except LayerpickError:
        return None  # export_model reports the unreadable file
