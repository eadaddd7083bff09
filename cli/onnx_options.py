"""The options that compound an export with ONNX Runtime, shared by `heal` and `run` (`export` has its own, with
`static` beside them): `--format onnx` adds the ONNX graph, `--quantize int8` its int8 copy."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

GraphFormat = Annotated[
    str,
    typer.Option(
        "--format",
        help="sentence-transformers; onnx: also the ONNX graph onnx/model.onnx, traced from the written weights and "
        "checked against them (needs layerpick\\[onnx]).",
    ),
]
Quantize = Annotated[
    Optional[str],
    typer.Option(help="int8 (with --format onnx): also onnx/model_quantized.onnx, checked against the float graph."),
]
