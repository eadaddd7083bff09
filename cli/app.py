"""The `layerpick` command: composes the command modules and maps errors to exit codes."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from layerpick import __version__
from layerpick.cli import (
    bench_cmd,
    collect_cmd,
    compare_cmd,
    errors,
    export_cmd,
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
    """layerpick draws its own progress bars; transformers' per-load bars and warnings are noise here."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()


def main() -> None:
    try:
        code = app(standalone_mode=False)  # without standalone mode, a typer.Exit(code) comes back as its code
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        print("layerpick: aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as error:  # noqa: BLE001 - the one error mapper
        if _is_usage_error(error):
            error.show()
            sys.exit(2)
        if errors.debug_enabled():
            raise
        sys.exit(errors.report(error))


def _is_usage_error(error: Exception) -> bool:
    from typer._click.exceptions import ClickException  # Typer bundles its own click

    return isinstance(error, ClickException)
