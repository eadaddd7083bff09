"""The quality-speed frontier of each model, and what each way of choosing a layer gets on it.

For each model: `run_select` (the default rule, every layer, the embedded calibration set) and
`run_validation` (every layer, the shared task folders, subsampled as benchmarks/rule_evidence.py does), the
frontier of validated mean score against ideal speed-up (`layerpick.core.cost`), then the layer that each
way of choosing takes: the unsupervised rule `min-infonce`, `--max-loss 0.01` and `--max-loss 0.02` (from
the validation), `--min-speedup 3` (the rule within a budget), and the cost-aware candidates for a new
default (the rule within budgets of 1.5x, 2x, 3x; the rule with tolerances 0.05 and 0.1). Every picked layer
is benched against the full model in one run per model (`layerpick.benchmark.cuts`, interleaved, batch 1 and
32). Across models: each candidate's mean regret (best layer's mean score minus the pick's) and mean ideal
speed-up, and whether one is within 0.005 of min-infonce's regret while picking faster layers.

    python benchmarks/frontier_evidence.py --models smollm2-135m,gemma3-270m,minilm-l6 --data ../shared/data \
        --max-rows 300 --limit 256 --max-length 128 --output benchmarks/results/frontier.md

The validation half is the same protocol as benchmarks/rule_evidence.py (same task folders, subsampling,
length, every layer), whose committed result prints each model's mean score by layer. `--validation-from
benchmarks/results/rule_evidence.md` takes those means instead of validating again (hours on 2 cores); the
models named in `--revalidate` are validated anyway and the largest difference from the committed means is
reported, which checks that the code has not changed the scores since.

A tiny check that the script works (minutes, not hours; its numbers mean nothing):

    python benchmarks/frontier_evidence.py --models minilm-l6 --tasks STSBenchmark,BIOSSES --max-rows 20 \
        --limit 16 --bench-texts 4 --bench-repeats 1 --work /tmp/frontier-tiny
"""

from __future__ import annotations

import argparse
import re
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rule_evidence import TASKS, task_folders  # noqa: E402  (the same subsampling as the rule evidence)

from layerpick.benchmark.config import BenchConfig  # noqa: E402
from layerpick.benchmark.cuts import CutsPlan, run_cuts  # noqa: E402
from layerpick.core.collect import CollectConfig  # noqa: E402
from layerpick.core.cost import LayerCosts  # noqa: E402
from layerpick.frontier.choice import choose_validated, frontier  # noqa: E402
from layerpick.selection.config import SelectConfig  # noqa: E402
from layerpick.selection.job import run_select
from layerpick.selection.rules import DEFAULT_RULE, choose_layer, parse_rule  # noqa: E402
from layerpick.validation.config import ValidateConfig  # noqa: E402
from layerpick.validation.run import run_validation  # noqa: E402

CANDIDATES = ["--min-speedup 1.5", "--min-speedup 2", "--min-speedup 3", "--tolerance 0.05", "--tolerance 0.1"]
REGRET_MARGIN = 0.005
BATCHES = (1, 32)


def evaluate(model: str, folders: list[str], work: Path, args) -> dict:
    """Select and validate every layer of `model` (or take the validated means from `--validation-from`)."""
    config = SelectConfig(limit=args.limit, collect=CollectConfig(max_length=args.max_length, progress=False))
    select = run_select(model, config=config)
    committed = committed_means(args.validation_from, model) if args.validation_from else None
    if committed is not None and model not in args.revalidate.split(","):
        return {
            "select": select.to_json(),
            "validation": {"mean_by_layer": committed, "source": str(args.validation_from)},
        }
    validation = run_validation(
        model,
        folders,
        ValidateConfig(layers="all", output_dir=work / _slug(model), max_length=args.max_length, progress=True),
    ).report.to_json()
    if committed is not None:
        validation["committed_max_abs_diff"] = max(
            abs(round(a, 4) - b) for a, b in zip(validation["mean_by_layer"], committed)
        )
    return {"select": select.to_json(), "validation": validation}


def committed_means(path: Path, model: str) -> list[float] | None:
    """The mean score by layer that rule_evidence.md printed for `model` (4 decimals), or None."""
    section = re.search(
        rf"^## {re.escape(model)} \(.*?^Mean main score over the tasks, by layer: ([^\n]*)$",
        path.read_text(),
        re.M | re.S,
    )
    if section is None:
        return None
    pairs = [item.split(": ") for item in section.group(1).split(", ")]
    return [float(value) for _, value in sorted(pairs, key=lambda pair: int(pair[0]))]


