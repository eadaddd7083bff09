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
from layerpick.selection.config import SelectConfig
from layerpick.selection.job import run_select
from layerpick.selection.report import chosen_variant
from layerpick.selection.rules import DEFAULT_RULE, choose_layer, parse_rule
from layerpick.validation.config import ValidateConfig
from layerpick.validation.run import run_validation


def validate(model: str, folders: list[str], prompt: str, transforms: str, fit: str | None, work: Path, args) -> dict:
    suffix = f"+{args.tag}" if args.tag else ""
    tag = f"{model}-{prompt}-calibration{suffix}" if fit is None else f"{model}-{prompt}-{Path(fit).name}-{transforms}"
    output = work / ("validate" if fit is None else "validate-task-fit") / tag
    config = ValidateConfig(
        layers="all",
        output_dir=output,
        max_length=args.max_length,
        prompt=prompt,
        transform=transforms,
        fit_texts=fit,
        store_dir=work / "store",
        progress=False,
    )
    began = time.perf_counter()
    data = run_validation(model, folders, config).report.to_json()
    print(f"{tag}: {time.perf_counter() - began:.0f} s", flush=True)
    return data.get("by_prompt") or {
        _variant(data): {
            "mean_by_layer": data["mean_by_layer"],
            "tasks": {t: v["main_score_by_layer"] for t, v in data["tasks"].items()},
        }
    }


def validate_fitted_on_task(model: str, folder: str, prompt: str, args) -> dict:
    """The --task-fit transforms fitted on the task folder's own texts; those it has too few texts for are left
    out (whiten-256 needs 257), said on stdout."""
    from layerpick.errors import LayerpickError

    kept = []
    for transform in args.task_fit.split(","):
        try:
            kept.append(validate(model, [folder], prompt, transform, folder, args.work, args))
        except LayerpickError as error:
            print(f"{Path(folder).name}: {transform} left out: {error}", flush=True)
    return {variant: one for scores in kept for variant, one in scores.items()}


def _variant(data: dict) -> str:
    prompt = (data.get("prompt") or {}).get("name", "none")
    transform = (data.get("transform") or {}).get("name", "none")
    return prompt if transform == "none" else f"{prompt}+{transform}"


def select(model: str, prompt: str, transforms: str, args) -> dict:
    """One select over every transform (the same passes): each variant's own pick by the default rule, and the
    rule's pick across variants."""
    config = SelectConfig(
        limit=args.limit,
        metrics="infonce",
        prompt=prompt,
        transform=transforms,
        collect=CollectConfig(max_length=args.max_length, progress=False),
    )
    report = run_select(model, config=config)
    entries = report.by_prompt or {chosen_variant(report): {"scores": report.scores}}
    rule = parse_rule(DEFAULT_RULE)
    own = {label: choose_layer(entry["scores"], rule).layer for label, entry in entries.items()}
    return {
        "across": {"variant": chosen_variant(report), "layer": report.selected_layer},
        "by_variant": own,
        "infonce": {label: e["scores"]["infonce"] for label, e in entries.items()},
        "timings": report.timings,
    }


TASK_TYPES = {
    "STS": ["STSBenchmark", "SICK-R", "BIOSSES"],
    "classification": ["Banking77Classification", "EmotionClassification", "AmazonCounterfactualClassification"],
    "pair classification": ["TwitterSemEval2015"],
    "retrieval": ["SciFact"],
    "clustering": ["Banking77Clustering_derived"],
}


def auto_pick(model: str, infonce: dict[str, list], prompt: str = "none") -> dict | None:
    """What the default `auto` picks: min-infonce over layers >= 1 of the variants `auto` scores for `model`."""
    from layerpick.core.fit_texts import expand_auto
    from layerpick.core.models import LoadOptions

    among = [(prompt if t == "none" else f"{prompt}+{t}") for t in expand_auto("auto", model, LoadOptions()).split(",")]
    pairs = [
        (value, k, label)
        for label in among
        for k, value in enumerate(infonce.get(label, []))
        if k >= 1 and value is not None
    ]
    if not pairs:
        return None
    value, layer, label = min(pairs)
    return {"variant": label, "layer": layer, "among": ", ".join(among)}


