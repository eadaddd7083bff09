"""layerpick: find the best intermediate layer of a language model without labels, and export it.

The curated public API; the CLI (`layerpick.cli`) calls only these.
"""

from layerpick.calibration import CalibrationSet, load_calibration
from layerpick.collect import CollectConfig, LayerStates, collect
from layerpick.errors import LayerpickError
from layerpick.models import LoadedModel, LoadOptions, load_model
from layerpick.surgery import family_for, truncate_, truncated_copy

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