def picks(select: dict, means: list[float | None]) -> dict[str, int]:
    """The layer each way of choosing takes (the unsupervised ones from the select scores)."""
    rule, speedup = parse_rule(DEFAULT_RULE), select["cost"]["ideal_speedup"]
    layers = range(select["num_layers"] + 1)
    out = {"min-infonce": choose_layer(select["scores"], rule).layer}
    for loss in (0.01, 0.02):
        out[f"--max-loss {loss:g}"] = choose_validated(means, layers, loss).layer
    for budget in (1.5, 2, 3):
        out[f"--min-speedup {budget:g}"] = choose_layer(
            select["scores"], rule, speedup=speedup, min_speedup=budget
        ).layer
    for tolerance in (0.05, 0.1):
        out[f"--tolerance {tolerance:g}"] = choose_layer(select["scores"], rule, tolerance=tolerance).layer
    return out


def measure(model: str, layers: list[int], num_layers: int, args) -> dict:
    """Measured speed-up of every picked layer at batch 1 and 32, side by side in one run."""
    cuts = sorted({k for k in layers if 1 <= k < num_layers})
    if not cuts:
        return {}
    plan = CutsPlan(model, None, num_layers, cuts, None, None)
    config = BenchConfig(batch_sizes=BATCHES, texts=args.bench_texts, repeats=args.bench_repeats, memory=False)
    result = run_cuts(plan, config, progress=True)
    return {str(row.layer): {**measured_entry(result, row.layer)} for row in result.rows}


def measured_entry(result, layer: int) -> dict:
    return {f"batch {size}": result.row(layer, size).measured_speedup for size in BATCHES}


