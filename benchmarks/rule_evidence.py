"""Which selection rule finds good layers? Every metric and rule against MTEB task scores at every layer.

For each model: `run_select` (all six metrics, every layer, embedded calibration set) and `run_validation`
(every layer, every task folder, MTEB's own evaluators, one forward pass per unique text). Then for every
rule: its pick, the pick's mean task score, the last layer's, the best layer's, and the share of the
best-vs-last gap the rule captures ((pick - last) / (best - last); 1 = found the best, 0 = no better than
the last layer, negative = worse). Large task folders can be subsampled deterministically (--max-rows); the
folder keeps its MTEB task name, so the protocol and main score stay MTEB's.

    python benchmarks/rule_evidence.py --models minilm-l6,smollm2-135m,gemma3-270m \
        --data ../shared/data --output benchmarks/results/rule_evidence.md
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
from pathlib import Path

from scipy.stats import spearmanr

from layerpick.core.collect import CollectConfig
from layerpick.selection.config import SelectConfig
from layerpick.selection.job import run_select
from layerpick.selection.rules import choose_layer, parse_rule
from layerpick.validation.config import ValidateConfig
from layerpick.validation.run import run_validation

METRICS = ["prompt-entropy", "dataset-entropy", "dime", "infonce", "lidar", "curvature"]
ENSEMBLES = [
    "rank:min-prompt-entropy,min-dataset-entropy,min-dime",  # the paper's three "minimum" metrics
    "rank:min-infonce,max-lidar",
    "rank:min-prompt-entropy,min-infonce,max-lidar",
]
TASKS = [
    "STSBenchmark",
    "SICK-R",
    "BIOSSES",
    "Banking77Classification",
    "EmotionClassification",
    "AmazonCounterfactualClassification",
    "TwitterSemEval2015",
    "SciFact",
    "Banking77Clustering_derived",
]


def all_rules() -> list[str]:
    return [f"{d}-{m}" for m in METRICS for d in ("min", "max")] + ENSEMBLES


def subsample_folder(source: Path, target: Path, max_rows: int, seed: int = 0) -> Path:
    """Copy a task folder, keeping at most `max_rows` test rows (4x for train) of its JSONL files (seeded)."""
    target.mkdir(parents=True, exist_ok=True)
    for file in source.iterdir():
        if file.suffix == ".jsonl" and file.stem in ("test", "train", "validation"):
            rows = file.read_text(encoding="utf-8").splitlines()
            cap = max_rows * 4 if file.stem == "train" else max_rows  # MTEB undersamples train per label itself
            if len(rows) > cap:
                keep = sorted(random.Random(seed).sample(range(len(rows)), cap))
                rows = [rows[i] for i in keep]
            (target / file.name).write_text("\n".join(rows) + "\n", encoding="utf-8")
        elif file.is_file():
            shutil.copy(file, target / file.name)
    return target


def subsample_retrieval(source: Path, target: Path, max_rows: int, seed: int = 0) -> Path:
    """Keep max_rows // 3 queries that have judgements, every judged document of theirs, and random other
    documents up to max_rows in all."""
    target.mkdir(parents=True, exist_ok=True)
    qrels = [line.split("\t") for line in (source / "qrels.tsv").read_text().splitlines()]
    header, judged = qrels[0], qrels[1:]
    queries = sorted({q for q, _, _ in judged})
    keep_queries = set(random.Random(seed).sample(queries, min(len(queries), max(max_rows // 3, 1))))
    kept_judged = [row for row in judged if row[0] in keep_queries]
    relevant = {doc for _, doc, _ in kept_judged}
    corpus = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    others = [i for i, line in enumerate(corpus) if json.loads(line)["_id"] not in relevant]
    extra = set(random.Random(seed).sample(others, max(max_rows - len(relevant), 0)))
    kept_corpus = [line for i, line in enumerate(corpus) if i in extra or json.loads(line)["_id"] in relevant]
    lines = (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    kept_lines = [line for line in lines if json.loads(line)["_id"] in keep_queries]
    (target / "queries.jsonl").write_text("\n".join(kept_lines) + "\n", encoding="utf-8")
    (target / "corpus.jsonl").write_text("\n".join(kept_corpus) + "\n", encoding="utf-8")
    (target / "qrels.tsv").write_text("\n".join("\t".join(r) for r in [header, *kept_judged]) + "\n")
    return target


def subsample_clustering(source: Path, target: Path, max_rows: int, seed: int = 0) -> Path:
    """Keep max_rows sentences (seeded) of every cluster set."""
    target.mkdir(parents=True, exist_ok=True)
    out = []
    for line in (source / "test.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        keep = sorted(random.Random(seed).sample(range(len(row["sentences"])), min(max_rows, len(row["sentences"]))))
        out.append(
            json.dumps(
                {"sentences": [row["sentences"][i] for i in keep], "labels": [row["labels"][i] for i in keep]},
                ensure_ascii=False,
            )
        )
    (target / "test.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return target


def task_folders(data: Path, work: Path, max_rows: int | None, names: list[str] = TASKS) -> list[str]:
    folders = []
    for name in names:
        folder = data / name
        if max_rows:
            subsample = {"SciFact": subsample_retrieval, "Banking77Clustering_derived": subsample_clustering}
            folder = subsample.get(name, subsample_folder)(folder, work / "tasks" / name, max_rows)
        folders.append(str(folder))
    return folders


def evaluate_model(model: str, folders: list[str], work: Path, limit: int | None, max_length: int) -> dict:
    select = run_select(model, config=SelectConfig(limit=limit, collect=CollectConfig(max_length=max_length)))
    (work / f"{_slug(model)}-select.json").write_text(json.dumps(select.to_json(), indent=2))
    validation = run_validation(
        model,
        folders,
        ValidateConfig(layers="all", output_dir=work / _slug(model), max_length=max_length, progress=True),
    )
    return {"select": select.to_json(), "validation": validation.report.to_json()}


def rule_rows(select: dict, mean: list[float | None]) -> list[dict]:
    num = select["num_layers"]
    last = mean[num]
    best_layer = max(range(1, num + 1), key=lambda k: mean[k])
    best = mean[best_layer]
    rows = []
    for rule in all_rules():
        pick = choose_layer(select["scores"], parse_rule(rule)).layer
        gap = best - last
        share = (mean[pick] - last) / gap if gap > 1e-9 else float("nan")
        rows.append(
            {
                "rule": rule,
                "pick": pick,
                "pick_score": mean[pick],
                "last": last,
                "best_layer": best_layer,
                "best": best,
                "share": share,
                "regret": best - mean[pick],
            }
        )
    return rows


def correlations(select: dict, mean: list[float | None]) -> dict[str, float]:
    layers = range(1, select["num_layers"] + 1)
    out = {}
    for metric in METRICS:
        values = select["scores"][metric]
        pairs = [(values[k], mean[k]) for k in layers if values[k] is not None and mean[k] is not None]
        out[metric] = float(spearmanr([p[0] for p in pairs], [p[1] for p in pairs]).statistic)
    return out


def render(results: dict[str, dict], args) -> str:
    lines = [
        "# Rule evidence: which unsupervised rule finds the best layer?",
        "",
        f"Command: `python benchmarks/rule_evidence.py --models {args.models} --data {args.data} "
        f"--max-rows {args.max_rows} --limit {args.limit} --max-length {args.max_length} --tasks {args.tasks}`",
        "",
    ]
    shares: dict[str, list[float]] = {}
    for model, result in results.items():
        mean = result["validation"]["mean_by_layer"]
        select = result["select"]
        rows = rule_rows(select, mean)
        lines += [
            f"## {model} ({select['num_layers']} layers; {'; '.join(select['notes'])})",
            "",
            "Mean main score over the tasks, by layer: "
            + ", ".join(f"{k}: {v:.4f}" for k, v in enumerate(mean) if v is not None),
            "",
            "| rule | pick | pick's mean | last layer's | best layer (score) | share of gap captured | "
            "regret (best - pick) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            shares.setdefault(row["rule"], []).append(row["regret"])
            share = "n/a (last is best)" if row["share"] != row["share"] else f"{row['share']:.2f}"
            lines.append(
                f"| `{row['rule']}` | {row['pick']} | {row['pick_score']:.4f} | {row['last']:.4f} | "
                f"{row['best_layer']} ({row['best']:.4f}) | {share} | {row['regret']:.4f} |"
            )
        corr = correlations(select, mean)
        lines += [
            "",
            "Spearman correlation across layers 1..L between each metric and the mean task score: "
            + ", ".join(f"{m} {c:+.2f}" for m, c in corr.items()),
            "",
        ]
    lines += [
        "## Across models (regret = best layer's mean score - the pick's; lower is better)",
        "",
        "| rule | mean regret | worst regret |",
        "|---|---|---|",
    ]
    ranked = sorted(shares.items(), key=lambda item: statistics.fmean(item[1]))
    for rule, values in ranked:
        lines.append(f"| `{rule}` | {statistics.fmean(values):.4f} | {max(values):.4f} |")
    return "\n".join(lines) + "\n"


def _slug(model: str) -> str:
    return Path(model.rstrip("/")).name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm-l6,smollm2-135m,gemma3-270m")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-rule-evidence"))
    parser.add_argument("--max-rows", type=int, default=2000, help="0 keeps every row")
    parser.add_argument("--limit", type=int, default=None, help="calibration texts for select")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task folder names")
    parser.add_argument("--resume", type=Path, help="results.json of an earlier run to include")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    folders = task_folders(args.data, args.work, args.max_rows or None, args.tasks.split(","))
    results = json.loads(args.resume.read_text()) if args.resume else {}
    for model in args.models.split(","):
        results[model] = evaluate_model(model, folders, args.work, args.limit, args.max_length)
        (args.work / "results.json").write_text(json.dumps(results, indent=2, default=str))
        text = render(results, args)
        if args.output:
            args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
