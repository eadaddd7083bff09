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


COST_HEADER = ("params kept", "ideal speed-up")


def cost_cells(params_kept: int | None, params_full: int | None, speedup: float | None) -> tuple[str, str]:
    """A layer's cost as two table cells: parameters kept (share of the full model's and count) and its
    ideal speed-up; dashes where unknown."""
    if params_kept is None or not params_full:
        kept = MISSING
    else:
        kept = f"{params_kept / params_full:.0%} ({count(params_kept)})"
    return kept, number(speedup, ".2f", "x")


def count(value: int) -> str:
    """A parameter count in a few digits: 134.5M, 268.1M, 1.2B, 45.3K."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= size:
            return f"{value / size:.1f}{suffix}"
    return str(value)