def model_section(model: str, entry: dict) -> list[str]:
    select, validation = entry["select"], entry["validation"]
    means, num = validation["mean_by_layer"], select["num_layers"]
    costs = LayerCosts.from_json(select["cost"])
    speedup = costs.ideal_speedup
    on = frontier(means, speedup, range(1, num + 1))
    best = choose_validated(means, range(num + 1))
    lines = [
        f"## {model} ({num} layers; {'; '.join(select['notes']) or 'float weights'})",
        "",
        f"Best layer {best.layer} ({best.best_score:.4f}); last layer {num} ({means[num]:.4f}). "
        f"{provenance(validation)}",
        "",
        "Frontier (no other layer has both a higher validated mean score and a higher ideal speed-up):",
        "",
        "| layer | mean score | loss vs best | ideal speed-up | params kept |",
        "|---|---|---|---|---|",
    ]
    for k in on:
        lines.append(
            f"| {k} | {means[k]:.4f} | {best.best_score - means[k]:.4f} | {speedup[k]:.2f}x | "
            f"{costs.params_kept[k] / costs.params_full:.0%} |"
        )
    lines += [
        "",
        "| way of choosing | layer | mean score | regret | ideal speed-up | measured batch 1 | measured batch 32 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, k in entry["picks"].items():
        measured = entry["measured"].get(str(k), {})
        cells = [_x(measured.get(f"batch {size}")) if k < num else "1.00x" for size in BATCHES]
        lines.append(
            f"| `{name}` | {k} | {means[k]:.4f} | {best.best_score - means[k]:.4f} | {speedup[k]:.2f}x | "
            f"{cells[0]} | {cells[1]} |"
        )
    return lines + [""]


def provenance(validation: dict) -> str:
    if "source" in validation:
        return f"Validated means: reused from `{validation['source']}` (the same protocol)."
    if "committed_max_abs_diff" in validation:
        return (
            "Validated again in this run; largest difference from the means committed in the rule evidence: "
            f"{validation['committed_max_abs_diff']:.4f}."
        )
    return "Validated in this run."


def summary(results: dict) -> list[str]:
    """Mean regret and mean ideal speed-up of every way of choosing across the models, and the verdict."""
    rows = {}
    for entry in results.values():
        means, speedup = entry["validation"]["mean_by_layer"], entry["select"]["cost"]["ideal_speedup"]
        best = max(v for v in means[1:] if v is not None)
        for name, k in entry["picks"].items():
            rows.setdefault(name, []).append((best - means[k], speedup[k]))
    lines = [
        "## Across models",
        "",
        "| way of choosing | mean regret | worst regret | mean ideal speed-up |",
        "|---|---|---|---|",
    ]
    for name, values in rows.items():
        lines.append(
            f"| `{name}` | {statistics.fmean(v[0] for v in values):.4f} | {max(v[0] for v in values):.4f} | "
            f"{statistics.fmean(v[1] for v in values):.2f}x |"
        )
    base_regret = statistics.fmean(v[0] for v in rows["min-infonce"])
    base_speed = statistics.fmean(v[1] for v in rows["min-infonce"])
    qualified = [
        name
        for name in CANDIDATES
        if name in rows
        and statistics.fmean(v[0] for v in rows[name]) <= base_regret + REGRET_MARGIN
        and statistics.fmean(v[1] for v in rows[name]) > base_speed
        and all(s >= b for (_, s), (_, b) in zip(rows[name], rows["min-infonce"]))
    ]
    lines += [
        "",
        f"Cost-aware candidates (no label needed) whose mean regret is within {REGRET_MARGIN} of "
        f"`min-infonce`'s ({base_regret:.4f}) while picking layers at least as fast on every model and "
        f"faster on average: {', '.join(f'`{q}`' for q in qualified) or 'none'}.",
    ]
    return lines


def render(results: dict, args) -> str:
    lines = [
        "# The quality-speed frontier, and what each way of choosing gets on it",
        "",
        f"Command: `python benchmarks/frontier_evidence.py --models {args.models} --data {args.data} "
        f"--max-rows {args.max_rows} --limit {args.limit} --max-length {args.max_length} --tasks {args.tasks} "
        f"--bench-texts {args.bench_texts} --bench-repeats {args.bench_repeats}"
        + (f" --validation-from {args.validation_from} --revalidate {args.revalidate}" if args.validation_from else "")
        + "`",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end "
        f"{' '.join(Path('/proc/loadavg').read_text().split()[:3]) if Path('/proc/loadavg').exists() else 'n/a'}.",
        "",
        "- Select: the embedded calibration set, a seeded sample of "
        f"{args.limit} texts, texts truncated at {args.max_length} tokens, the default rule and views.",
        f"- Validate: every layer on the task folders ({args.tasks}), each subsampled deterministically to at "
        f"most {args.max_rows} test rows as in benchmarks/rule_evidence.py (4x for train; retrieval: a third "
        "of the rows as judged queries with their documents; clustering: that many sentences per set).",
        "- Ideal speed-up: `layerpick.core.cost` (compute per token, attention at 128 tokens). Measured: each "
        f"picked layer against the full model in one process, interleaved, {args.bench_texts} texts, "
        f"{args.bench_repeats} repeats, throughput ratio.",
        "- Regret: the best layer's mean score minus the pick's.",
        "",
    ]
    for model, entry in results.items():
        lines += model_section(model, entry)
    return "\n".join(lines + summary(results)) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m,minilm-l6")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-frontier-evidence"))
    parser.add_argument("--max-rows", type=int, default=300, help="0 keeps every row")
    parser.add_argument("--limit", type=int, default=256, help="calibration texts for select")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task folder names")
    parser.add_argument("--bench-texts", type=int, default=64)
    parser.add_argument("--bench-repeats", type=int, default=3)
    parser.add_argument("--validation-from", type=Path, help="rule_evidence.md whose mean score by layer to reuse")
    parser.add_argument("--revalidate", default="", help="models validated anyway, compared with the reused means")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    folders = task_folders(args.data, args.work, args.max_rows or None, args.tasks.split(","))
    store = args.work / "results.json"
    results = json.loads(store.read_text()) if store.is_file() else {}
    for model in args.models.split(","):
        if model not in results:  # an interrupted run continues where it stopped
            results[model] = evaluate(model, folders, args.work, args)
            store.write_text(json.dumps(results, indent=2, default=str))
        entry = results[model]
        if "measured" not in entry:
            entry["picks"] = picks(entry["select"], entry["validation"]["mean_by_layer"])
            entry["measured"] = measure(model, list(entry["picks"].values()), entry["select"]["num_layers"], args)
            store.write_text(json.dumps(results, indent=2, default=str))
    text = render({m: results[m] for m in args.models.split(",")}, args)
    if args.output:
        args.output.write_text(text)
    print(text)


def _slug(model: str) -> str:
    return Path(model.rstrip("/")).name


def _x(value) -> str:
    return "–" if value is None else f"{value:.2f}x"


if __name__ == "__main__":
    main()
