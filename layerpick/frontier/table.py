"""The frontier of a validation.json as text: the table of frontier layers and picks (and `--static` tables
after them), and the lines that say which pick was chosen and why (the terminal, run's report and the model
card show the same words).

Pure functions over validation.json's frontier section; `validation/picks.py` writes that section.
"""

from __future__ import annotations

from typing import Any

from layerpick._util.formatting import COST_HEADER, MISSING, cost_cells, number
from layerpick.core.cost import LayerCosts


def frontier_table(data: dict[str, Any], measured: dict[int, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """The frontier as a table (header, rows): each frontier layer and each pick, with its mean score, its
    loss against the best layer, its ideal speed-up and parameters kept, and `measured` speed-ups by layer
    where known (from a bench)."""
    section, costs = data["frontier"], LayerCosts.from_json(data["cost"])
    means, best = data["mean_by_layer"], section["best_score"]
    marks = _marks(data)
    layers = sorted(set(section["layers"]) | set(marks))
    header = ["layer", "mean score", "loss vs best", *COST_HEADER] + (["measured speed-up"] if measured else []) + [""]
    rows = []
    for k in layers:
        tags = ", ".join(marks.get(k, []) + (["frontier"] if k in section["layers"] else []))
        cells = [
            str(k),
            number(means[k]),
            number(best - means[k] if means[k] is not None else None),
            *cost_cells(costs.params_kept[k], costs.params_full, costs.ideal_speedup[k]),
        ]
        rows.append(cells + ([(measured or {}).get(k, "–")] if measured else []) + [tags])
    return header, rows + [_static_row(entry, best, bool(measured)) for entry in data.get("static_exports") or []]


def _static_row(entry: dict[str, Any], best: float, measured: bool) -> list[str]:
    """A `--static` table's row: its mean and loss; no parameters kept or ideal speed-up (it runs no block)."""
    mean = entry["mean"]
    cells = [f"static {entry['name']}", number(mean), number(best - mean if mean is not None else None)]
    cells += [MISSING] * len(COST_HEADER) + ([MISSING] if measured else [])
    return cells + [f"static table from layer {entry['layer']}, {entry['pca_dims']} dims"]


def picks_lines(section: dict[str, Any]) -> list[str]:
    """The unsupervised and the validated pick side by side, and which one is chosen and why."""
    picks = section["picks"]
    lines = []
    for name in ("unsupervised", "validated"):
        pick = picks.get(name)
        if pick:
            lines.append(
                f"{name} pick: layer {pick['layer']}, mean score {pick['score']:.4f} "
                f"(-{pick['loss']:.4f} against the best), ideal speed-up {pick['ideal_speedup']:.2f}x"
            )
    return lines + [f"chosen: {section['reason']}"]


def _marks(data: dict[str, Any]) -> dict[int, list[str]]:
    section = data["frontier"]
    named = [
        ("chosen", section.get("chosen_layer")),
        ("unsupervised pick", section["picks"].get("unsupervised", {}).get("layer")),
        ("validated pick", section["picks"]["validated"]["layer"]),
        ("best", section["best_layer"]),
        ("last", data["last_layer"]),
    ]
    marks: dict[int, list[str]] = {}
    for label, layer in named:
        if layer is not None:
            marks.setdefault(layer, []).append(label)
    return marks
