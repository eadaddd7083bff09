"""An export on the terminal, as `layerpick export` prints it: what was kept, its parity with the full model, the
ONNX graphs and the static table when written, and the notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from layerpick.exporting.job import ExportResult
    from layerpick.exporting.static_layers import StaticLayersResult


def render_export(result: "ExportResult") -> None:
    """The lines `layerpick export` prints on stdout for one export."""
    console = Console()
    kept = result.params_cut / max(result.params_full, 1)
    console.print(f"[bold]exported[/bold] {result.output}")
    console.print(
        f"  layers      first {result.layer} of {result.num_layers} ({result.pooling} pooling"
        f"{', normalized' if result.normalize else ''})"
    )
    weights = "" if result.static else f", {result.weights_bytes / 1e6:.1f} MB {result.dtype}"
    console.print(f"  parameters  {result.params_cut:,} of {result.params_full:,} kept ({kept:.0%}){weights}")
    console.print(
        f"  parity      max abs diff {result.parity_max_abs_diff:.2e} vs layer {result.layer} of the full "
        f"model (tolerance {result.parity_tolerance:.1e})"
    )
    _render_onnx(console, result.onnx)
    _render_static(console, result.static)
    for note in result.notes:
        console.print(f"  note        {note}")


def render_static_layers(result: "StaticLayersResult") -> None:
    """What `layerpick export --layers K1,K2,... --format static` prints: each export, then where they are."""
    for each in result.exports:
        render_export(each)
    names = ", ".join(each.output.name for each in result.exports)
    Console(soft_wrap=True, highlight=False).print(
        f"wrote {len(result.exports)} static exports under {result.output} ({names}) and layers.json",
        markup=False,
        emoji=False,
    )


def _render_static(console: Console, static: dict | None) -> None:
    if not static:
        return
    parity = static["parity"]
    width = static["pca_dims"] if static["pca_applied"] else static["hidden_size"]
    console.print(
        f"  static      {static['vocabulary']['rows']:,} tokens x {width} dimensions, "
        f"{static['bytes'] / 1e6:.1f} MB, distilled in {static['distill_seconds']:.1f} s (model2vec); "
        f"the cut above is not shipped"
    )
    console.print(
        f"  vs the cut  cosine mean {parity['mean_cosine']:.4f}, min {parity['min_cosine']:.4f} on "
        f"{parity['texts']} parity texts (measured, not a threshold)"
    )


def _render_onnx(console: Console, onnx: dict | None) -> None:
    if not onnx:
        return
    parity = onnx["parity"]
    console.print(
        f"  onnx        {onnx['file']} {onnx['bytes'] / 1e6:.1f} MB; vs the torch export: token states "
        f"{parity['token_states_max_rel_diff']:.1e}, embeddings {parity['embeddings_max_rel_diff']:.1e} "
        f"of the largest value (tolerance {parity['tolerance']:.0e})"
    )
    mapped = onnx.get("mapped")
    if mapped:
        console.print(
            f"  onnx mapped {mapped['file']} {mapped['bytes'] / 1e6:.1f} MB (the transform inside the graph, "
            f"for readers that skip the Dense module); embeddings {mapped['embeddings_max_rel_diff']:.1e} "
            "of the largest value"
        )
    int8 = onnx.get("int8")
    if int8:
        cosines = " ".join(f"{value:.4f}" for value in int8["cosine_to_float"])
        kept = int8["kept_float32"]
        console.print(
            f"  onnx int8   {int8['file']} {int8['bytes'] / 1e6:.1f} MB ({kept['matmuls']} of {kept['of']} "
            f"MatMuls kept float32); cosine to the float export min {int8['min_cosine']:.4f} "
            f"(per text: {cosines})"
        )
