"""How a number, or its absence, is written in tables and reports: one dash for a missing value."""

from __future__ import annotations

import math
from typing import Any

MISSING = "–"


def number(value: Any, spec: str = ".4f", suffix: str = "") -> str:
    """`value` formatted with `spec` (and `suffix`); the dash when it is None, NaN or infinite."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    return f"{value:{spec}}{suffix}"
