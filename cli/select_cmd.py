"""`layerpick select`: score every layer on a calibration set, choose one, write the report."""

from __future__ import annotations

import json

import typer

from layerpick import selection as selection_stage
from layerpick._util import interrupt
from layerpick.cli import options as opt
from layerpick.core import registry
from layerpick.core.load_options import LoadOptions
from layerpick._util.outputs import model_output_dir
from layerpick.selection.config import SelectConfig


@opt.with_load_options
@opt.with_select_options
def select(
    model: opt.ModelArg = None,
    output: opt.Output = None,
    as_json: opt.Json = False,
    quiet: opt.Quiet = False,
    selection: SelectConfig = SelectConfig(),
    load: LoadOptions = LoadOptions(),
) -> None:
    """Score every layer with unsupervised metrics in one forward pass (plus augmented views) and pick one.

    Example: layerpick select smollm2-135m --limit 256 --output layerpick-out/smollm2
    """
    from layerpick.selection.render import render_report  # torch, once a command runs

    name = registry.model_or_default(model)
    interrupt.final_output(output or model_output_dir(name))  # the report's files are committed into it last
    report, written = selection_stage.select_and_write(name, load, selection, output)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    render_report(report, written)
