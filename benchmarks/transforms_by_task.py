"""Where a shallow layer loses to a deep one: each task's main score at a few layers under a few transforms.

`transforms.md` compares transforms by their nine-task mean; this script breaks the mean down by task for the
layers asked, so that the gap between a fast layer and the best layer can be read task by task (same protocol:
the nine task folders subsampled as `benchmarks/rule_evidence.py` does, MTEB's evaluators, mean pooling, plain
text, max length 128, transforms fitted on the embedded calibration set).

    PYTHONPATH=. python benchmarks/transforms_by_task.py run --model gemma3-270m --layers 1,4,5,13 \
        --transforms none,whiten-128,whiten-256 --work /tmp/lt-gemma
    PYTHONPATH=. python benchmarks/transforms_by_task.py render --work /tmp/lt-gemma --model gemma3-270m
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.rule_evidence import TASKS, task_folders


def run(args) -> None:
    from layerpick.validation.config import ValidateConfig
    from layerpick.validation.run import run_validation

    began = time.perf_counter()
    config = ValidateConfig(
        layers=args.layers,
        output_dir=_output(args),
        max_length=128,
        prompt="none",
        transform=args.transforms,
        store_dir=args.work / "store",
        progress=False,
    )
    run_validation(args.model, task_folders(args.data, args.work, 300, TASKS), config)
    print(f"{args.model}: {time.perf_counter() - began:.0f} s; validation.json in {_output(args)}")


def render(args) -> None:
    from layerpick.validation.result import ValidationReport

    report = ValidationReport.read(_output(args) / "validation.json")
    variants = report.by_prompt or {"none": {"tasks": report.tasks, "mean_by_layer": report.mean_by_layer}}
    layers = report.layers_evaluated
    header = [f"{variant} L{layer}" for variant in variants for layer in layers]
    lines = [f"| task | {' | '.join(header)} |", "|---|" + "---|" * len(header)]
    for task in TASKS:
        cells = [_f(_by_layer(entry["tasks"][task])[layer]) for entry in variants.values() for layer in layers]
        lines.append(f"| {task} | {' | '.join(cells)} |")
    means = [_f(entry["mean_by_layer"][layer]) for entry in variants.values() for layer in layers]
    lines.append(f"| **mean** | {' | '.join(means)} |")
    print("\n".join(lines))


def _by_layer(task: dict | list) -> list:
    """A task's main score by layer: a variant's entry holds the list, a single variant's report a task entry."""
    return task if isinstance(task, list) else task["main_score_by_layer"]


def _output(args) -> Path:
    return args.work / "by-task" / args.model


def _f(value) -> str:
    return "–" if value is None else f"{value:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("run", "render"))
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--layers", default="1,4,5,13")
    parser.add_argument("--transforms", default="none,whiten-128,whiten-256")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/lt-gemma"))
    args = parser.parse_args()
    {"run": run, "render": render}[args.step](args)


if __name__ == "__main__":
    main()
