"""`layerpick export`: cut a model after layer K and save it as a sentence-transformers directory (or as the
static table distilled from it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.core import registry
from layerpick.core.models import LoadOptions
from layerpick.export.config import ExportConfig
from layerpick.export.job import ExportError, ExportResult, export_model


@opt.with_load_options
def export(
    model: opt.ModelArg = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory to write the exported model to.")] = ...,
    layer: Annotated[Optional[int], typer.Option("--layer", "-k", help="Keep the first K blocks (1..L).")] = None,
    layers: Annotated[Optional[str], typer.Option(
        "--layers", help="With --format static: distil several layers in one load, comma-separated (e.g. 2,6,12); "
        "writes OUTPUT/layer-K per layer (each what --layer K gives) and OUTPUT/layers.json.")] = None,
    report: Annotated[
        Optional[Path], typer.Option(help="A `layerpick select` report.json: export its layer, pooling, representation and prompt template.")
    ] = None,
    pooling: opt.Pooling = None,
    prompt: opt.Prompt = None,
    transform: opt.Transform = None,
    fit_texts: opt.FitTexts = None,
    normalize: Annotated[Optional[bool], typer.Option(
        "--normalize/--no-normalize", help="L2-normalise the embeddings (default: as the model's own "
        "sentence-transformers pipeline; no for other models).")] = None,
    max_seq_length: Annotated[
        Optional[int], typer.Option("--max-seq-length", help="Truncate inputs to this many tokens (default: the "
                                    "model's sentence-transformers setting, else min(model limit, 512)).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing export at --output.")] = False,
    format: Annotated[str, typer.Option(
        "--format", help="sentence-transformers; onnx: also onnx/model.onnx (needs layerpick[onnx]); static: "
        "instead a model2vec static table distilled from the cut (needs layerpick[static]).")
    ] = "sentence-transformers",
    static_dims: Annotated[Optional[int], typer.Option(
        "--static-dims", help="PCA dimensions of the static table (with --format static; default 256, or the "
        "hidden size where smaller).")] = None,
    quantize: Annotated[Optional[str], typer.Option(
        help="int8: also onnx/model_quantized.onnx (dynamic int8), checked against the float graph.")] = None,
    quiet: opt.Quiet = False,
    load: LoadOptions = LoadOptions(),
) -> None:
    """Export MODEL cut after layer K as a sentence-transformers embedder, checked against layer K.

    Example: layerpick export smollm2-135m --layer 12 --output smollm2-l12 --format onnx --quantize int8

    Example: layerpick export minilm-l6 --layer 4 --output minilm-static --format static --static-dims 128

    Example: layerpick export minilm-l6 --layers 2,4,6 --output minilm-static --format static
    """
    config = ExportConfig(pooling=pooling, normalize=normalize, max_seq_length=max_seq_length, report=report,
                          overwrite=overwrite, progress=not quiet, format=format, quantize=quantize,
                          prompt=prompt, transform=transform, fit_texts=fit_texts, static_dims=static_dims)
    interrupt.final_output(output)  # once the export is in place, the command has succeeded
    if layers is not None:
        _export_layers(registry.model_or_default(model), layer, layers, output, config, load)
        return
    result = export_model(registry.model_or_default(model or _model_from_report(report)), layer, output, config,
                          load_options=load)
    _render(result)


def _export_layers(model: str, layer: int | None, layers: str, output: Path, config: ExportConfig,
                   load: LoadOptions) -> None:
    from layerpick.export.static_layers import export_static_layers

    if layer is not None:
        raise ExportError("give --layer K or --layers K1,K2,..., not both")
    result = export_static_layers(model, layers, output, config, load_options=load)
    for each in result.exports:
        _render(each)
    typer.echo(f"wrote {len(result.exports)} static exports under {result.output} "
               f"({', '.join(each.output.name for each in result.exports)}) and layers.json")


def _model_from_report(report: Path | None) -> str | None:
    """Without MODEL, a report names the model it was made for."""
    if report is None:
        return None
    try:
        return str(json.loads(report.read_text(encoding="utf-8")).get("model") or "") or None
    except (OSError, ValueError, AttributeError):
        return None  # export_model reports the unreadable file


def _render(result: ExportResult) -> None:
    console = Console()
    kept = result.params_cut / max(result.params_full, 1)
    console.print(f"[bold]exported[/bold] {result.output}")
    console.print(f"  layers      first {result.layer} of {result.num_layers} ({result.pooling} pooling"
                  f"{', normalized' if result.normalize else ''})")
    weights = "" if result.static else f", {result.weights_bytes / 1e6:.1f} MB {result.dtype}"
    console.print(f"  parameters  {result.params_cut:,} of {result.params_full:,} kept ({kept:.0%}){weights}")
    console.print(f"  parity      max abs diff {result.parity_max_abs_diff:.2e} vs layer {result.layer} of the full "
                  f"model (tolerance {result.parity_tolerance:.1e})")
    _render_onnx(console, result.onnx)
    _render_static(console, result.static)
    for note in result.notes:
        console.print(f"  note        {note}")


def _render_static(console: Console, static: dict | None) -> None:
    if not static:
        return
    parity = static["parity"]
    width = static["pca_dims"] if static["pca_applied"] else static["hidden_size"]
    console.print(f"  static      {static['vocabulary']['rows']:,} tokens x {width} dimensions, "
                  f"{static['bytes'] / 1e6:.1f} MB, distilled in {static['distill_seconds']:.1f} s (model2vec); "
                  f"the cut above is not shipped")
    console.print(f"  vs the cut  cosine mean {parity['mean_cosine']:.4f}, min {parity['min_cosine']:.4f} on "
                  f"{parity['texts']} parity texts (measured, not a threshold)")


def _render_onnx(console: Console, onnx: dict | None) -> None:
    if not onnx:
        return
    parity = onnx["parity"]
    console.print(f"  onnx        {onnx['file']} {onnx['bytes'] / 1e6:.1f} MB; vs the torch export: token states "
                  f"{parity['token_states_max_rel_diff']:.1e}, embeddings {parity['embeddings_max_rel_diff']:.1e} "
                  f"of the largest value (tolerance {parity['tolerance']:.0e})")
    mapped = onnx.get("mapped")
    if mapped:
        console.print(f"  onnx mapped {mapped['file']} {mapped['bytes'] / 1e6:.1f} MB (the transform inside the graph, "
                      f"for readers that skip the Dense module); embeddings {mapped['embeddings_max_rel_diff']:.1e} "
                      "of the largest value")
    int8 = onnx.get("int8")
    if int8:
        cosines = " ".join(f"{value:.4f}" for value in int8["cosine_to_float"])
        kept = int8["kept_float32"]
        console.print(f"  onnx int8   {int8['file']} {int8['bytes'] / 1e6:.1f} MB ({kept['matmuls']} of {kept['of']} "
                      f"MatMuls kept float32); cosine to the float export min {int8['min_cosine']:.4f} "
                      f"(per text: {cosines})")
