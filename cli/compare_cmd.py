"""`layerpick compare`: several select (and validate) reports overlaid on relative depth, with a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from layerpick._util import interrupt
from layerpick._util.formatting import MISSING
from layerpick.compare.run import Comparison, compare_reports

REPORTS_HELP = (
    "Select report.json files, validation.json files, or folders holding them (a select/validate --output "
    "folder, layerpick-out/<model> with its validation/ subfolder, or a folder of such folders). A report and "
    "a validation of the same folder are one model."
)


def compare(
    reports: Annotated[list[Path], typer.Argument(help=REPORTS_HELP, metavar="REPORT", show_default=False)],
    output: Annotated[Path, typer.Option(help="Output directory (must be empty or absent, see --overwrite).")]
    = Path("layerpick-out/compare"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output directory when it holds a "
                                            "previous compare output (and nothing else).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print compare.json on stdout and nothing else.")] = False,
) -> None:
    """Overlay several models' select (and validate) reports on relative depth k/L: a plot per metric, one of the
    mean task score, and a table of the chosen layers and their gains over the last layer.

    Example: layerpick compare layerpick-out/smollm2-135m layerpick-out/minilm-l6 --output layerpick-out/compare
    """
    interrupt.final_output(output)  # its files are committed into it last
    result = compare_reports(reports, output, overwrite=overwrite)
    if as_json:
        typer.echo(json.dumps(result.data, indent=2))
        return
    _render(result)


def _render(result: Comparison) -> None:
    console = Console()
    rows = result.data["table"]
    validated = any(row["validated"] for row in rows)
    rules = {row["rule"] for row in rows if row["rule"]}
    table = Table(title=f"layerpick compare: {len(rows)} model(s), layer (relative depth k/L)",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
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
            cells += [_fixed(row["selected_score"]), _fixed(row["last_score"]), _gain(row["gain_over_last"]),
                      _layer(row["best_layer"], row["num_layers"]), _fixed(row["best_score"])]
        table.add_row(*cells)
    console.print(table)
    if len(rules) == 1:
        console.print(f"rule: {next(iter(rules))}", highlight=False)
    if validated:
        console.print("mean = mean task score (validation.json) at the selected, last and best layers; "
                      "gain = selected minus last", highlight=False)
    for model in result.data["models"]:
        for note in model["notes"]:
            console.print(f"note: {model['label']}: {note}", highlight=False)
    plots = len(result.data["plots"])
    console.print(f"wrote {result.output}: {result.files[0].name}, {result.files[1].name} and {plots} plot(s)",
                  highlight=False)


def _layer(layer, num_layers: int) -> str:
    return MISSING if layer is None else f"{layer} ({layer / num_layers:.2f})"


def _fixed(value) -> str:
    return "–" if value is None else f"{value:.4f}"


def _gain(value) -> str:
    if value is None:
        return "–"
    color = "green" if value > 0 else "red" if value < 0 else "default"
    return f"[{color}]{value:+.4f}[/{color}]"
