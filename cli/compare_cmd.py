"""`layerpick compare`: several select (and validate) reports overlaid on relative depth, with a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.comparison.render import render_comparison

REPORTS_HELP = (
    "Select report.json files, validation.json files, or folders holding them (a select/validate --output "
    "folder, layerpick-out/<model> with its validation/ subfolder, or a folder of such folders). A report and "
    "a validation of the same folder are one model."
)


def compare(
    reports: Annotated[list[Path], typer.Argument(help=REPORTS_HELP, metavar="REPORT", show_default=False)],
    output: Annotated[Path, typer.Option(help="Output directory (must be empty or absent, see --overwrite).")] = Path(
        "layerpick-out/compare"
    ),
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace the output directory when it holds a previous compare output (and nothing else).",
        ),
    ] = False,
    as_json: opt.Json = False,
) -> None:
    """Overlay several models' select (and validate) reports on relative depth k/L: a plot per metric, one of the
    mean task score, and a table of the chosen layers and their gains over the last layer.

    Example: layerpick compare layerpick-out/smollm2-135m layerpick-out/minilm-l6 --output layerpick-out/compare
    """
    from layerpick.comparison.run import compare_reports  # scipy and matplotlib: once the command runs

    interrupt.final_output(output)  # its files are committed into it last
    result = compare_reports(reports, output, overwrite=overwrite)
    if as_json:
        typer.echo(json.dumps(result.report.to_json(), indent=2))
        return
    render_comparison(result)
