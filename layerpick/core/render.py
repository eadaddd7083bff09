"""A collection on the terminal, as `layerpick collect` prints it: each layer's mean norm and mean cosine between
texts, the notes, and the file written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from layerpick.core.collect_job import CollectionSummary


def render_collection(result: "CollectionSummary") -> None:
    """The table and lines `layerpick collect` prints on stdout."""
    wrapped = "" if result.prompt == "none" else f", prompt {result.prompt}"
    table = Table(
        title=f"{result.model}: {result.count} texts, {result.pooling} pooling, {result.representation}{wrapped}"
    )
    for column in ("layer", "mean norm", "mean cosine between texts"):
        table.add_column(column, justify="right")
    for layer, (norm, cosine) in enumerate(zip(result.mean_norm, result.mean_cosine)):
        table.add_row(str(layer), f"{norm:.3f}", f"{cosine:.3f}")
    console = Console()
    console.print(table)
    for note in result.notes:
        console.print(f"note: {note}")
    if result.output:
        console.print(f"wrote {result.output}")
