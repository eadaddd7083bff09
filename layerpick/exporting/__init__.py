"""The export stage: the cut model saved as a sentence-transformers embedder.

`request` checks what is asked before any model loads; `job` loads, cuts and saves, and `parity` proves the saved
directory encodes as layer K of the full model; `errors` holds the stage's errors; `st_layout` writes the
legacy-compatible files every reader accepts; `facts` holds what an export states and writes its layerpick.json,
`model_card` (with `card_tables`) its README.md, and `annotate` adds to an existing export what is measured later;
`load` reads an export back (with torch, or its ONNX graph). `onnx` (a package) traces, writes, checks and runs the
ONNX graph; `static` distils the cut into a model2vec static table (`--format static`, checked first by
`static_checks`). A later stage that rewrites an export (heal) uses the same output checks and atomic folder
(`check_output`, `atomic_directory`, `check_not_own_source`).

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {name: "layerpick.exporting.onnx.added" for name in ("add_onnx", "check_graph_request", "onnx_flags")},
    config="ExportConfig",
    errors="ExportError ParityError",
    job="ExportResult export_model",
    request="check_not_own_source",
    annotate="annotate_export",
    st_layout="atomic_directory check_output",
)
