"""layerpick: find the best intermediate layer of a language model without labels, and export it.

The curated public API; the CLI (`layerpick.cli`) calls only these. The names are imported on first use
(PEP 562), so `import layerpick.<submodule>` does not pay for torch until something needs it; the command
line relies on that to handle Ctrl-C from its first moment.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's first moments count)

__version__ = "0.1.0"

_EXPORTS = {
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

if TYPE_CHECKING:
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
