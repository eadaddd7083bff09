"""The export stage: the cut model saved as a sentence-transformers embedder.

`job` plans, cuts, saves and parity-checks; `st_layout` writes the legacy-compatible files every reader
accepts; `model_card` the documents beside the weights (layerpick.json, README.md); `load` reads an export back
(with torch, or its ONNX graph). `onnx` (a package) traces, writes, checks and runs the ONNX graph; `static`
distils the cut into a model2vec static table (`--format static`). A later stage that rewrites an export (heal)
uses the same output checks and atomic folder (`check_output`, `atomic_directory`, `check_not_own_source`).

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    config="ExportConfig",
    job="ExportError ExportResult ParityError check_not_own_source export_model",
    model_card="annotate_export",
    st_layout="atomic_directory check_output",
)
