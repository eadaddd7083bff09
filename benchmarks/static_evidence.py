"""Static distillations (model2vec, `layerpick export --format static`) of several layers against cuts, nine tasks.

For each model: the layers to distil (default: the label-free rule's pick, the validated best layer, a shallow
layer round(L/5) and the last layer L), each exported as `layerpick export MODEL --layer K --format static`
does (`export_model`, default PCA dimension min(256, hidden)), then validated as `layerpick validate --exported
DIR` does (`run_validation` with `exported_dir`) on the nine shared task folders subsampled as
`benchmarks/rule_evidence.py` does (at most 300 test rows). The cuts' scores are not recomputed: they are read
from the results.json that `benchmarks/transforms.py` wrote on the same subsample (no transform, mean pooling,
max length 128), and so are the rule's picks (its `select` entry). Exports and validations already under --work
are reused, so an interrupted run continues where it stopped. No throughput is measured here.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/static_evidence.py \
        --models minilm-l6,smollm2-135m --work /tmp/layerpick-static
    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/static_evidence.py \
        --models gemma3-270m --layers 13,4 --work /tmp/layerpick-static
    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/static_evidence.py --render \
        --models minilm-l6,smollm2-135m,gemma3-270m --work /tmp/layerpick-static --output tables.md

--render prints (and --output writes) the tables only; `benchmarks/results/static.md` is the reading, written by
hand, above those tables.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from benchmarks.rule_evidence import TASKS, task_folders
from benchmarks.transforms import TASK_TYPES

# the cuts' scores at every layer on the same subsample, written by benchmarks/transforms.py (see transforms.md)
CUT_RESULTS = {
    "smollm2-135m": Path("/tmp/layerpick-transforms/results.json"),
    "gemma3-270m": Path("/tmp/lt-gemma/results.json"),
    "minilm-l6": Path("/tmp/lt-gemma/results.json"),
}
SHORT = {
    "STSBenchmark": "STSB",
    "SICK-R": "SICK-R",
    "BIOSSES": "BIOSSES",
    "Banking77Classification": "Bank77C",
    "EmotionClassification": "Emotion",
    "AmazonCounterfactualClassification": "AmazonCF",
    "TwitterSemEval2015": "Twitter",
    "SciFact": "SciFact",
    "Banking77Clustering_derived": "Bank77Clu",
}
BEGAN = time.perf_counter()


def say(text: str) -> None:
    print(f"[{time.perf_counter() - BEGAN:7.0f} s] {text}", flush=True)


def cuts(model: str) -> dict:
    """The cut model's scores at every layer (no transform) and the rule's pick, from transforms.py's results."""
    entry = json.loads(CUT_RESULTS[model].read_text())[model]
    none = entry["calibration"]["none"]
    return {
        "mean": none["mean_by_layer"],
        "tasks": none["tasks"],
        "pick": entry["select"]["none"]["by_variant"]["none"],
    }


def roles(model: str) -> dict[int, list[str]]:
    """layer -> why it is distilled: the rule's pick, the validated best (layers >= 1), shallow (L/5), last."""
    cut = cuts(model)
    last = len(cut["mean"]) - 1
    best = max(range(1, last + 1), key=lambda k: (cut["mean"][k], -k))
    found: dict[int, list[str]] = {}
    for role, layer in (
        ("rule pick", cut["pick"]),
        ("validated best", best),
        ("shallow", max(1, round(last / 5))),
        ("last", last),
    ):
        found.setdefault(layer, []).append(role)
    return found


def export(model: str, layer: int, work: Path) -> Path:
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    target = work / "exports" / model / f"layer-{layer}"
    if (target / "layerpick.json").is_file():
        return target
    say(f"{model} layer {layer}: distilling")
    export_model(model, layer, target, ExportConfig(format="static", progress=False))
    static = json.loads((target / "layerpick.json").read_text())["static"]
    say(f"{model} layer {layer}: distilled in {static['distill_seconds']:.0f} s")
    return target


def validate(model: str, layer: int, exported: Path, folders: list[str], work: Path) -> dict:
    from layerpick.validation.config import ValidateConfig
    from layerpick.validation.run import run_validation

    output = work / "validate" / f"{model}-layer-{layer}"
    if not (output / "validation.json").is_file():
        say(f"{model} layer {layer}: validating the static export")
        run_validation(
            None,
            folders,
            ValidateConfig(exported_dir=exported, output_dir=output, store_dir=work / "store", progress=False),
        )
        say(f"{model} layer {layer}: validated")
    return json.loads((output / "validation.json").read_text())


def measure(model: str, layers: list[int], folders: list[str], work: Path) -> None:
    for layer in layers:
        exported = export(model, layer, work)
        validate(model, layer, exported, folders, work)


