"""Post-pooling transforms (none, center, whiten-D, abtt-K) at every layer, on the nine shared tasks.

For each model and template: `run_validation` with every transform, fitted on the embedded calibration set
(all 600 texts), every layer, the nine task folders subsampled as `benchmarks/rule_evidence.py` does; then
(`--task-fit`) the same transforms fitted on each task's own texts (the task folder as `--fit-texts`); then
(`--select`) `run_select` with every transform, so that the label-free rule's pick under each transform can be
scored against the task means. Every step's results are kept by mteb's result cache and the representation
store under --work, so an interrupted run continues where it stopped.

    PYTHONPATH=. python benchmarks/transforms.py --models smollm2-135m,gemma3-270m,minilm-l6 \
        --transforms none,center,whiten-128,whiten-256 --prompts none --work /tmp/layerpick-transforms
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from benchmarks.rule_evidence import TASKS, task_folders
from layerpick.core.collect import CollectConfig
from layerpick.selection.job import SelectConfig, run_select
from layerpick.validation.config import ValidateConfig
from layerpick.validation.run import run_validation


def validate(model: str, folders: list[str], prompt: str, transforms: str, fit: str | None, work: Path,
             args) -> dict:
    tag = f"{model}-{prompt}-{Path(fit).name if fit else 'calibration'}"
    config = ValidateConfig(layers="all", output_dir=work / "validate" / tag, max_length=args.max_length,
                            prompt=prompt, transform=transforms, fit_texts=fit, store_dir=work / "store",
                            progress=False)
    began = time.perf_counter()
    data = run_validation(model, folders, config).data
    print(f"{tag}: {time.perf_counter() - began:.0f} s", flush=True)
    return data.get("by_prompt") or {_variant(data): {"mean_by_layer": data["mean_by_layer"],
                                                     "tasks": {t: v["main_score_by_layer"]
                                                               for t, v in data["tasks"].items()}}}


def _variant(data: dict) -> str:
    prompt = (data.get("prompt") or {}).get("name", "none")
    transform = (data.get("transform") or {}).get("name", "none")
    return prompt if transform == "none" else f"{prompt}+{transform}"


def select(model: str, prompt: str, transform: str, args) -> dict:
    config = SelectConfig(limit=args.limit, metrics="infonce", prompt=prompt, transform=transform,
                          collect=CollectConfig(max_length=args.max_length, progress=False))
    report = run_select(model, config=config)
    return {"selected_layer": report.selected_layer, "infonce": report.scores["infonce"],
            "transform": report.transform, "timings": report.timings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m,minilm-l6")
    parser.add_argument("--prompts", default="none")
    parser.add_argument("--transforms", default="none,center,whiten-128,whiten-256")
    parser.add_argument("--task-fit", default="", help="transforms to fit on each task's own texts as well")
    parser.add_argument("--select", action="store_true", help="the rule's pick under every transform")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-transforms"))
    parser.add_argument("--max-rows", type=int, default=300)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--limit", type=int, default=256)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    folders = task_folders(args.data, args.work, args.max_rows, TASKS)
    results_path = args.work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for model in args.models.split(","):
        entry = results.setdefault(model, {"calibration": {}, "task": {}, "select": {}})
        for prompt in args.prompts.split(","):
            entry["calibration"].update(validate(model, folders, prompt, args.transforms, None, args.work, args))
            save(results, results_path)
            if args.task_fit:
                for folder in folders:
                    scores = validate(model, [folder], prompt, args.task_fit, folder, args.work, args)
                    for variant, one in scores.items():
                        entry["task"].setdefault(variant, {}).update(one.get("tasks", {}))
                    save(results, results_path)
            if args.select:
                for transform in args.transforms.split(","):
                    entry["select"][f"{prompt}+{transform}"] = select(model, prompt, transform, args)
                    save(results, results_path)
    print(f"load average after: {os.getloadavg()}", flush=True)


def save(results: dict, path: Path) -> None:
    path.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
