"""The settings of one export (`ExportConfig`): how the cut model pools, what it writes, how it is checked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from layerpick.core.prompts import Prompt


@dataclass(frozen=True)
class ExportConfig:
    """`report` (a select report.json) chooses the layer when `export_model` is given none; `pooling` None takes
    the report's pooling or the family's default; `max_seq_length` None the source's setting (capped by the
    model); `parity_texts` None the built-in parity texts; `prompt` None takes the report's template (plain text
    without a report), else a built-in name, `none` or a template with one `{text}`. `transform` is fitted at the
    exported layer on `fit_texts` and written as a Dense module after pooling (`export.transformed`). `format`
    "static" writes the static table model2vec distils from the cut instead, reduced by PCA to `static_dims`
    (None: 256, or the hidden size where that is smaller; `export.static`)."""

    layer: int | None = None  # what `layerpick.export` cuts after; None: the layer `report` chose
    pooling: str | None = None
    representation: str = "exported"
    normalize: bool | None = None  # None: as the source's own sentence-transformers pipeline (raw otherwise)
    max_seq_length: int | None = None
    report: Path | None = None
    overwrite: bool = False
    parity_texts: Sequence[str] | None = None
    progress: bool = True
    format: str = "sentence-transformers"  # or "onnx": the ONNX graph too; or "static": a model2vec static table
    quantize: str | None = None  # "int8" (with format "onnx"): the dynamically quantized graph too
    prompt: str | Prompt | None = None
    transform: str | None = None  # a post-pooling transform (`whiten-256`); None: the report's, else none
    fit_texts: str | None = None  # what the transform is fitted on; None: the report's fit set, else the embedded
    field: str | None = None  # the text's field in JSONL fit texts; None: the report's (for its fit set), else `text`
    static_dims: int | None = None  # the PCA dimension of a static table (format "static")
