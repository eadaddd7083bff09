"""The content of a comparison: compare.json (the table, every model's curves, metric directions) and compare.md.

Owns: the table row of each model (its chosen layer and relative depth k/L; with a validation, the mean task score
at the selected, last and best layers and the gains, computed by `layerpick.validation.summary`), each model's
curves by layer and relative depth, the metrics in registry order with their documented directions, and the
markdown page. Pure functions over the entries of `layerpick.comparison.inputs`; nothing is written here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from layerpick._util.formatting import number
from layerpick._util.versions import library_versions
from layerpick.comparison.inputs import Entry
from layerpick.comparison.output import MEAN_PLOT, plot_name
from layerpick.metrics import list_metrics
from layerpick.frontier.scores import best_layer, comparison


def build_comparison(entries: Sequence[Entry], inputs: Iterable[str | Path] = ()) -> dict[str, Any]:
    """compare.json: the table, every model's curves by layer and relative depth, metric directions."""
    directions = _directions(entries)
    validated = any(e.validation is not None for e in entries)
    return {
        "inputs": [str(item) for item in inputs],
        "table": [table_row(e) for e in entries],
        "models": [_model_data(e) for e in entries],
        "metrics": directions,
        "plots": [plot_name(name) for name in directions] + ([MEAN_PLOT] if validated else []),
        "versions": library_versions(),
    }


def table_row(entry: Entry) -> dict[str, Any]:
    """The chosen layer and its relative depth; with a validation, the mean task score there and the gains."""
    num, selected = entry.num_layers, entry.selected_layer
    row: dict[str, Any] = {
        "label": entry.label,
        "model": entry.model,
        "revision": entry.revision,
        "num_layers": num,
        "rule": entry.rule,
        "transform": _transform_name(entry),
        "selected_layer": selected,
        "selected_depth": _depth(selected, num),
        "validated": entry.validation is not None,
        "selected_score": None,
        "last_layer": num,
        "last_score": None,
        "best_layer": None,
        "best_depth": None,
        "best_score": None,
        "gain_over_last": None,
        "gap_to_best": None,
    }
    means = entry.mean_by_layer
    if means is None:
        return row
    best = best_layer(means)
    scores = comparison(means, selected, num, best)
    row.update(
        selected_score=scores["selected"]["mean_score"],
        last_score=scores["last"]["mean_score"],
        best_layer=best,
        best_depth=_depth(best, num),
        best_score=scores["best"]["mean_score"],
        gain_over_last=scores["selected_minus_last"],
        gap_to_best=scores["selected_minus_best"],
    )
    return row


def _transform_name(entry: Entry) -> str:
    """The post-pooling transform the model's layers were chosen (or validated) under; `none` without one."""
    return str((entry.main.data.get("transform") or {}).get("name") or "none")


def _model_data(entry: Entry) -> dict[str, Any]:
    num = entry.num_layers
    main = entry.main.data
    return {
        "label": entry.label,
        "model": entry.model,
        "revision": entry.revision,
        "num_layers": num,
        "report": str(entry.select.path) if entry.select else None,
        "validation": str(entry.validation.path) if entry.validation else None,
        "rule": entry.rule,
        "selected_layer": entry.selected_layer,
        "representation": main.get("representation"),
        "pooling": main.get("pooling"),
        "depth": [k / num for k in range(num + 1)],
        "scores": entry.scores,
        "mean_by_layer": entry.mean_by_layer,
        "tasks": sorted(entry.validation.data["tasks"]) if entry.validation else None,
        "notes": list(entry.notes),
    }


def _directions(entries: Sequence[Entry]) -> dict[str, str | None]:
    """Every metric of any report, in registry order then as found, with its documented direction."""
    known = {spec.name: spec.direction for spec in list_metrics()}
    found: dict[str, str | None] = {}
    for entry in entries:
        given = entry.select.data.get("directions") or {} if entry.select else {}
        for name in entry.scores:
            if found.get(name) is None:
                found[name] = given.get(name) if given.get(name) in ("min", "max") else known.get(name)
    order = [name for name in known if name in found] + [name for name in found if name not in known]
    return {name: found[name] for name in order}


def _depth(layer: int | None, num: int) -> float | None:
    return None if layer is None else layer / num


# ---------------------------------------------------------------------------------------------- compare.md

_TABLE_HEAD = [
    "| model | L | rule | transform | selected | depth | score (selected) | score (last) | best layer "
    "| depth (best) | score (best) | gain vs last |",
    "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
]


def to_markdown(data: dict[str, Any]) -> str:
    """compare.md: the table of chosen layers and gains, the plots, and where each model came from."""
    rows = data["table"]
    lines = [
        "# layerpick compare",
        "",
        f"{len(rows)} model(s). Depth = layer / L (the fraction of blocks kept). Scores are the mean main score "
        "over the validated tasks (validation.json); gain = selected minus last layer; – where not validated.",
        "",
        *_TABLE_HEAD,
        *(_table_line(row) for row in rows),
    ]
    if data["plots"]:
        lines += ["", "## Plots", ""]
        lines += [f"![{name[:-4]}]({name})" for name in data["plots"]]
    lines += ["", "## Inputs", ""]
    lines += [line for model in data["models"] for line in _input_lines(model)]
    return "\n".join(lines) + "\n"


def _table_line(row: dict[str, Any]) -> str:
    cells = [
        _md(row["label"]),
        str(row["num_layers"]),
        _md(row["rule"] or "–"),
        _md(row.get("transform") or "none"),
        _int(row["selected_layer"]),
        _depth_cell(row["selected_depth"]),
        number(row["selected_score"]),
        number(row["last_score"]),
        _int(row["best_layer"]),
        _depth_cell(row["best_depth"]),
        number(row["best_score"]),
        _signed(row["gain_over_last"]),
    ]
    return "| " + " | ".join(cells) + " |"


def _input_lines(model: dict[str, Any]) -> list[str]:
    """Where one model came from, and its notes."""
    parts = [
        f"report `{model['report']}`" if model["report"] else "",
        f"validation `{model['validation']}`" if model["validation"] else "",
    ]
    return [
        f"- {_md(model['label'])}: " + ", ".join(p for p in parts if p),
        *(f"  - note: {_md(note)}" for note in model["notes"]),
    ]


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def _int(value: int | None) -> str:
    return number(value, "d")


def _depth_cell(value: float | None) -> str:
    """A relative depth, two decimals."""
    return number(value, ".2f")


def _signed(value: float | None) -> str:
    return number(value, "+.4f")
