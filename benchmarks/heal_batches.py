"""What length-grouped batches save a heal: the same heal trained with batches drawn at random and with batches of
texts of similar length (`healing.batches`), side by side in one run, on the same texts, teacher vectors and seed.

    python benchmarks/heal_batches.py --model minilm-l6 --layer 3 --fit-texts ../shared/data/SciFact \
        --max-texts 1000 --epochs 2 --work $WORK/heal-batches --output $WORK/heal_batches.md   # see results/heal.md

A BEIR folder gives passages of the model's length and as many short sentences (`healing.texts`): drawn at random,
nearly every batch of 64 holds a passage and is padded to its length. The heal is the product's `heal_model`; only
the trainer's batching differs (`healing.train.train`'s `group_lengths`). Reported: the whole heal's minutes (the
first run of an invocation also exports the cut and computes the teacher's vectors), the per-epoch losses, and the
held-out fidelity after.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import shlex
import sys
import time
from pathlib import Path
from unittest import mock

from layerpick.healing import HealConfig, heal_model
from layerpick.healing import job as heal_job
from layerpick.healing.train import train

MODES = {"random": False, "length-grouped": True}


def one_run(args, mode: str) -> dict:
    settings = {name: getattr(args, name) for name in ("fit_texts", "max_texts", "epochs", "seed")}
    config = HealConfig(**settings, progress=False, overwrite=True)
    (args.work / "teacher").mkdir(parents=True, exist_ok=True)
    trainer = functools.partial(train, group_lengths=MODES[mode])
    started = time.monotonic()
    with mock.patch.object(heal_job, "train", trainer):
        report = heal_model(args.model, args.layer, args.work / mode, config, teacher_home=args.work / "teacher")
    row = {
        "mode": mode,
        "heal_minutes": round((time.monotonic() - started) / 60, 2),
        "losses": [round(entry["loss"], 4) for entry in report.training["losses"]],
        "cosine": (report.before.cosine, report.after.cosine),
        "overlap": (report.before.knn_overlap, report.after.knn_overlap),
        "texts": report.texts["count"],
    }
    print(json.dumps(row), flush=True)
    return row


def render(args, rows: list[dict]) -> str:
    command = "python benchmarks/heal_batches.py " + shlex.join(sys.argv[1:])
    title = f"# A heal of {args.model} at K = {args.layer}: batches drawn at random against length-grouped batches"
    lines = [
        f"{title}\n\nCommand: `{command}`\n",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, 2 torch threads, nothing else running;"
        f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Texts: {args.fit_texts or 'the embedded set'}"
        f" ({rows[0]['texts']} texts, 10% held out), {args.epochs} epochs, seed {args.seed}, the heal's other"
        " defaults. Minutes: the whole heal (cut, teacher vectors from a warm cache after the first run, training,"
        " fidelity, writing).",
        "",
        "| batches | minutes | loss per epoch | held-out cosine before -> after | 10-NN overlap before -> after |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        (c0, c1), (o0, o1) = row["cosine"], row["overlap"]
        losses = ", ".join(f"{loss:.4f}" for loss in row["losses"])
        lines.append(
            f"| {row['mode']} | {row['heal_minutes']} | {losses} | {c0:.3f} -> {c1:.3f} | {o0:.3f} -> {o1:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="minilm-l6")
    parser.add_argument("--layer", type=int, default=3)
    parser.add_argument("--fit-texts", help="the heal's texts (default: the embedded calibration set)")
    parser.add_argument("--max-texts", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="random length-grouped", help=f"of {', '.join(MODES)}, in order")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    rows = []
    for mode in args.modes.split():
        rows.append(one_run(args, mode))
        args.output.write_text(render(args, rows))
    print(args.output.read_text())


if __name__ == "__main__":
    main()