def read_validations(work_dirs: list[Path]) -> dict[str, dict[str, dict]]:
    """model -> tag -> validation.json, from every work folder's validate/<model>-<prompt>-<fit>/."""
    found: dict[str, dict[str, dict]] = {}
    for work in work_dirs:
        for path in sorted((work / "validate").glob("*/validation.json")):
            data = json.loads(path.read_text())
            found.setdefault(data["model"], {})[path.parent.name] = data
    return found


def variants_of(data: dict) -> dict[str, dict]:
    return data.get("by_prompt") or {
        _variant(data): {
            "mean_by_layer": data["mean_by_layer"],
            "tasks": {t: v["main_score_by_layer"] for t, v in data["tasks"].items()},
        }
    }


def _best(means: list, layers) -> int | None:
    scored = [k for k in layers if k >= 1 and k < len(means) and means[k] is not None]
    return max(scored, key=lambda k: (means[k], -k)) if scored else None


def _type_mean(tasks: dict, names: list[str], layer: int) -> float | None:
    values = [tasks[n][layer] for n in names if n in tasks and tasks[n][layer] is not None]
    return sum(values) / len(values) if values else None


def _f(value, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def model_section(model: str, data: dict, picks: dict[str, int]) -> list[str]:
    speedup = data["cost"]["ideal_speedup"]
    variants = variants_of(data)
    L = data["num_layers"]
    plain = variants.get("none", {}).get("mean_by_layer")
    plain_best = _best(plain, range(L + 1)) if plain else None
    lines = [f"### {model} ({L} layers)", ""]
    if plain_best is not None:
        lines += [
            f"Best untransformed layer: {plain_best} (mean {_f(plain[plain_best])}, ideal speed-up "
            f"{speedup[plain_best]:.2f}x).",
            "",
        ]
    lines += [
        "| variant | best layer (mean, ideal speed-up) | best layer at >= 3x | rule pick (mean, speed-up) | "
        "rule regret vs best of all | " + " | ".join(TASK_TYPES) + " (at best layer) |",
        "|---|---|---|---|---|" + "---|" * len(TASK_TYPES),
    ]
    overall = max(
        (
            v["mean_by_layer"][k]
            for v in variants.values()
            for k in range(1, L + 1)
            if v["mean_by_layer"][k] is not None
        ),
        default=None,
    )
    for label, entry in variants.items():
        means = entry["mean_by_layer"]
        best = _best(means, range(L + 1))
        fast = _best(means, [k for k in range(L + 1) if speedup[k] >= 3.0])
        pick = picks.get(label)
        pick_cell = "–" if pick is None else f"{pick} ({_f(means[pick])}, {speedup[pick]:.2f}x)"
        regret = None if pick is None or overall is None or means[pick] is None else overall - means[pick]
        types = [_f(_type_mean(entry["tasks"], names, best)) for names in TASK_TYPES.values()]
        lines.append(
            f"| {label} | {best} ({_f(means[best])}, {speedup[best]:.2f}x) | "
            f"{'–' if fast is None else f'{fast} ({_f(means[fast])}, {speedup[fast]:.2f}x)'} | "
            f"{pick_cell} | {_f(regret)} | " + " | ".join(types) + " |"
        )
    auto = picks.get("auto")
    if auto and auto["variant"] in variants:
        layer, means = auto["layer"], variants[auto["variant"]]["mean_by_layer"]
        plain_pick = picks.get("none")
        lines += [
            "",
            f"**The default (`auto`: {auto['among']}, `min-infonce` across them)** picks {auto['variant']} "
            f"layer {layer}: mean {_f(means[layer])} at an ideal speed-up of {speedup[layer]:.2f}x"
            + (
                f"; without a transform the rule picks layer {plain_pick} ({_f(plain[plain_pick])}, "
                f"{speedup[plain_pick]:.2f}x)"
                if plain_pick is not None and plain
                else ""
            )
            + (
                f"; the best untransformed layer is {plain_best} ({_f(plain[plain_best])})."
                if plain_best is not None
                else "."
            ),
        ]
    across = picks.get("across")
    if across and across["variant"] in variants:
        layer, means = across["layer"], variants[across["variant"]]["mean_by_layer"]
        lines += [
            "",
            f"`min-infonce` across every (transform, layer) pair picks {across['variant']} layer {layer}: "
            f"mean {_f(means[layer])}, ideal speed-up {speedup[layer]:.2f}x.",
        ]
    lines += [
        "",
        "Mean of the nine main scores by layer:",
        "",
        "| layer | ideal speed-up | " + " | ".join(variants) + " |",
        "|---|---|" + "---|" * len(variants),
    ]
    for k in range(L + 1):
        cells = [_f(v["mean_by_layer"][k]) for v in variants.values()]
        lines.append(f"| {k} | {speedup[k]:.2f}x | " + " | ".join(cells) + " |")
    return lines + [""]


def render(work_dirs: list[Path], picks: dict[str, dict[str, dict]], task_fit: dict[str, dict]) -> str:
    validations = read_validations(work_dirs)
    lines = []
    for model, tags in validations.items():
        for base, merged in sorted(merge_tags(tags).items()):
            prompt = base[len(model) + 1 :].rsplit("-", 1)[0]
            lines += [f"<!-- {base} -->"] + model_section(model, merged, picks.get(model, {}).get(prompt, {}))
        calibration = merge_tags(tags).get(f"{model}-none-calibration")
        if model in task_fit and calibration:
            lines += task_fit_section(model, calibration, task_fit[model], fit_counts(work_dirs, model))
    return "\n".join(lines) + "\n"


def merge_tags(tags: dict[str, dict]) -> dict[str, dict]:
    """`<model>-<prompt>-calibration` and its `+<tag>` runs (more transforms, same setting) as one validation:
    the base's fields, every run's variants."""
    merged: dict[str, dict] = {}
    for tag in sorted(tags):
        base = tag.split("+", 1)[0]
        data = tags[tag]
        entry = merged.setdefault(base, {**data, "by_prompt": {}})
        entry["by_prompt"].update(variants_of(data))
    return merged


def fit_counts(work_dirs: list[Path], model: str) -> dict[tuple[str, str], int]:
    """(variant, task) -> how many of the task's own texts its transform was fitted on."""
    counts = {}
    for work in work_dirs:
        for path in sorted((work / "validate-task-fit").glob(f"{model}-*/validation.json")):
            data = json.loads(path.read_text())
            for task in data["tasks"]:
                counts[(_variant(data), task)] = data["transform"]["fit"]["count"]
    return counts


def task_fit_section(
    model: str, calibration: dict, fitted: dict[str, dict], counts: dict[tuple[str, str], int]
) -> list[str]:
    """Each transform fitted on the calibration set against the same transform fitted on each task's own texts,
    over the tasks where both were scored: by task (best layer of each), then the mean by layer."""
    lines = [f"### {model}: fitted on the calibration set or on each task's own texts", ""]
    variants = variants_of(calibration)
    speedup = calibration["cost"]["ideal_speedup"]
    for label, on_task in fitted.items():
        on_calibration = variants.get(label, {}).get("tasks", {})
        names = [n for n in on_task if n in on_calibration]
        lines += [
            f"{label} by task (each fit's best layer >= 1):",
            "",
            "| task | task's texts fitted on | texts per dimension | calibration fit | task's own texts | difference |",
            "|---|---|---|---|---|---|",
        ]
        dim = int(label.rsplit("-", 1)[1]) if label.rsplit("-", 1)[1].isdigit() else None
        for name in names:
            a, b = _best_value(on_calibration[name]), _best_value(on_task[name])
            count = counts.get((label, name))
            ratio = f"{count / dim:.2f}" if count and dim else "–"
            lines.append(f"| {name} | {count or '–'} | {ratio} | {_f(a)} | {_f(b)} | {_f(b - a)} |")
        lines.append("")
        means = {
            fit: [_mean([tasks[n][k] for n in names]) for k in range(len(speedup))]
            for fit, tasks in (("calibration", on_calibration), ("task", on_task))
        }
        best = {fit: _best(values, range(len(speedup))) for fit, values in means.items()}
        lines += [
            f"{label}, over the {len(names)} tasks with enough texts for it ({', '.join(names)}): best layer "
            f"fitted on the calibration set {best['calibration']} ({_f(means['calibration'][best['calibration']])}), "
            f"fitted on each task's texts {best['task']} ({_f(means['task'][best['task']])}).",
            "",
            "| layer | ideal speed-up | calibration fit | task's own texts | difference |",
            "|---|---|---|---|---|",
        ]
        for k in range(len(speedup)):
            a, b = means["calibration"][k], means["task"][k]
            lines.append(
                f"| {k} | {speedup[k]:.2f}x | {_f(a)} | {_f(b)} | {_f(None if a is None or b is None else b - a)} |"
            )
        lines.append("")
    return lines


def _best_value(values: list) -> float | None:
    scored = [v for v in values[1:] if v is not None]
    return max(scored) if scored else None


def _mean(values: list) -> float | None:
    return None if not values or any(v is None for v in values) else sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m,minilm-l6")
    parser.add_argument("--prompts", default="none")
    parser.add_argument(
        "--transforms",
        default="none,center,whiten-128,whiten-256",
        help="fitted on the calibration set ('' skips that validation)",
    )
    parser.add_argument("--task-fit", default="", help="transforms to fit on each task's own texts as well")
    parser.add_argument("--select", action="store_true", help="the rule's pick under every transform")
    parser.add_argument("--tag", default="", help="a name for a run that adds transforms to an earlier one")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-transforms"))
    parser.add_argument("--max-rows", type=int, default=300)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--render", nargs="*", type=Path, help="only render these work folders' results")
    args = parser.parse_args()
    if args.render is not None:
        picks, task_fit = {}, {}
        for work in args.render:
            results = work / "results.json"
            for model, entry in (json.loads(results.read_text()) if results.exists() else {}).items():
                for key, one in entry.get("select", {}).items():
                    prompt, _, tag = key.partition("+")
                    by_prompt = picks.setdefault(model, {}).setdefault(prompt, {})
                    by_prompt.update(_labelled(one))
                    if not tag:
                        by_prompt["across"] = one["across"]
                        by_prompt["auto"] = auto_pick(model, one["infonce"], prompt)
                if entry.get("task"):
                    task_fit.setdefault(model, {}).update(entry["task"])
        print(render(args.render, picks, task_fit))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    folders = task_folders(args.data, args.work, args.max_rows, TASKS)
    results_path = args.work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for model in args.models.split(","):
        entry = results.setdefault(model, {"calibration": {}, "task": {}, "select": {}})
        for prompt in args.prompts.split(","):
            if args.transforms:
                entry["calibration"].update(validate(model, folders, prompt, args.transforms, None, args.work, args))
                save(results, results_path)
            if args.task_fit:
                for folder in folders:
                    scores = validate_fitted_on_task(model, folder, prompt, args)
                    for variant, one in scores.items():
                        entry["task"].setdefault(variant, {}).update(one.get("tasks", {}))
                    save(results, results_path)
            if args.select:
                key = f"{prompt}+{args.tag}" if args.tag else prompt
                entry["select"][key] = select(model, prompt, args.transforms, args)
                save(results, results_path)
    print(f"load average after: {os.getloadavg()}", flush=True)


def _labelled(one: dict) -> dict[str, int]:
    """A select's picks by variant; a one-variant select stored before its picks were named by variant (a
    bare template name) is named by the variant it chose."""
    picks = one["by_variant"]
    if len(picks) == 1 and "+" not in next(iter(picks)) and "+" in one["across"]["variant"]:
        return {one["across"]["variant"]: next(iter(picks.values()))}
    return picks


def save(results: dict, path: Path) -> None:
    path.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
