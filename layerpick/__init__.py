"""layerpick: find the best intermediate layer of a language model without labels, and export it.

The curated public API: the eight stage verbs (`select`, `validate`, `export`, `heal`, `bench`, `run`,
`compare`, `serve`; `layerpick.verbs` says their one argument pattern), each stage's config and result types, and the
"layer k" core. The names are imported on first use (PEP 562), so `import
layerpick.<submodule>` does not pay for torch
until something needs it; the command line relies on that to handle Ctrl-C from its first moment.
"""

from __future__ import annotations

from layerpick._util.lazy import lazy_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's first moments count)

__version__ = "0.1.0"

_EXPORTS = {
    # The verbs; no subpackage takes a verb's name (an import of `layerpick.<name>.x` would rebind the attribute).
    **{
        verb: "layerpick.verbs" for verb in ("select", "validate", "export", "heal", "bench", "run", "compare", "serve")
    },
    "SelectConfig": "layerpick.selection.job",
    "SelectReport": "layerpick.selection.result",
    "ValidateConfig": "layerpick.validation.config",
    "ValidationReport": "layerpick.validation.result",
    "ValidationRun": "layerpick.validation.result",
    "ExportConfig": "layerpick.exporting.config",
    "ExportResult": "layerpick.exporting.job",
    "ExportMetadata": "layerpick.exporting.metadata",
    "HealConfig": "layerpick.healing.config",
    "HealReport": "layerpick.healing.result",
    "BenchConfig": "layerpick.benchmark.config",
    "BenchResult": "layerpick.benchmark.run",
    "CutsResult": "layerpick.benchmark.cuts",
    "RunConfig": "layerpick.workflow.config",
    "RunResult": "layerpick.workflow.run",
    "RunRecord": "layerpick.workflow.record",
    "Comparison": "layerpick.comparison.run",
    "ComparisonReport": "layerpick.comparison.result",
    "ServeConfig": "layerpick.serving.config",
    "CalibrationSet": "layerpick.core.calibration",
    "load_calibration": "layerpick.core.calibration",
    "CollectConfig": "layerpick.core.collect",
    "LayerStates": "layerpick.core.collect",
    "collect": "layerpick.core.collect",
    "LoadedModel": "layerpick.core.models",
    "LoadOptions": "layerpick.core.load_options",
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
    "HealConfig",
    "HealReport",
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
    "bench",
    "compare",
    "export",
    "heal",
    "run",
    "select",
    "serve",
    "truncate_",
    "truncated_copy",
    "validate",
]

if TYPE_CHECKING:
    from layerpick.benchmark.config import BenchConfig
    from layerpick.benchmark.cuts import CutsResult
    from layerpick.benchmark.run import BenchResult
    from layerpick.comparison.result import ComparisonReport
    from layerpick.comparison.run import Comparison
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import ExportResult
    from layerpick.exporting.metadata import ExportMetadata
    from layerpick.healing.config import HealConfig
    from layerpick.healing.result import HealReport
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.result import SelectReport
    from layerpick.serving.config import ServeConfig
    from layerpick.validation.config import ValidateConfig
    from layerpick.validation.result import ValidationReport, ValidationRun
    from layerpick.verbs import bench, compare, export, heal, run, select, serve, validate
    from layerpick.workflow.record import RunRecord
    from layerpick.workflow.config import RunConfig
    from layerpick.workflow.run import RunResult
    from layerpick.core.calibration import CalibrationSet, load_calibration
    from layerpick.core.collect import CollectConfig, LayerStates, collect
    from layerpick.core.load_options import LoadOptions
    from layerpick.core.models import LoadedModel, load_model
    from layerpick.core.surgery import family_for, truncate_, truncated_copy
    from layerpick.errors import LayerpickError


_, __getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
