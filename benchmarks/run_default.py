"""What `layerpick run` gives a trained embedder by default: minilm-l6 run on SciFact's corpus and on the embedded
set alone, with nothing but the defaults, then each export scored on SciFact alone and as a query encoder for the
full model's documents. Writes benchmarks/results/run_default.md.

    python benchmarks/run_default.py --work $WORK            # the two runs, the scoring, the page (about 1 h)
    python benchmarks/run_default.py --work $WORK --render   # the page again from what $WORK holds

Each step is the command a user types; the minutes are the run's own stage times (run.json), the estimate the
plan's (heal-plan.json), the scores validation.json's. Nothing else may run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "SciFact"
PAGE = ROOT / "benchmarks" / "results" / "run_default.md"
LAYERPICK = [sys.executable, "-m", "layerpick"]
RUNS = {"SciFact's corpus": ["--fit-texts", str(SCIFACT)], "the embedded set": []}


def run_all(work: Path) -> None:
    full = work / "full"
    if not (full / "validation.json").is_file():
        _call(["validate", "minilm-l6", "--tasks", str(SCIFACT), "--layers", "6", "--output", str(full)])
    for name, options in RUNS.items():
        folder = work / _slug(name)
        _call(["run", "minilm-l6", *options, "--output", str(folder)])
        for how, extra in (("alone", []), ("queries", ["--documents-by", "minilm-l6"])):
            target = folder / f"scifact-{how}"
            _call(
                [
                    "validate",
                    "--exported",
                    str(folder / "model"),
                    "--tasks",
                    str(SCIFACT),
                    *extra,
                    "--output",
                    str(target),
                ]
            )


def _call(words: list[str]) -> None:
    print("$ layerpick " + " ".join(words), flush=True)
    subprocess.run([*LAYERPICK, *words, "--quiet"], check=True, cwd=ROOT)


def _slug(name: str) -> str:
    return "scifact" if "SciFact" in name else "embedded"


def _score(folder: Path) -> float:
    data = json.loads((folder / "validation.json").read_text(encoding="utf-8"))
    return [value for value in data["mean_by_layer"] if value is not None][-1]


def rows(work: Path) -> list[list[str]]:
    full = _score(work / "full")
    found = []
    for name in RUNS:
        folder = work / _slug(name)
        meta = json.loads((folder / "model" / "layerpick.json").read_text(encoding="utf-8"))
        plan = json.loads((folder / "heal-plan.json").read_text(encoding="utf-8"))
        stages = json.loads((folder / "run.json").read_text(encoding="utf-8"))["stages"]
        bench = json.loads((folder / "bench.json").read_text(encoding="utf-8"))
        heal, k = meta["heal"], meta["layer"]
        alone, queries = _score(folder / "scifact-alone"), _score(folder / "scifact-queries")
        speed = " / ".join(f"{row['throughput_ratio']:.2f}x" for row in bench["rows"])
        found.append(
            [
                name,
                f"{sum(stage['seconds'] for stage in stages.values()) / 60:.1f}",
                f"{k} of {meta['num_layers']}",
                f"{plan['texts']:,} x {plan['epochs']}",
                f"{heal['training']['minutes']:.1f} ({plan['minutes'][str(k)]:.1f})",
                f"{heal['before']['cosine']:.3f} -> {heal['after']['cosine']:.3f}",
                f"{alone:.4f} ({alone / full:.1%})",
                f"{queries:.4f} ({queries / full:.1%})",
                speed,
            ]
        )
    return found


def render(work: Path) -> str:
    header = [
        "fit texts",
        "run, min",
        "cut kept",
        "texts x epochs",
        "heal min (estimated)",
        "held-out cosine",
        "SciFact nDCG@10 alone",
        "as a query encoder",
        "throughput batch 1 / 32",
    ]
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(row) + " |" for row in rows(work)]
    full = _score(work / "full")
    return TEMPLATE.format(
        table="\n".join(table), full=full, machine=f"{os.cpu_count()} cores, {platform.machine()}, no GPU"
    )


TEMPLATE = """# What does `layerpick run` give a trained embedder by default?

A healed cut at half its depth, chosen, trained, exported and benched in one command, within the time the plan
announced. minilm-l6 (all-MiniLM-L6-v2, 6 layers), nothing but the defaults:

{table}

The full model scores {full:.4f} nDCG@10 on SciFact (mteb's evaluator, the same data). "As a query encoder":
queries by the healed cut, documents by the full model (`validate --documents-by minilm-l6`), as it serves an
index the full model built. "run, min" is the sum of the run's stage times (select, export with the heal, bench,
from run.json); "heal min" is the heal's own minutes beside the plan's estimate said before training; the
throughput is the bench stage's, the export against the full model in one process.

## How it was made

```bash
python benchmarks/run_default.py --work $WORK
```

which types, for each row, `layerpick run minilm-l6 [--fit-texts SciFact/] --output $WORK/NAME`, then `layerpick
validate --exported $WORK/NAME/model --tasks SciFact/ [--documents-by minilm-l6]`, and `layerpick validate
minilm-l6 --tasks SciFact/ --layers 6` for the full model. Machine: {machine}; torch and the other packages as
`constraints.txt` pins them. The plan fits the texts and epochs of the first cut (K = 3) to `--heal-minutes 20`
from a speed probe on the heal's own texts; the deeper cut (K = 5) is healed only when K = 3 misses the held-out
cosine of 0.88.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--render", action="store_true", help="only write the page from what --work holds")
    args = parser.parse_args()
    if not args.render:
        run_all(args.work)
    PAGE.write_text(render(args.work), encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
