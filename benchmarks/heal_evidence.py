"""Healed cuts against the plain cut and the full model, on the CPU with MTEB's evaluators (issue 31, item 6).

    python benchmarks/heal_evidence.py --model minilm-l6 --layers 3 --healed LABEL=EXPORT_DIR ... \
        --data ../shared/data --work $WORK/heal-evidence --output $WORK/heal_evidence.md   # rows: heal_runs.json

For the model's layers K (plain cuts) and L (the full model), and for each healed export: the nine shared tasks,
each subsampled to --max-rows test rows as `rule_evidence.py` does, symmetric; and SciFact on its full corpus,
symmetric and asymmetric (`validate --documents-by MODEL`: documents by the full model, queries by the cut). Every
number comes from `layerpick.validate`; the representation store is shared, so the full model's SciFact documents
are encoded once. Writes one markdown table with the share of the full model each row keeps. `--no-full-scifact`:
the nine tasks only (SciFact on its full corpus is most of the time for a base-sized model on a CPU).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rule_evidence import TASKS, task_folders  # noqa: E402  (the subsampling of the committed evidence)

from layerpick.validation import ValidateConfig, run_validation  # noqa: E402

SCIFACT = "SciFact"


def scores(model: str | None, folders: list[str], work: Path, name: str, **config) -> dict[str, float]:
    """Each task's main score: of the model's one layer in `config["layers"]`, or of `config["exported_dir"]`."""
    run = run_validation(model, folders, ValidateConfig(output_dir=work / name, store_dir=work / "store", **config))
    layer = run.report.layers_evaluated[0]
    return {task: values["main_score_by_layer"][layer] for task, values in run.report.tasks.items()}


def row(label: str, model: str | None, args, work: Path, nine: list[str], scifact: str, **source) -> dict:
    """Nine-task mean, SciFact symmetric and asymmetric, for one layer or export."""
    slug = label.replace(" ", "-").replace("/", "_")
    nine_scores = scores(model, nine, work, f"{slug}-nine", progress=False, **source)
    symmetric = asymmetric = None
    if not args.no_full_scifact:
        symmetric = scores(model, [scifact], work, f"{slug}-scifact", progress=False, **source)[SCIFACT]
        asymmetric = scores(
            model, [scifact], work, f"{slug}-scifact-asym", progress=False, documents_by=args.model, **source
        )[SCIFACT]
    return {
        "label": label,
        "nine": nine_scores,
        "mean": statistics.fmean(nine_scores.values()),
        "scifact": symmetric,
        "scifact_asym": asymmetric,
    }


def table(rows: list[dict], full: dict) -> list[str]:
    lines = [
        "| encoder | nine-task mean (share of full) | SciFact nDCG@10 symmetric (share) | asymmetric (share) |",
        "|---|---|---|---|",
    ]
    for one in rows:
        lines.append(
            f"| {one['label']} | {one['mean']:.4f} ({one['mean'] / full['mean']:.1%}) | "
            f"{share(one['scifact'], full['scifact'])} | {share(one['scifact_asym'], full['scifact'])} |"
        )
    tasks = list(full["nine"])
    lines += ["", "| encoder | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    lines += [f"| {one['label']} | " + " | ".join(f"{one['nine'][t]:.4f}" for t in tasks) + " |" for one in rows]
    return lines


def share(score: float | None, full: float | None) -> str:
    return "not run" if score is None else f"{score:.4f} ({score / full:.1%})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--layers", default="", help="comma-separated plain cuts to score beside the full model")
    parser.add_argument("--healed", action="append", default=[], help="LABEL=EXPORT_DIR (split at the last =)")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--max-rows", type=int, default=300)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument(
        "--no-full-scifact", action="store_true", help="the nine tasks only (SciFact's full corpus is the long part)"
    )
    args = parser.parse_args()
    nine = task_folders(args.data, args.work, args.max_rows, TASKS)
    scifact = str(args.data / SCIFACT)
    from layerpick.core.models import peek_num_layers

    last = peek_num_layers(args.model)
    full = row(f"{args.model} (all {last} layers)", args.model, args, args.work, nine, scifact, layers=[last])
    rows = [full]
    for layer in (int(k) for k in args.layers.split(",") if k.strip()):
        rows.append(row(f"plain cut K={layer}", args.model, args, args.work, nine, scifact, layers=[layer]))
    for given in args.healed:
        label, _, folder = given.rpartition("=")
        rows.append(row(label, None, args, args.work, nine, scifact, exported_dir=Path(folder)))
    header = [
        f"# Healed cuts of {args.model}: nine tasks and SciFact's full corpus",
        "",
        "Command: `python benchmarks/heal_evidence.py " + shlex.join(sys.argv[1:]) + "`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Nine tasks: {', '.join(TASKS)}, each subsampled "
        f"to {args.max_rows} test rows as in rule_evidence.py; SciFact: its full corpus (5,183 documents, 300 "
        "queries). Asymmetric: queries by the row's encoder, documents by the full model (`--documents-by`).",
        "",
    ]
    args.output.write_text("\n".join(header + table(rows, full)) + "\n", encoding="utf-8")
    print(args.output.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
