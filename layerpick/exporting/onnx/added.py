"""An ONNX graph (and its int8 copy) added to an export that is already written: how a healed cut compounds with
ONNX Runtime (`heal --format onnx --quantize int8`, `run` with the same options). The folder's own torch model is
the reference: the graph is traced from it and checked against it exactly as `export --format onnx` checks a fresh
cut (`onnx.step`), and the folder is replaced whole only once every check passed, its layerpick.json (the heal
record, the teacher as its source) kept and given the `onnx` section. (`export HEALED --layer K --format onnx`
exports a healed folder again, keeping its heal record, through export's own path.)
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any, Sequence

from layerpick._util.disk import tree_bytes
from layerpick._util.filenames import METADATA_FILE
from layerpick.exporting.metadata import ExportMetadata
from layerpick.exporting.annotate import annotate_export
from layerpick.exporting.onnx import step as onnx_step
from layerpick.exporting.parity import check_texts
from layerpick.exporting.st_layout import atomic_directory

logger = logging.getLogger(__name__)


def check_graph_request(format: str, quantize: str | None) -> bool:
    """Whether an ONNX graph is asked for (`format` onnx); one line for a request that cannot be carried out."""
    return onnx_step.check_request(format, quantize, "float32", None)


def add_onnx(directory: Path, quantize: str | None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Trace the export at `directory` to ONNX (plus int8 with `quantize`), check the graph against the export's
    torch model on `texts` (default: the export's parity texts), and put the folder back whole with the `onnx`
    section in its layerpick.json; return that section."""
    directory = Path(directory)
    metadata = ExportMetadata.read(directory / METADATA_FILE)
    if metadata.static:
        raise onnx_step.OnnxExportError(f"{directory} is a static export (a table): it has no graph to trace")
    texts = check_texts(texts)
    from sentence_transformers import SentenceTransformer

    with atomic_directory(directory, overwrite=True, needed=3 * tree_bytes(directory) + (1 << 20)) as stage:
        target = stage / "export"
        shutil.copytree(directory, target, ignore=shutil.ignore_patterns("onnx"))
        model = SentenceTransformer(str(target), device="cpu")[0].auto_model
        section = onnx_step.write_onnx(model, target, texts, quantize)
        annotate_export(target, onnx=section)
    logger.info("added %s to %s", "the ONNX graph and its int8 copy" if quantize else "the ONNX graph", directory)
    return section


def onnx_flags(format: str, quantize: str | None) -> list[str]:
    """The command-line words that ask for the graph again (none for a plain export)."""
    if format != "onnx":
        return []
    return ["--format", "onnx", *(["--quantize", quantize] if quantize else [])]
