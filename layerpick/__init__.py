"""layerpick: find the best intermediate layer of a language model without labels, and export it.

The curated public API; the CLI (`layerpick.cli`) calls only these.
"""

from layerpick.core.calibration import CalibrationSet, load_calibration
from layerpick.core.collect import CollectConfig, LayerStates, collect
from layerpick.core.models import LoadedModel, LoadOptions, load_model
from layerpick.core.surgery import family_for, truncate_, truncated_copy
from layerpick.errors import LayerpickError

__version__ = "0.1.0"

__all__ = [
    "CalibrationSet",
    "CollectConfig",
    "LayerStates",
    "LayerpickError",
    "LoadOptions",
    "LoadedModel",
    "collect",
    "family_for",
    "load_calibration",
    "load_model",
    "truncate_",
    "truncated_copy",
]
