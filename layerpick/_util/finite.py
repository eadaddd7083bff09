"""Finite numbers: whether a value is a usable score (a real number, not a bool, None or a string, neither NaN nor
infinite; scores arrive as floats, numpy scalars, JSON numbers or None for a layer a metric skipped), and JSON
that strict parsers take (JSON has no NaN or Infinity, which Python's `json` writes by default)."""

from __future__ import annotations

import json
import math
import numbers
from typing import Any


def is_finite(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def strict_json_dumps(payload: Any, **options: Any) -> str:
    """`payload` as standard JSON: a non-finite float anywhere in it (a static model's unbounded
    `max_seq_length`, a NaN score) is written as null. Payloads without one take the fast path unchanged."""
    try:
        return json.dumps(payload, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_finite_or_none(payload), allow_nan=False, **options)


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    return value
