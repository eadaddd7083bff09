"""layerpick: find the best intermediate layer of a language model without labels, and export it.

The curated public API: the stage verbs (`select`, `validate` and `run` here; all seven, with `export`, `bench`,
`compare` and `serve`, in `layerpick.verbs`, which says their one argument pattern), each stage's config and
result types, and the "layer k" core. The names are imported on first use (PEP 562), so `import
layerpick.<submodule>` does not pay for torch
until something needs it; the command line relies on that to handle Ctrl-C from its first moment.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's first moments count)

__version__ = "0.1.0"

_EXPORTS = {
    # The verbs whose names no subpackage takes; `export`, `bench`, `compare` and `serve` are `layerpick.verbs.*`
    # until those four packages are renamed (an import of `layerpick.export.x` rebinds `layerpick.export`).
    **{verb: "layerpick.verbs" for verb in ("select", "validate", "run")},
    "SelectConfig": "layerpick.selection.job",
    "SelectReport": "layerpick.selection.result",
    "ValidateConfig": "layerpick.validation.config",
    "ValidationReport": "layerpick.validation.result",
    "ValidationRun": "layerpick.validation.result",
    "ExportConfig": "layerpick.export.config",
    "ExportResult": "layerpick.export.job",
    "ExportMetadata": "layerpick.export.metadata",
    "BenchConfig": "layerpick.bench.config",
    "BenchResult": "layerpick.bench.run",
    "CutsResult": "layerpick.bench.cuts",
    "RunConfig": "layerpick.workflow.run",
    "RunResult": "layerpick.workflow.run",
    "RunRecord": "layerpick.workflow.record",
    "Comparison": "layerpick.compare.run",
    "ComparisonReport": "layerpick.compare.result",
    "ServeConfig": "layerpick.serve.config",
    "CalibrationSet": "layerpick.core.calibration",
    "load_calibration": "layerpick.core.calibration",
    "CollectConfig": "layerpick.core.collect",
    "LayerStates": "layerpick.core.collect",
    "collect": "layerpick.core.collect",
    "LoadedModel": "layerpick.core.models",
    "LoadOptions": "layerpick.core.models",
    "load_model": "layerpick.core.models",
    "family_for": "layerpick.core.surgery",
    "truncate_": "layerpick.core.surgery",
    "truncated_copy": "layerpick.core.surgery",
    "LayerpickError": "layerpick.errors",
}

__all__ = [
    "BenchConfig",
    "BenchResult",
    "CalibrationSet",
    "CollectConfig",
    "Comparison",
    "ComparisonReport",
    "CutsResult",
    "ExportConfig",
    "ExportMetadata",
    "ExportResult",
    "LayerStates",
    "LayerpickError",
    "LoadOptions",
    "LoadedModel",
    "RunConfig",
    "RunRecord",
    "RunResult",
    "SelectConfig",
    "SelectReport",
    "ServeConfig",
    "ValidateConfig",
    "ValidationReport",
    "ValidationRun",
    "collect",
    "family_for",
    "load_calibration",
    "load_model",
    "run",
    "select",
    "truncate_",
    "truncated_copy",
    "validate",
]

if TYPE_CHECKING:
    from layerpick.bench.config import BenchConfig
    from layerpick.bench.cuts import CutsResult
    from layerpick.bench.run import BenchResult
    from layerpick.compare.result import ComparisonReport
    from layerpick.compare.run import Comparison
    from layerpick.export.config import ExportConfig
    from layerpick.export.job import ExportResult
    from layerpick.export.metadata import ExportMetadata
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.result import SelectReport
    from layerpick.serve.config import ServeConfig
    from layerpick.validation.config import ValidateConfig
    from layerpick.validation.result import ValidationReport, ValidationRun
    from layerpick.verbs import run, select, validate
    from layerpick.workflow.record import RunRecord
    from layerpick.workflow.run import RunConfig, RunResult
    from layerpick.core.calibration import CalibrationSet, load_calibration
    from layerpick.core.collect import CollectConfig, LayerStates, collect
    from layerpick.core.models import LoadedModel, LoadOptions, load_model
    from layerpick.core.surgery import family_for, truncate_, truncated_copy
    from layerpick.errors import LayerpickError


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'layerpick' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
