"""Whether a value is a usable score: a real number (not a bool, not None, not a string), neither NaN nor
infinite. Scores arrive as floats, numpy scalars, JSON numbers or None (a layer a metric skipped)."""

from __future__ import annotations

import math
import numbers
from typing import Any


def is_finite(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
