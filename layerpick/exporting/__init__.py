"""The export stage: the cut model saved as a sentence-transformers embedder.

`job` plans, cuts, saves and parity-checks; `st_layout` writes the legacy-compatible files every reader
accepts; `model_card` the documents beside the weights (layerpick.json, README.md); `load` reads an export back
(with torch, or its ONNX graph). `onnx` (a package) traces, writes, checks and runs the ONNX graph; `static`
distils the cut into a model2vec static table (`--format static`). A later stage that rewrites an export (heal)
uses the same output checks and atomic folder (`check_output`, `atomic_directory`, `check_not_own_source`).

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

_HOMES = {
    "ExportConfig": "config",
    "ExportError": "job",
    "ExportResult": "job",
    "ParityError": "job",
    "check_not_own_source": "job",
    "export_model": "job",
    "annotate_export": "model_card",
    "atomic_directory": "st_layout",
    "check_output": "st_layout",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
