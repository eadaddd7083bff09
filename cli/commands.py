"""The Typer app: every command registered, and the root options (--version, --verbose).

Importing this module imports every command module, but not torch, transformers, scipy or mteb: each command
imports its stage when it runs, so `--help`, option errors and usage errors answer at once (`tests/cli/
test_startup.py`). `layerpick.cli.app.main` imports it only after Ctrl-C handling is in place.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Annotated

import typer

from layerpick import __version__
from layerpick.cli import (
    bench_cmd,
    collect_cmd,
    compare_cmd,
    export_cmd,
    heal_cmd,
    models_cmd,
    run_cmd,
    select_cmd,
    serve_cmd,
    validate_cmd,
)

app = typer.Typer(
    name="layerpick",
    help="Find the best intermediate layer of a language model without labels, and export it as an embedder.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("select")(select_cmd.select)
app.command("models")(models_cmd.models)
app.command("collect")(collect_cmd.collect)
app.command("export")(export_cmd.export)
app.command("heal")(heal_cmd.heal)
app.command("serve")(serve_cmd.serve)
app.command("bench")(bench_cmd.bench)
app.command("validate")(validate_cmd.validate)
app.command("compare")(compare_cmd.compare)
app.command("run")(run_cmd.run)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"layerpick {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (stderr).")] = False,
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr, format="%(message)s")
    _quiet_third_party()


def _quiet_third_party() -> None:
    """layerpick draws its own progress bars; transformers' per-load bars and warnings are noise here. Before
    transformers is imported its environment says so (it reads it once, at import: a command's --help and its
    option errors never pay for the import); once imported (a command run in-process), its own switches do."""
    if "transformers" not in sys.modules and "huggingface_hub" not in sys.modules:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        os.environ["TRANSFORMERS_VERBOSITY"] = "error"
        return
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
