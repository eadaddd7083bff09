"""An existing export read and added to: the full model it was cut from (`original_source`, followed through
exports of exports), and what is measured or done after it was written (`annotate_export`: validation by layer,
speed-up, healing, an ONNX graph added), recorded in its layerpick.json and model card alike.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from layerpick._util.atomic import write_json_atomic, write_text_atomic
from layerpick._util.filenames import METADATA_FILE
from layerpick.exporting.facts import facts_from_metadata
from layerpick.exporting.metadata import ExportMetadata, read_metadata
from layerpick.exporting.model_card import CARD_FILE, render_model_card


def original_source(path: str | Path | None) -> dict[str, Any] | None:
    """When the directory `path` is itself a layerpick export, the full model it was cut from (model and path,
    followed through exports of exports); None for any other source."""
    metadata = read_metadata(path) if path and Path(path).is_dir() else None
    return metadata.baseline if metadata is not None else None


def annotate_export(
    directory: Path,
    *,
    validation: dict[str, Any] | None = None,
    speedup: Any = None,
    heal: dict[str, Any] | None = None,
    onnx: dict[str, Any] | None = None,
) -> None:
    """Add what was measured or done after an export (validation by layer, speed-up, healing, an ONNX graph added
    to it) to its layerpick.json and model card. Each file is written beside itself and renamed over the old one."""
    path = Path(directory) / METADATA_FILE
    document = ExportMetadata.read(path)
    if validation is not None:
        document = dataclasses.replace(document, validation=validation)
    if speedup is not None:
        document = dataclasses.replace(document, speedup=speedup)
    if onnx is not None:
        document = dataclasses.replace(document, onnx=onnx)
    if heal is not None:  # the heal's command remakes a healed export (the cut's export went into its work folder)
        document = dataclasses.replace(document, heal=heal, command=str(heal.get("command") or document.command))
    facts = facts_from_metadata(document)
    write_json_atomic(path, document.to_json())
    write_text_atomic(Path(directory) / CARD_FILE, render_model_card(facts))
