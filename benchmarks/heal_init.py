"""Which teacher blocks should a healed cut start from? (issue 31: "the layers kept are for you to find")

    python benchmarks/heal_init.py --model minilm-l6 --runs "3:first 3:1,3,5 3:1,3,6 3:2,4,6" \
        --fit-texts ../shared/data/SciFact --max-texts 1000 --epochs 2 --scifact ../shared/data/SciFact \
        --work $WORK/heal-init --output $WORK/heal_init.md   # summarised in benchmarks/results/heal.md

Each run is `K:BLOCKS`: the cut at K healed by the product's `heal` with `--blocks BLOCKS` (`first`: the plain
cut's blocks 1..K; `spread`; or the teacher's blocks, counted from 1), all on the same texts, schedule and seed (the
teacher's vectors computed once), then scored on SciFact's full corpus with `layerpick.validate` (symmetric, and
asymmetric: documents by the full model). The cuts have K blocks whatever they start from: the same size and speed.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path

from layerpick.healing import HealConfig, heal_model
from layerpick.validation import ValidateConfig, run_validation


def scifact(exported: Path, scifact_dir: str, work: Path, documents_by: str | None) -> float:
    name = f"{exported.name}-{'asym' if documents_by else 'sym'}"
    config = ValidateConfig(
        output_dir=work / "validate" / name,
        store_dir=work / "store",
        exported_dir=exported,
        documents_by=documents_by,
        progress=False,
    )
    run = run_validation(None, [scifact_dir], config)
    layer = run.report.layers_evaluated[0]
    return run.report.tasks["SciFact"]["main_score_by_layer"][layer]


def one_run(args, layer: int, blocks: str, work: Path) -> dict:
    output = work / f"healed-{layer}-{blocks.replace(',', '-')}"
    config = HealConfig(
        blocks=blocks,
        fit_texts=args.fit_texts,
        max_texts=args.max_texts,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        seed=args.seed,
        progress=False,
        overwrite=True,
    )
    (work / "teacher").mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    report = heal_model(args.model, layer, output, config, teacher_home=work / "teacher")
    row = {
        "layer": layer,
        "blocks": report.teacher["blocks"],
        "cosine": (report.before.cosine, report.after.cosine),
        "overlap": (report.before.knn_overlap, report.after.knn_overlap),
        "minutes": round((time.monotonic() - started) / 60, 1),
        "symmetric": scifact(output, args.scifact, work, None),
        "asymmetric": scifact(output, args.scifact, work, args.model),
    }
    print(json.dumps(row), flush=True)
    return row


def render(args, rows: list[dict], full_score: float) -> str:
    command = "python benchmarks/heal_init.py " + shlex.join(sys.argv[1:])
    lines = [
        f"# Which teacher blocks a healed cut of {args.model} starts from",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, 2 torch threads;"
        f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
        f" Texts: {args.fit_texts or 'the embedded calibration set'} (at most {args.max_texts}, 10% held out),"
        f" {args.epochs} epochs, lr {args.learning_rate}, seed {args.seed}; the heal's other defaults."
        f" SciFact: its full corpus, nDCG@10; the full model scores {full_score:.4f}.",
        "",
        "| K | the teacher's blocks it starts from | held-out cosine before -> after | 10-NN overlap before -> after |"
        " SciFact symmetric (share) | asymmetric (share) | minutes (heal) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        (c0, c1), (o0, o1) = row["cosine"], row["overlap"]
        lines.append(
            f"| {row['layer']} | {', '.join(map(str, row['blocks']))} | {c0:.3f} -> {c1:.3f} | {o0:.3f} -> {o1:.3f} |"
            f" {row['symmetric']:.4f} ({row['symmetric'] / full_score:.1%}) |"
            f" {row['asymmetric']:.4f} ({row['asymmetric'] / full_score:.1%}) | {row['minutes']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="minilm-l6")
    parser.add_argument("--runs", default="3:first 3:spread", help="K:BLOCKS ..., BLOCKS as heal's --blocks")
    parser.add_argument("--fit-texts", help="the heal's texts (default: the embedded calibration set, as heal's)")
    parser.add_argument("--max-texts", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scifact", required=True)
    parser.add_argument("--full-score", type=float, default=0.6451, help="the full model's SciFact nDCG@10")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    runs = [run.split(":", 1) for run in args.runs.split()]
    rows = []
    for layer, blocks in runs:  # the table written after each run: an interrupted run keeps what it measured
        rows.append(one_run(args, int(layer), blocks, args.work))
        args.output.write_text(render(args, rows, args.full_score))
    print(args.output.read_text())


if __name__ == "__main__":
    main()
