"""An export's `layerpick.json` ("layerpick-export/1") as `ExportMetadata`, and reading it from an export folder.

The one place that knows the file's keys. `exporting/facts.py` builds it from `ExportFacts`; every reader (bench,
serve, validate --exported, run, the CLI) goes through `read_metadata` or `ExportMetadata.read`. Nested sections
(source, parity, selection, onnx, static) stay JSON objects; their keys are written by `facts.py`, except `heal`
(a healed export: `layerpick.healing.result.HealReport`'s JSON).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from layerpick._util.documents import Document
from layerpick._util.filenames import METADATA_FILE
from layerpick.errors import ReportFormatError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportMetadata(Document):
    """What an export is: its source model, K of L, the representation, parity, and what was measured later."""

    source: dict[str, Any]
    layer: int
    num_layers: int
    representation: str
    pooling: str
    normalize: bool
    max_seq_length: int
    parameters: dict[str, int]
    weights_bytes: int
    parity: dict[str, Any]
    command: str
    created: str | None = None
    source_pipeline: dict[str, Any] | None = None
    device: str | None = None
    dtype: str = "float32"
    prompt: dict[str, Any] | None = None
    transform: dict[str, Any] | None = None
    selection: dict[str, Any] = field(default_factory=dict)
    onnx: dict[str, Any] | None = None
    static: dict[str, Any] | None = None
    speedup: Any = None
    versions: dict[str, str | None] = field(default_factory=dict)
    validation: dict[str, Any] | None = None  # added by `annotate_export` after `layerpick run` validated
    heal: dict[str, Any] | None = None  # `layerpick heal`: the texts, the training and the fidelity before/after
    extra: dict[str, Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "layerpick-export/1"
    WHAT: ClassVar[str] = "a layerpick export's layerpick.json"
    NOUN: ClassVar[str] = "export metadata"
    REQUIRED: ClassVar[tuple[str, ...]] = (
        "source",
        "layer",
        "num_layers",
        "representation",
        "pooling",
        "normalize",
        "max_seq_length",
        "parameters",
        "weights_bytes",
        "parity",
        "command",
    )
    OPTIONAL: ClassVar[tuple[str, ...]] = ("validation", "heal")

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> ExportMetadata:
        if not isinstance(values["source"], dict) or "model" not in values["source"]:
            raise ReportFormatError(f"{where}: source must be an object naming the model")
        return cls(**values, extra=extra)

    @property
    def model(self) -> str:
        """The source model as the export was asked for (alias, path or hub id)."""
        return str(self.source["model"])

    @property
    def source_path(self) -> str | None:
        return self.source.get("path")

    @property
    def is_static(self) -> bool:
        """Whether this is a static table (`layerpick export --format static`), not a cut model."""
        return isinstance(self.static, dict)

    @property
    def is_healed(self) -> bool:
        """Whether the cut was trained after the export (`layerpick heal`): it no longer equals layer K."""
        return isinstance(self.heal, dict)

    @property
    def kept(self) -> str:
        """Which layers the export keeps, in words (`describe_kept`)."""
        return describe_kept(self.layer, self.num_layers, (self.heal or {}).get("teacher", {}).get("blocks"))

    @property
    def baseline(self) -> dict[str, Any]:
        """The full model this export was cut from, followed through exports of exports: {"model", "path"}."""
        return self.source.get("baseline") or {"model": self.model, "path": self.source_path}


def read_metadata(directory: str | Path) -> ExportMetadata | None:
    """The `layerpick.json` of an export folder; None for a folder without one. An unreadable or foreign file is
    warned about and read as None (the folder is then treated as any sentence-transformers model)."""
    path = Path(directory) / METADATA_FILE
    if not path.is_file():
        return None
    try:
        return ExportMetadata.read(path)
    except ReportFormatError as error:
        logger.warning("ignoring %s", error)
        return None


def describe_kept(layer: int, num_layers: int, healed_from: list[int] | None = None, noun: str = "") -> str:
    """`first 3 of 6`; a cut healed from other blocks of its teacher (`heal --blocks`, counted from 1):
    `3 of 6 (healed from blocks 1, 3, 6)`. `noun` follows the numbers (` layers`)."""
    if not healed_from or list(healed_from) == list(range(1, layer + 1)):
        return f"first {layer} of {num_layers}{noun}"
    return f"{layer} of {num_layers}{noun} (healed from blocks {', '.join(map(str, healed_from))})"
