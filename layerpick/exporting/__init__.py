"""The export stage: the cut model saved as a sentence-transformers embedder.

`job` plans, cuts, saves and parity-checks; `st_layout` writes the legacy-compatible files every reader
accepts; `model_card` the documents beside the weights (layerpick.json, README.md); `load` reads an export back
(with torch, or its ONNX graph). `onnx` (a package) traces, writes, checks and runs the ONNX graph; `static`
distils the cut into a model2vec static table (`--format static`). A later stage that rewrites an export (heal)
uses the same output checks and atomic folder (`check_output`, `atomic_directory`, `check_not_own_source`).
"""

from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import ExportError, ExportResult, ParityError, check_not_own_source, export_model
from layerpick.exporting.model_card import annotate_export
from layerpick.exporting.st_layout import atomic_directory, check_output

__all__ = [
    "ExportConfig",
    "ExportError",
    "ExportResult",
    "ParityError",
    "annotate_export",
    "atomic_directory",
    "check_not_own_source",
    "check_output",
    "export_model",
]
