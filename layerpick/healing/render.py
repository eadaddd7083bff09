"""A heal on the terminal, as `layerpick heal` prints it: where the healed export is, what it was trained to
reproduce and on what, and its fidelity to the teacher before and after on the held-out texts; for a sweep
(`--layers`), every K's fidelity and the one kept first."""

from __future__ import annotations

import dataclasses

from rich.console import Console

from layerpick.exporting.metadata import describe_kept
from layerpick.healing.result import HealReport
from layerpick.healing.sweep import HealSweep, describe_rule


def render_heal(report: HealReport) -> None:
    """The lines `layerpick heal` prints on stdout."""
    console = Console()
    texts, training = report.texts, report.training
    console.print(f"[bold]healed[/bold] {report.output}")
    console.print(f"  layers      {describe_blocks(report)}")
    console.print(f"  teacher     {report.teacher.get('description')}")
    console.print(
        f"  texts       {texts.get('count')} from {texts.get('source')} ({texts.get('train')} trained on, "
        f"{texts.get('held_out')} held out)"
    )
    loss = training.get("final_loss")
    loss_text = "-" if loss is None else f"{loss:.4g}"
    epochs = training.get("epochs")
    console.print(
        f"  training    {epochs} epoch{'' if epochs == 1 else 's'}, {training.get('steps')} steps on "
        f"{training.get('device')}, "
        f"{training.get('minutes')} min"
    )
    console.print(f"  loss        {training.get('loss')}: {loss_text} at the end")
    if training.get("resumed_from_epoch") is not None:
        console.print(f"  resumed     from the checkpoint of epoch {training['resumed_from_epoch']:g}")
    before, after = report.before, report.after
    console.print(f"  fidelity    cosine to the teacher {before.cosine:.4f} -> {after.cosine:.4f}")
    console.print(f"              {after.k}-NN overlap {before.knn_overlap:.4f} -> {after.knn_overlap:.4f}")


def describe_blocks(report: HealReport) -> str:
    """`first 3 of 6`, or `3 of 6 (healed from blocks 1, 3, 6)`."""
    return describe_kept(report.layer, report.num_layers, report.teacher.get("blocks"))


def render_sweep(sweep: HealSweep) -> None:
    """The lines `layerpick heal --layers` prints: each K's fidelity after healing, the kept one marked, then it."""
    console = Console()
    console.print(f"[bold]kept K = {sweep.chosen}[/bold]: {describe_rule(sweep.max_loss)}")
    console.print("  K   blocks   cosine before -> after   10-NN overlap before -> after")
    for heal in sweep.heals:
        mark = "  <- kept" if heal.layer == sweep.chosen else ""
        console.print(
            f"  {heal.layer:<3} {heal.layer}/{heal.num_layers:<6} {heal.before.cosine:.4f} -> {heal.after.cosine:.4f}"
            f"         {heal.before.knn_overlap:.4f} -> {heal.after.knn_overlap:.4f}{mark}"
        )
    for layer in sweep.not_healed:
        console.print(
            f"  {layer:<3} {layer}/{sweep.report.num_layers:<6} not healed: K = {sweep.chosen} cleared the line"
        )
    render_heal(dataclasses.replace(sweep.report, output=sweep.output))
