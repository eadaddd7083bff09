"""A heal on the terminal, as `layerpick heal` prints it: where the healed export is, what it was trained to
reproduce and on what, and its fidelity to the teacher before and after on the held-out texts."""

from __future__ import annotations

from rich.console import Console

from layerpick.healing.result import HealReport


def render_heal(report: HealReport) -> None:
    """The lines `layerpick heal` prints on stdout."""
    console = Console()
    texts, training = report.texts, report.training
    console.print(f"[bold]healed[/bold] {report.output}")
    console.print(f"  layers      first {report.layer} of {report.num_layers}")
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
