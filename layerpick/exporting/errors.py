"""The one-line errors of the export stage (all `LayerpickError`s, so the CLI maps them to exit code 1); the static
table's and the ONNX graph's own errors live beside their steps (`static_checks`, `onnx.graph`)."""

from layerpick.errors import LayerpickError


class ExportError(LayerpickError):
    """An export request that cannot be carried out (a bad or mismatched report, an unexportable choice)."""


class ParityError(ExportError):
    """The saved directory does not reproduce layer K of the full model."""
