"""A valid `layerpick.json` for tests that place one beside weights they saved themselves."""

from __future__ import annotations

from typing import Any

from layerpick.exporting.metadata import ExportMetadata


def export_metadata(
    source: dict[str, Any] | None = None, layer: int = 3, num_layers: int = 6, **fields: Any
) -> ExportMetadata:
    """An export's metadata with the given source, layer and fields; every other required field a plain value."""
    values = dict(
        source=source or {"model": "minilm-l6", "path": None},
        layer=layer,
        num_layers=num_layers,
        representation="exported",
        pooling="mean",
        normalize=False,
        max_seq_length=128,
        parameters={"full": 2, "cut": 1},
        weights_bytes=1,
        parity={},
        command="layerpick export",
    )
    return ExportMetadata(**{**values, **fields})


def export_metadata_json(
    source: dict[str, Any] | None = None, layer: int = 3, num_layers: int = 6, **fields: Any
) -> dict[str, Any]:
    """The same as the file's JSON object."""
    return export_metadata(source, layer, num_layers, **fields).to_json()


def validation_json(num_layers: int, mean_by_layer: list, model: str = "tiny", **fields: Any) -> dict[str, Any]:
    """A validation.json object with the given curve (no tasks unless given) and fields."""
    from layerpick.validation.result import ValidationReport

    values = {"model": model, "num_layers": num_layers, "tasks": {}, "mean_by_layer": mean_by_layer, **fields}
    return ValidationReport(**values).to_json()
