"""An ONNX graph (and its int8 copy) added to an export that is already written: how a healed cut compounds with
ONNX Runtime (`heal --format onnx --quantize int8`, `run` with the same options, `export HEALED --format onnx` of
a healed folder). The folder's own torch model is the reference: the graph is traced from it and checked against
it exactly as `export --format onnx` checks a fresh cut (`onnx.step`), and the folder is replaced whole only
once every check passed, its layerpick.json (the heal record, the teacher as its source) kept and given the
`onnx` section.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import shutil
from pathlib import Path
from typing import Any, Sequence

from layerpick._util.atomic import write_json_atomic
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
    return _with_graph(directory, directory, quantize, texts, overwrite=True)


def _with_graph(
    source: Path, output: Path, quantize: str | None, texts: Sequence[str], overwrite: bool, command: str | None = None
) -> dict[str, Any]:
    """The export at `source` copied to `output` (it may be the same folder) with its graph, checked, put in place
    whole; `command` (when given) becomes the command in its layerpick.json."""
    from sentence_transformers import SentenceTransformer

    with atomic_directory(output, overwrite, needed=3 * tree_bytes(source) + (1 << 20)) as stage:
        target = stage / "export"
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("onnx"))
        model = SentenceTransformer(str(target), device="cpu")[0].auto_model
        section = onnx_step.write_onnx(model, target, texts, quantize)
        annotate_export(target, onnx=section)
        if command is not None:
            metadata = ExportMetadata.read(target / METADATA_FILE)
            write_json_atomic(target / METADATA_FILE, dataclasses.replace(metadata, command=command).to_json())
    logger.info("wrote %s with %s", output, "the ONNX graph and its int8 copy" if quantize else "the ONNX graph")
    return section


def healed_source(model: str) -> ExportMetadata | None:
    """The layerpick.json of `model` when it is a healed export folder (a heal's record to keep), else None."""
    path = Path(model).expanduser() / METADATA_FILE
    if not path.is_file():
        return None
    metadata = ExportMetadata.read(path)
    return metadata if metadata.is_healed else None


def reexports_healed(model: str, layer: int | None, config: Any) -> ExportMetadata | None:
    """The healed export `model` is, when `config` (an ExportConfig) asks only for its graph at its own depth:
    then it is copied with its graph (`export_healed`) rather than cut again as a new model, which would drop
    its heal record and take it for its own teacher. None otherwise."""
    healed = healed_source(model) if config.format == "onnx" else None
    if healed is None or (layer if layer is not None else config.layer) not in (None, healed.layer):
        return None
    kept = {"format", "quantize", "overwrite", "progress", "layer"}
    plain = type(config)()
    changed = [
        f.name
        for f in dataclasses.fields(config)
        if f.name not in kept and getattr(config, f.name) != getattr(plain, f.name)
    ]
    return None if changed else healed


def export_healed(model: str, output: Path, quantize: str | None, overwrite: bool) -> dict[str, Any]:
    """`export HEALED --format onnx`: the healed export copied whole with its graph; its heal record and its
    teacher (the full model it was cut from, the bench's baseline) kept. Returns the `onnx` section."""
    words = ["layerpick", "export", model, "--output", str(output), *onnx_flags("onnx", quantize)]
    return _with_graph(Path(model), Path(output), quantize, check_texts(None), overwrite, shlex.join(words))


def onnx_flags(format: str, quantize: str | None) -> list[str]:
    """The command-line words that ask for the graph again (none for a plain export)."""
    if format != "onnx":
        return []
    return ["--format", "onnx", *(["--quantize", quantize] if quantize else [])]