def static_row(model: str, layer: int, work: Path) -> dict | None:
    """Scores, size, distillation seconds and cosine to the cut of one static export, None if not measured."""
    meta_file = work / "exports" / model / f"layer-{layer}" / "layerpick.json"
    validation = work / "validate" / f"{model}-layer-{layer}" / "validation.json"
    if not (meta_file.is_file() and validation.is_file()):
        return None
    static = json.loads(meta_file.read_text())["static"]
    data = json.loads(validation.read_text())
    tasks = {name: _at(task["main_score_by_layer"], layer) for name, task in data["tasks"].items()}
    return {
        "tasks": tasks,
        "mb": static["bytes"] / 1e6,
        "seconds": static["distill_seconds"],
        "cosine": static["parity"]["mean_cosine"],
        "dims": static["pca_dims"],
    }


def _at(scores, layer: int):
    return scores.get(str(layer)) if isinstance(scores, dict) else scores[layer]


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _f(value, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def score_cells(tasks: dict) -> list[str]:
    return (
        [_f(tasks.get(name)) for name in TASKS]
        + [_f(_mean([tasks.get(n) for n in TASKS]))]
        + [_f(_mean([tasks.get(n) for n in names])) for names in TASK_TYPES.values()]
    )


def model_section(model: str, work: Path) -> list[str]:
    cut = cuts(model)
    last = len(cut["mean"]) - 1
    why = roles(model)
    measured = sorted({int(p.name.rsplit("-", 1)[-1]) for p in (work / "validate").glob(f"{model}-layer-*")})
    header = (
        "| embedder | layer (role) | "
        + " | ".join(SHORT[name] for name in TASKS)
        + " | mean | "
        + " | ".join(TASK_TYPES)
        + " | table MB | distil s | cosine to cut |"
    )
    lines = [f"### {model} ({last} layers)", "", header, "|---|---|" + "---|" * (len(TASKS) + len(TASK_TYPES) + 4)]
    for layer in sorted(set(why) | set(measured)):
        role = ", ".join(why.get(layer, ["extra"]))
        row = static_row(model, layer, work)
        if row is None:
            lines.append(f"| static | {layer} ({role}) | not measured in this run |")
        else:
            lines.append(
                f"| static | {layer} ({role}) | "
                + " | ".join(score_cells(row["tasks"]))
                + f" | {row['mb']:.1f} | {row['seconds']:.0f} | {row['cosine']:.3f} |"
            )
        if layer != last:  # the cut at L is the full model's row
            cut_tasks = {name: scores[layer] for name, scores in cut["tasks"].items()}
            lines.append(f"| cut | {layer} | " + " | ".join(score_cells(cut_tasks)) + " | | | |")
    full = {name: scores[last] for name, scores in cut["tasks"].items()}
    lines.append(f"| full model | {last} | " + " | ".join(score_cells(full)) + " | | | |")
    return lines + [""]


def summary(models: list[str], work: Path) -> list[str]:
    """One line per static export: its mean beside the cut's at that layer and the full model's."""
    lines = [
        "| model | layer (role) | static mean | cut mean | static - cut | full model | static / full | "
        "table MB | distil s | cosine to cut |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model in models:
        cut, why = cuts(model), roles(model)
        full = cut["mean"][-1]
        for path in sorted((work / "validate").glob(f"{model}-layer-*"), key=lambda p: int(p.name.rsplit("-", 1)[-1])):
            layer = int(path.name.rsplit("-", 1)[-1])
            row = static_row(model, layer, work)
            if row is None:
                continue
            mean = _mean([row["tasks"].get(n) for n in TASKS])
            lines.append(
                f"| {model} | {layer} ({', '.join(why.get(layer, ['extra']))}) | {_f(mean)} | "
                f"{_f(cut['mean'][layer])} | {mean - cut['mean'][layer]:+.4f} | {_f(full)} | "
                f"{mean / full:.2f} | {row['mb']:.1f} | {row['seconds']:.0f} | {row['cosine']:.3f} |"
            )
    return lines + [""]


def render(models: list[str], work: Path) -> str:
    lines = summary(models, work)
    for model in models:
        if any((work / "validate").glob(f"{model}-layer-*")):
            lines += model_section(model, work)
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm-l6,smollm2-135m,gemma3-270m")
    parser.add_argument(
        "--layers", default="", help="comma-separated layers instead of the four roles (one model only)"
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-static"))
    parser.add_argument("--max-rows", type=int, default=300)
    parser.add_argument("--render", action="store_true", help="only render what --work holds")
    parser.add_argument("--output", type=Path, help="write the rendered tables here too")
    args = parser.parse_args()
    models = args.models.split(",")
    if not args.render:
        os.makedirs(args.work, exist_ok=True)
        folders = task_folders(args.data, args.work, args.max_rows, TASKS)
        for model in models:
            layers = [int(k) for k in args.layers.split(",")] if args.layers else sorted(roles(model))
            say(f"{model}: layers {layers} ({roles(model)})")
            measure(model, layers, folders, args.work)
    text = render(models, args.work)
    if args.output:
        args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
