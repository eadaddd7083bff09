"""The "generic" heal texts of benchmarks/results/heal.md: short texts sampled from classification train splits.

    python benchmarks/generic_texts.py --data ../shared/data --count 20000 --seed 0 --output $WORK/generic.txt

Reads the `text` field of each task's train.jsonl (Banking77, Emotion and AmazonCounterfactual by default), drops
empty and repeated texts, and writes a seeded sample of `--count` of them, one per line (newlines folded to spaces),
as a text file `layerpick heal --fit-texts` reads. Train splits only: the evidence scores the test splits.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

TASKS = ("Banking77Classification", "EmotionClassification", "AmazonCounterfactualClassification")


def train_texts(data: Path, tasks: tuple[str, ...]) -> list[str]:
    """Every distinct non-empty `text` of the tasks' train splits, in file order."""
    seen: dict[str, None] = {}
    for task in tasks:
        with (data / task / "train.jsonl").open(encoding="utf-8") as lines:
            for line in lines:
                text = " ".join(str(json.loads(line).get("text", "")).split())
                if text:
                    seen.setdefault(text)
    return list(seen)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    texts = train_texts(args.data, tuple(args.tasks.split(",")))
    if args.count > len(texts):
        parser.error(f"--count {args.count} is more than the {len(texts)} distinct texts there")
    sample = random.Random(args.seed).sample(texts, args.count)
    args.output.write_text("\n".join(sample) + "\n", encoding="utf-8")
    print(f"{args.output}: {len(sample)} of {len(texts)} distinct texts")


if __name__ == "__main__":
    main()
