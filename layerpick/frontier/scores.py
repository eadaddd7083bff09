"""Task scores by layer, as validate, compare and run read them: per-task scores by layer, their mean,
selected/last/best layers, and the
Spearman correlation across layers between each unsupervised select metric and the mean task score.

Pure functions over plain lists and dicts.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from scipy.stats import spearmanr

from layerpick._util.finite import is_finite


def mean_by_layer(scores: dict[str, dict[int, float]], layers: Sequence[int], num_layers: int) -> list[float | None]:
    """Mean over the tasks scored at every evaluated layer (so each layer averages the same tasks)."""
    complete = [by_layer for by_layer in scores.values() if all(is_finite(by_layer.get(k)) for k in layers)]
    return [
        sum(t[k] for t in complete) / len(complete) if complete and k in layers else None for k in range(num_layers + 1)
    ]


def best_layer(means: Sequence[float | None]) -> int | None:
    """The layer with the highest mean (the smallest such layer on ties); None when nothing was scored."""
    scored = [(value, -k) for k, value in enumerate(means) if is_finite(value)]
    return -max(scored)[1] if scored else None


def comparison(means: Sequence[float | None], selected: int | None, last: int, best: int | None) -> dict[str, Any]:
    """Mean task score at the selected, last and best layers, and the selected layer's gaps to the others."""
    layers = {"selected": selected, "last": last, "best": best}
    out: dict[str, Any] = {name: {"layer": k, "mean_score": _at(means, k)} for name, k in layers.items()}
    chosen = _at(means, selected)
    for other in ("last", "best"):
        value = _at(means, layers[other])
        out[f"selected_minus_{other}"] = chosen - value if is_finite(chosen) and is_finite(value) else None
    return out


def metric_correlations(
    scores: dict[str, list[float | None] | None], directions: dict[str, str], means: Sequence[float | None]
) -> dict[str, dict[str, Any]]:
    """Per metric: Spearman rho (and p) across the layers where both the metric and the mean exist."""
    out = {}
    for metric, values in scores.items():
        pairs = [(v, m) for v, m in zip(values or [], means) if is_finite(v) and is_finite(m)]
        entry: dict[str, Any] = {"spearman": None, "p_value": None, "n_layers": len(pairs)}
        if len(pairs) >= 3 and len({p[0] for p in pairs}) > 1 and len({p[1] for p in pairs}) > 1:
            rho, p_value = spearmanr([p[0] for p in pairs], [p[1] for p in pairs])
            entry.update(spearman=float(rho), p_value=float(p_value))
        if metric in directions:
            entry["direction"] = directions[metric]
            if entry["spearman"] is not None:
                entry["agrees_with_direction"] = (entry["spearman"] > 0) == (directions[metric] == "max")
        out[metric] = entry
    return out


def clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null, tuples lists, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _at(values: Sequence[float | None], k: int | None) -> float | None:
    return values[k] if k is not None and 0 <= k < len(values) else None
