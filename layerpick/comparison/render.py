"""A comparison on the terminal, as `layerpick compare` prints it: each model's chosen layer (and, with
validations, its scores and gain over the last layer), the notes, and the files written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from layerpick._util.formatting import MISSING

if TYPE_CHECKING:
    from layerpick.comparison.run import Comparison


def render_comparison(result: "Comparison") -> None:
    """The table and lines `layerpick compare` prints on stdout."""
    console = Console()
    rows = result.report.table
    validated = any(row["validated"] for row in rows)
    rules = {row["rule"] for row in rows if row["rule"]}
    table = Table(
        title=f"layerpick compare: {len(rows)} model(s), layer (relative depth k/L)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("model", no_wrap=True)
    if len(rules) > 1:
        table.add_column("rule")
    table.add_column("L", justify="right")
    table.add_column("selected", justify="right")
    if validated:
        for name in ("mean\nsel", "mean\nlast", "gain", "best", "mean\nbest"):
            table.add_column(name, justify="right")
    for row in rows:
        cells = [escape(row["label"])] + ([escape(row["rule"] or "–")] if len(rules) > 1 else [])
        cells += [str(row["num_layers"]), _layer(row["selected_layer"], row["num_layers"])]
        if validated:
            cells += [
                _fixed(row["selected_score"]),
                _fixed(row["last_score"]),
                _gain(row["gain_over_last"]),
                _layer(row["best_layer"], row["num_layers"]),
                _fixed(row["best_score"]),
            ]
        table.add_row(*cells)
    console.print(table)
    if len(rules) == 1:
        console.print(f"rule: {next(iter(rules))}", highlight=False)
    if validated:
        console.print(
            "mean = mean task score (validation.json) at the selected, last and best layers; "
            "gain = selected minus last",
            highlight=False,
        )
    for model in result.report.models:
        for note in model["notes"]:
            console.print(f"note: {model['label']}: {note}", highlight=False)
    plots = len(result.report.plots)
    console.print(
        f"wrote {result.output}: {result.files[0].name}, {result.files[1].name} and {plots} plot(s)", highlight=False
    )


def _layer(layer, num_layers: int) -> str:
    return MISSING if layer is None else f"{layer} ({layer / num_layers:.2f})"


def _fixed(value) -> str:
    return "–" if value is None else f"{value:.4f}"


def _gain(value) -> str:
    if value is None:
        return "–"
    color = "green" if value > 0 else "red" if value < 0 else "default"
    return f"[{color}]{value:+.4f}[/{color}]"
