"""A run on the terminal, as `layerpick run` prints it: the stages as they start (stderr), then the layer
exported, its scores, its speed and where everything is (stdout), or that in a few keys (`--json`). The report
files are `workflow.report`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rich.console import Console

from layerpick._util.formatting import number
from layerpick.workflow import heal_report

if TYPE_CHECKING:
    from layerpick.workflow.run import RunResult


def announcer(quiet: bool) -> Callable[[str, bool], None]:
    """`run_workflow`'s `announce`: one stderr line per stage, whether it runs or is reused (nothing when quiet)."""
    console = Console(stderr=True, highlight=False)

    def announce(stage: str, reused: bool) -> None:
        if not quiet:
            console.print(
                f"[bold]{stage}[/bold]: "
                + (
                    "reusing the finished stage (same model files, options and inputs; --force recomputes)"
                    if reused
                    else "running"
                )
            )

    return announce


def render_run(result: "RunResult", files: list[Path]) -> None:
    """The lines `layerpick run` prints on stdout once every stage is done."""
    console = Console(highlight=False, soft_wrap=True)  # whole lines, also when piped
    select, layer = result.select, result.export.layer
    how = (
        select.rule
        if layer == select.selected_layer and not result.config.choice.validated
        else (f"{' '.join(result.config.choice.flags())}; the rule {select.rule} picked layer {select.selected_layer}")
    )
    if result.export.is_healed:
        how = heal_report.how_chosen(result)
    prompt = (select.prompt or {}).get("name", "none")
    wrapped = "" if prompt == "none" else f", prompt {prompt}"
    transform = result.export.transform
    wrapped += f", transform {transform['name']} ({transform['output_dim']} dimensions)" if transform else ""
    healed = ", healed" if result.export.is_healed else ""
    console.print(f"[bold]layer {layer} of {select.num_layers}{healed}[/bold] ({how}{wrapped})")
    if result.export.is_healed and heal_report.score_line(result):
        console.print(heal_report.score_line(result))
    comparison = result.validation.comparison if result.validation else None
    if comparison:
        chosen = [(name, comparison[name]) for name in ("selected", "last", "best")]
        console.print(
            "mean task score: "
            + ", ".join(
                f"{name} layer {c['layer']} {c['mean_score']:.4f}" for name, c in chosen if c["mean_score"] is not None
            )
        )
    section = result.validation.frontier if result.validation else None
    if section:
        console.print(
            f"frontier (mean task score against ideal speed-up): layers {', '.join(str(k) for k in section['layers'])}"
        )
        if result.config.choice.validated:
            console.print(f"exported {section['reason']}")
    for row in result.bench.rows if result.bench else []:
        console.print(f"batch {row.batch_size}: throughput x{number(row.throughput_ratio, '.2f')} vs the full model")
    console.print(f"export: {result.export_dir}")
    console.print("report: " + ", ".join(str(path) for path in files))


def run_summary(result: "RunResult", files: list[Path]) -> dict:
    """`layerpick run --json`: which layer, how good, how much faster, and where everything is."""
    comparison = result.validation.comparison if result.validation else None
    return {
        "model": result.model,
        "num_layers": result.select.num_layers,
        "selected_layer": result.select.selected_layer,
        "rule": result.select.rule,
        "exported_layer": result.export.layer,
        "choice": result.config.choice.describe(),
        "prompt": result.select.prompt,
        "transform": result.export.transform,
        "validation": comparison,
        "speedup": result.bench.speedups() if result.bench else None,
        "export": str(result.export_dir),
        "parity_passed": result.export.parity["passed"],
        "report": [str(path) for path in files],
        "stages": result.stages,
    }
