"""A select report on the terminal, as `layerpick select` prints it: every layer's scores (the chosen one
highlighted), the (template, transform) pairs side by side, the choice, its cost and the notes.

The files (report.json, report.md, the plot) are `selection.report`'s; this shares its cells and lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from rich.console import Console
from rich.table import Table

from layerpick._util.formatting import COST_HEADER, number
from layerpick.selection.report import (
    ARROWS,
    cost_lines,
    layer_cost_cells,
    layer_label,
    prompt_line,
    side_by_side,
    transform_line,
)
from layerpick.selection.result import SelectReport


def render_report(report: SelectReport, written: Iterable[Path]) -> None:
    """The tables and lines `layerpick select` prints on stdout, ending with the files it wrote."""
    console = Console()
    names = list(report.scores)
    table = Table(
        title=f"{report.model}: {report.num_layers} layers, {report.representation} "
        f"representation, {report.pooling} pooling"
    )
    table.add_column("layer", justify="right")
    for name in names:
        table.add_column(f"{name} {ARROWS[report.directions[name]]}", justify="right", min_width=len(name) + 2)
    for column in COST_HEADER if report.costs else ():
        table.add_column(column, justify="right")
    for k in range(report.num_layers + 1):
        chosen = k == report.selected_layer
        cells = [number(report.scores[n][k]) for n in names] + list(layer_cost_cells(report, k))
        table.add_row(layer_label(report, k), *cells, style="bold green" if chosen else None)
    console.print(table)
    side = side_by_side(report)
    if side:
        header, rows = side
        pairs = Table(title="prompt templates and transforms side by side (the rule's metrics)")
        for column in header:
            pairs.add_column(column, justify="right")
        for row in rows:
            pairs.add_row(*row, style="bold green" if any("◀" in cell for cell in row) else None)
        console.print(pairs)
    if report.prompt:
        console.print(prompt_line(report)[2:], markup=False)
    if report.transform:
        console.print(transform_line(report)[2:], markup=False)
    console.print(f"selected: [bold]{report.choice}[/bold]")
    for line in cost_lines(report):
        console.print(line[2:], highlight=False)
    for note in report.notes:
        console.print(f"note: {note}")
    console.print("wrote " + ", ".join(str(p) for p in written))
