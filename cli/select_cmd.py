"""`layerpick select`: score every layer on a calibration set, choose one, write the report."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from layerpick._util import interrupt
from layerpick._util.formatting import COST_HEADER, number
from layerpick.cli import options as opt
from layerpick.core import registry
from layerpick.core.models import LoadOptions
from layerpick.selection.job import SelectConfig, default_output, select_and_write
from layerpick.selection.report import (
    ARROWS,
    cost_lines,
    layer_cost_cells,
    layer_label,
    prompt_line,
    transform_line,
    side_by_side,
)
from layerpick.selection.result import SelectReport


@opt.with_load_options
@opt.with_select_options
def select(
    model: opt.ModelArg = None,
    output: opt.Output = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print report.json on stdout and nothing else.")] = False,
    quiet: opt.Quiet = False,
    selection: SelectConfig = SelectConfig(),
    load: LoadOptions = LoadOptions(),
) -> None:
    """Score every layer with unsupervised metrics in one forward pass (plus augmented views) and pick one.

    Example: layerpick select smollm2-135m --limit 256 --output layerpick-out/smollm2
    """
    name = registry.model_or_default(model)
    interrupt.final_output(output or default_output(name))  # the report's files are committed into it last
    report, written = select_and_write(name, load, selection, output)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    _render(report, written)


def _render(report: SelectReport, written) -> None:
    console = Console()
    names = list(report.scores)
    table = Table(title=f"{report.model}: {report.num_layers} layers, {report.representation} "
                        f"representation, {report.pooling} pooling")
    table.add_column("layer", justify="right")
    for name in names:
        table.add_column(f"{name} {ARROWS[report.directions[name]]}", justify="right", min_width=len(name) + 2)
    for column in COST_HEADER if report.costs else ():
        table.add_column(column, justify="right")
    for k in range(report.num_layers + 1):
        chosen = k == report.selected_layer
        cells = [_cell(report.scores[n][k]) for n in names] + list(layer_cost_cells(report, k))
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


def _cell(value) -> str:
    return number(value)
