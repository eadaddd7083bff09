"""A validation on the terminal, as `layerpick validate` prints it: the per-layer score table, the frontier, the
prompt pairs, the metric correlations, and the failed tasks.

Reads only the validation.json document and the paths written, so it imports no mteb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

from layerpick._util.formatting import COST_HEADER, cost_cells, number
from layerpick.core.cost import LayerCosts
from layerpick.frontier.table import frontier_table, picks_lines


def render_validation(data: dict[str, Any], files: Sequence[Path], output_dir: Path) -> None:
    """The tables and lines `layerpick validate` prints on stdout for the validation.json document `data`,
    ending with the `files` it wrote into `output_dir`."""
    console = Console()
    console.print(score_table(data))
    comparison = data["comparison"]
    chosen = [(name, comparison[name]) for name in ("selected", "last", "best")]
    parts = [f"{name} layer {c['layer']}: {_fmt(c['mean_score'])}" for name, c in chosen if c["mean_score"] is not None]
    if parts:
        console.print("mean score at " + ", ".join(parts))
    if data.get("frontier"):
        header, rows = frontier_table(data)
        console.print(_plain_table("frontier: mean score against ideal speed-up", header, rows))
        for line in picks_lines(data["frontier"]):
            console.print(line, highlight=False)
    if data.get("by_prompt"):
        console.print(prompt_table(data))
    if data.get("metric_correlations"):
        console.print(correlation_table(data["metric_correlations"]))
    if data.get("documents_by"):
        console.print(f"retrieval documents encoded by {data['documents_by']['model']} (asymmetric)", highlight=False)
    for note in data.get("notes", []):
        console.print(f"note: {note}")
    console.print(
        f"wrote {files[0]} and {', '.join(path.name for path in files[1:])} (+ MTEB "
        f"results under {output_dir / data['results_dir']})"
    )


def render_failures(failures: dict[str, str]) -> None:
    """One line per failed task (task -> message), on stderr."""
    console = Console(stderr=True)
    for task, message in failures.items():
        console.print(f"[red]failed[/red] {task}: {message}", highlight=False)


def score_table(data: dict) -> Table:
    """Every task's main score by layer, the mean, the layer's cost, and which layers are selected, last, best or
    on the frontier."""
    names = list(data["tasks"])
    vectors = "unit vectors" if data.get("normalize") else "raw vectors"
    prompt = (data.get("prompt") or {}).get("name", "none")
    wrapped = "" if prompt == "none" else f", prompt {prompt}"
    transform = (data.get("transform") or {}).get("name")
    wrapped += f", transform {transform}" if transform else ""
    title = (
        f"{data['model']}: main score by layer ({data.get('representation')} representation, "
        f"{data.get('pooling') or 'own'} pooling, {vectors}{wrapped})"
    )
    table = Table(title=title)
    table.add_column("layer", justify="right")
    for name in names:
        table.add_column(f"{name}\n{data['tasks'][name]['main_score_name']}", justify="right")
    table.add_column("mean", justify="right", style="bold")
    costs = LayerCosts.from_json(data["cost"]) if data.get("cost") else None
    for column in COST_HEADER if costs else ():
        table.add_column(column, justify="right")
    table.add_column("")
    marks = {key: data.get(f"{key}_layer") for key in ("selected", "last", "best")}
    frontier = (data.get("frontier") or {}).get("layers", [])
    for k in data["layers_evaluated"]:
        row = [_fmt(data["tasks"][name]["main_score_by_layer"][k]) for name in names]
        cost = cost_cells(costs.params_kept[k], costs.params_full, costs.ideal_speedup[k]) if costs else ()
        tags = ", ".join([key for key, layer in marks.items() if layer == k] + (["frontier"] if k in frontier else []))
        table.add_row(str(k), *row, _fmt(data["mean_by_layer"][k]), *cost, tags, style="green" if tags else None)
    return table


def prompt_table(data: dict) -> Table:
    """Every (template, transform)'s mean score by layer, side by side; the best pair marked."""
    table = Table(title="mean score by layer and prompt template (+ transform)")
    table.add_column("layer", justify="right")
    entries = data["by_prompt"]
    for label, entry in entries.items():
        table.add_column(f"{label}\n{entry['pooling']}", justify="right")
    best = data.get("best_pair") or {}
    for k in data["layers_evaluated"]:
        cells = [
            _fmt(entry["mean_by_layer"][k]) + (" ◀" if (label, k) == (best.get("prompt"), best.get("layer")) else "")
            for label, entry in entries.items()
        ]
        table.add_row(str(k), *cells)
    return table


def correlation_table(correlations: dict) -> Table:
    """Each select metric's Spearman correlation with the mean task score across layers."""
    table = Table(title="Spearman across layers: select metric vs mean task score")
    for column in ("metric", "rho", "p", "layers", "agrees with the metric's direction"):
        table.add_column(column, justify="right" if column != "metric" else "left")
    for metric, entry in correlations.items():
        agrees = entry.get("agrees_with_direction")
        table.add_row(
            metric,
            _fmt(entry["spearman"]),
            _fmt(entry["p_value"]),
            str(entry["n_layers"]),
            "" if agrees is None else ("yes" if agrees else "no"),
        )
    return table


def _plain_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for index, column in enumerate(header):
        table.add_column(column, justify="right" if 0 < index < len(header) - 1 else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _fmt(value) -> str:
    return number(value)
