"""Prompt templates x layers: do prompts help, which (template, layer) does the default rule pick, what do
they cost? On the shared STS tasks, for every layer, plain text vs each built-in template, mean and last-token
pooling.

For each model and template (none, eol, sth, sum): one forward pass over the STS texts through
`layerpick.core.collect` (the template carried by the tokenizer, exactly as select, validate and export use
it) pools every layer with mean pooling, and a token observer pools the last token in the same pass. Each
layer's score is MTEB's STS main score computed directly: Spearman correlation between the cosine similarity
of the two sentences' embeddings and the gold score, per task, then the mean over tasks. For the decoders one
more pass embeds the eol-wrapped *string* (tokenized as one piece) to measure the edge effect of tokenizing
the text on its own. Then `score_layers` scores every template on the embedded calibration set (all six
metrics, the template's default pooling: mean for plain text, last token with a template) and the default
rule picks a layer per template and a (template, layer) pair over all templates.

Tasks are subsampled with a fixed seed: --pairs pairs of each task (BIOSSES has 100). The metrics are scored
on 64 calibration texts with 2 augmented views each (the default rule's InfoNCE uses the first two views of
any --views setting, so these are the views select uses); LiDAR, which needs more views, is left out here.

    PYTHONPATH=. python benchmarks/prompts.py --models minilm-l6,smollm2-135m,gemma3-270m --data /work/shared/data \
        --pairs 100 --work /tmp/layerpick-prompts --output benchmarks/results/prompts.md

Each model's measurements go to WORK/<model>.json (a finished model is not measured again); the markdown is
written from all of them.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from layerpick.core.calibration import load_calibration
from layerpick.core.collect import CollectConfig, collect, token_lengths
from layerpick.core.models import load_model
from layerpick.core.pooling import last_token_pool, mean_pool
from layerpick.core.prompt_tokenizer import prompted_tokenizer
from layerpick.core.prompts import (
    BUILTIN_TEMPLATES,
    PLAIN,
    default_pooling,
    parse_prompt,
)
from layerpick.metrics import parse_metrics
from layerpick.selection.prompt_choice import choose_pair
from layerpick.selection.rules import DEFAULT_RULE, choose_layer, parse_rule
from layerpick.selection.scoring import ScoringConfig, score_layers

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"  # ../shared/data beside the checkout
TASKS = ("STSBenchmark", "SICK-R", "BIOSSES")
TEMPLATES = ("none", *BUILTIN_TEMPLATES)
METRICS = "prompt-entropy,dataset-entropy,dime,infonce,curvature"  # LiDAR left out: it needs 4 views, the rest 2
CALIBRATION = 64
VIEWS = 2
BATCH = 16
TIMING_TEXTS = 48  # texts per timed pass
TIMING_ROUNDS = 3  # plain and each template in turn, this many times; the median is reported


def sts_tasks(data: Path, pairs: int, seed: int = 0) -> dict[str, list[dict]]:
    """task -> rows (sentence1, sentence2, score), at most `pairs` rows, sampled with `seed`."""
    tasks = {}
    for name in TASKS:
        rows = [json.loads(line) for line in (data / name / "test.jsonl").read_text(encoding="utf-8").splitlines()]
        if len(rows) > pairs:
            rows = [rows[i] for i in sorted(random.Random(seed).sample(range(len(rows)), pairs))]
        tasks[name] = rows
    return tasks


class LastTokenObserver:
    """Pools the last real token of every batch (and the mean, to prove the batches line up with collect's)."""

    def __init__(self):
        self.last: dict[int, list[torch.Tensor]] = {}
        self.mean: dict[int, list[torch.Tensor]] = {}

    def observe(self, layer, states, mask):
        self.last.setdefault(layer, []).append(last_token_pool(states, mask))
        self.mean.setdefault(layer, []).append(mean_pool(states, mask))


def embed_both(loaded, texts: list[str], prompt, max_length: int = 512) -> tuple[dict[str, torch.Tensor], float, int]:
    """{'mean': (L+1, N, D), 'lasttoken': (L+1, N, D)} from one collect pass, the seconds it took, the tokens."""
    tokenizer = prompted_tokenizer(loaded.tokenizer, prompt)
    lengths = token_lengths(tokenizer, texts, max_length)
    order = sorted(range(len(texts)), key=lambda i: -lengths[i])  # collect's own order: the observer's batches
    observer = LastTokenObserver()
    config = CollectConfig(pooling="mean", batch_size=BATCH, max_length=max_length, progress=False, prompt=prompt)
    began = time.perf_counter()
    states = collect(loaded, texts, config, [observer])
    seconds = time.perf_counter() - began
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order)] = torch.arange(len(order))
    last = torch.stack([torch.cat(observer.last[k])[inverse] for k in sorted(observer.last)])
    mean = torch.stack([torch.cat(observer.mean[k])[inverse] for k in sorted(observer.mean)])
    torch.testing.assert_close(mean, states.pooled)  # the observer saw the texts in collect's order
    return {"mean": states.pooled, "lasttoken": last}, seconds, sum(lengths)


def timed_passes(loaded, texts: list[str]) -> dict[str, float]:
    """Median seconds of one collect pass (every layer, mean pooling) per template, the templates interleaved
    so that a change in the machine's load falls on all of them."""
    times: dict[str, list[float]] = {name: [] for name in TEMPLATES}
    for _ in range(TIMING_ROUNDS):
        for name in TEMPLATES:
            config = CollectConfig(pooling="mean", batch_size=BATCH, progress=False, prompt=parse_prompt(name))
            began = time.perf_counter()
            collect(loaded, texts, config)
            times[name].append(time.perf_counter() - began)
    return {name: float(np.median(values)) for name, values in times.items()}


def sts_by_layer(pooled: torch.Tensor, index: dict[str, int], tasks: dict[str, list[dict]]) -> dict[str, list[float]]:
    """task -> per layer cosine Spearman (MTEB's STS main score)."""
    out = {}
    for name, rows in tasks.items():
        a = pooled[:, [index[r["sentence1"]] for r in rows]].double()
        b = pooled[:, [index[r["sentence2"]] for r in rows]].double()
        cosine = torch.nn.functional.cosine_similarity(a, b, dim=-1).numpy()  # (L+1, pairs)
        gold = np.array([r["score"] for r in rows], dtype=float)
        out[name] = [float(spearmanr(layer, gold).statistic) for layer in cosine]
    return out


def mean_over_tasks(scores: dict[str, list[float]]) -> list[float]:
    return [float(np.mean(values)) for values in zip(*scores.values())]


def measure_model(alias: str, tasks: dict[str, list[dict]], partial: Path) -> dict:
    """Every measurement of one model; each step is saved to `partial` as it finishes, so an interrupted run
    continues where it stopped."""
    loaded = load_model(alias)
    texts = sorted({s for rows in tasks.values() for r in rows for s in (r["sentence1"], r["sentence2"])})
    index = {t: i for i, t in enumerate(texts)}
    record = (
        json.loads(partial.read_text())
        if partial.is_file()
        else {
            "model": alias,
            "num_layers": loaded.num_layers,
            "family": loaded.family.name,
            "texts": len(texts),
            "pairs": {name: len(rows) for name, rows in tasks.items()},
            "sts": {},
            "cost": {},
            "select": {},
        }
    )

    def save() -> None:
        partial.write_text(json.dumps(record))

    for name in TEMPLATES:
        if f"{name}/mean" in record["sts"]:
            continue
        pooled, seconds, tokens = embed_both(loaded, texts, parse_prompt(name))
        record["cost"][name] = {"tokens": tokens}
        for pooling, states in pooled.items():
            by_task = sts_by_layer(states, index, tasks)
            record["sts"][f"{name}/{pooling}"] = {"tasks": by_task, "mean": mean_over_tasks(by_task)}
        save()
        print(f"{alias} {name}: {seconds:.1f}s, {tokens} tokens", flush=True)
    if loaded.family.name not in ("bert", "roberta") and "eol-string/lasttoken" not in record["sts"]:
        prompt = parse_prompt("eol")
        config = CollectConfig(pooling="lasttoken", batch_size=BATCH, progress=False, prompt=PLAIN)
        wrapped = collect(loaded, [prompt.wrap(t) for t in texts], config).pooled
        by_task = sts_by_layer(
            wrapped,
            {prompt.wrap(t): i for t, i in index.items()},
            {
                n: [
                    {**r, "sentence1": prompt.wrap(r["sentence1"]), "sentence2": prompt.wrap(r["sentence2"])}
                    for r in rows
                ]
                for n, rows in tasks.items()
            },
        )
        record["sts"]["eol-string/lasttoken"] = {"tasks": by_task, "mean": mean_over_tasks(by_task)}
        save()
        print(f"{alias} eol as one string: done", flush=True)
    if "seconds" not in record["cost"]["none"]:
        for name, seconds in timed_passes(loaded, texts[:TIMING_TEXTS]).items():
            record["cost"][name]["seconds"] = seconds
            record["cost"][name]["timed_texts"] = min(TIMING_TEXTS, len(texts))
        record["cost"]["load_average_after_timing"] = Path("/proc/loadavg").read_text().split()[:3]
        save()
        print(f"{alias}: timed", flush=True)
    calibration = load_calibration(limit=CALIBRATION).texts
    for name in TEMPLATES:
        if name in record["select"]:
            continue
        config = CollectConfig(batch_size=BATCH, progress=False, prompt=parse_prompt(name))
        result = score_layers(loaded, calibration, parse_metrics(METRICS), config, ScoringConfig(views=VIEWS))
        record["select"][name] = {"pooling": result.pooling, "scores": result.scores}
        save()
        print(f"{alias} {name}: scored ({result.pooling})", flush=True)
    return record


# ---------------------------------------------------------------- report


def report(records: list[dict], command: str, load: str, pairs: int) -> str:
    rule = parse_rule(DEFAULT_RULE)
    lines = [
        "# Prompt templates and layers",
        "",
        f"Made by `{command}` (load average before/after: {load}).",
        "",
        f"Tasks: STSBenchmark, SICK-R and BIOSSES, {pairs} pairs of each (sampled with seed 0; BIOSSES has "
        "100), from `/work/shared/data`. Score: cosine Spearman against the gold score (MTEB's STS main "
        "score), per layer, mean over the three tasks. Every layer of every template comes from one "
        "forward pass through `layerpick.core.collect` with the template carried by the tokenizer (what "
        "select, validate and export use); the last-token vectors are pooled in the same pass. Templates: "
        + "; ".join(f"`{n}` = `{t}`" for n, t in BUILTIN_TEMPLATES.items())
        + ".",
        f"The rule is the default `{DEFAULT_RULE}`, on the embedded calibration set ({CALIBRATION} texts, "
        f"{VIEWS} augmented views), each template with its default pooling (mean for plain text, last token "
        "with a template).",
        "",
    ]
    lines += summary_table(records, rule) + [""]
    lines += metric_table(records) + [""]
    lines += cost_table(records) + [""]
    for record in records:
        lines += layer_table(record, rule) + [""]
    return "\n".join(lines)


def default_key(name: str, family_default: str = "mean") -> str:
    return f"{name}/{default_pooling(family_default, parse_prompt(name))}"


def best(values: list[float]) -> tuple[int, float]:
    """The best layer 1..L and its score (a layer whose score is undefined, NaN, never wins)."""
    k = max(range(1, len(values)), key=lambda i: values[i] if np.isfinite(values[i]) else -np.inf)
    return k, values[k]


def picks(record: dict, rule) -> tuple[dict, object]:
    """The rule's layer per template (default pooling) and its (template, layer) pair over all templates."""
    per_template = {name: choose_layer(record["select"][name]["scores"], rule).layer for name in TEMPLATES}
    pair = choose_pair({name: record["select"][name]["scores"] for name in TEMPLATES}, rule)
    return per_template, pair


def summary_table(records: list[dict], rule) -> list[str]:
    lines = [
        "## Summary",
        "",
        "Mean STS score (last layer / best layer) per configuration; the default rule's pick of a "
        "(template, layer) pair and its regret: the best pair's score minus the pick's, over the "
        "default-pooling configurations (and over every configuration, mean pooling under a template "
        "included).",
        "",
        "| model | plain, mean (today) | "
        + " | ".join(f"{n}, last token" for n in BUILTIN_TEMPLATES)
        + " | best of all | rule's pick | regret (default poolings / all) |",
        "|---" * (len(BUILTIN_TEMPLATES) + 5) + "|",
    ]
    for record in records:
        sts = record["sts"]
        cells = []
        for name in TEMPLATES:
            values = sts[default_key(name)]["mean"]
            k, value = best(values)
            cells.append(f"{values[-1]:.3f} / {value:.3f} (L{k})")
        everything = [
            (best(v["mean"])[1], key, best(v["mean"])[0]) for key, v in sts.items() if not key.startswith("eol-string")
        ]
        top = max(everything)
        defaults = max(best(sts[default_key(n)]["mean"])[1] for n in TEMPLATES)
        _, pair = picks(record, rule)
        picked = sts[default_key(pair.prompt)]["mean"][pair.layer]
        cells += [
            f"{top[0]:.3f} ({top[1]}, L{top[2]})",
            f"{pair.prompt}, layer {pair.layer}: {picked:.3f}",
            f"{defaults - picked:.3f} / {top[0] - picked:.3f}",
        ]
        lines.append(f"| {record['model']} | " + " | ".join(cells) + " |")
    return lines


def metric_table(records: list[dict]) -> list[str]:
    """Per model and template: the rule's own pick and regret within the template, and each metric's Spearman
    correlation with the STS score across layers 1..L."""
    rule = parse_rule(DEFAULT_RULE)
    names = METRICS.split(",")
    lines = [
        "## Do the unsupervised metrics still find good layers under a prompt?",
        "",
        f"Within each template (its default pooling): the layer `{DEFAULT_RULE}` picks, its regret against "
        "that template's best layer, and each metric's Spearman correlation with the mean STS score over "
        "layers 1..L (the sign a rule needs: negative for a `min-` rule).",
        "",
        "| model | template | pick | regret | " + " | ".join(names) + " |",
        "|---" * (len(names) + 4) + "|",
    ]
    for record in records:
        per_template, _ = picks(record, rule)
        for name in TEMPLATES:
            values = record["sts"][default_key(name)]["mean"]
            k = per_template[name]
            cells = []
            for metric in names:
                series = record["select"][name]["scores"][metric][1:]
                ok = [(m, s) for m, s in zip(series, values[1:]) if m is not None and np.isfinite(m)]
                rho = spearmanr([m for m, _ in ok], [s for _, s in ok]).statistic if len(ok) > 2 else float("nan")
                cells.append(f"{rho:+.2f}")
            lines.append(
                f"| {record['model']} | {name} | {k} | {best(values)[1] - values[k]:.3f} | " + " | ".join(cells) + " |"
            )
    return lines


def cost_table(records: list[dict]) -> list[str]:
    lines = [
        "## The cost of the longer input",
        "",
        "Tokens over all STS texts, and the median seconds of one forward pass of the full model (every "
        f"layer, batch {BATCH}) over the first {TIMING_TEXTS} of them, plain text and each template in turn, "
        f"{TIMING_ROUNDS} rounds, in one process on a shared 2-core machine (the load average is above).",
        "",
        "| model | template | tokens | x plain | seconds | x plain |",
        "|---|---|---|---|---|---|",
    ]
    for record in records:
        base = record["cost"]["none"]
        load = record["cost"].get("load_average_after_timing")
        if load:
            lines.append(f"| {record['model']} | (load average after timing: {' '.join(load)}) | | | | |")
        for name in TEMPLATES:
            cost = record["cost"][name]
            lines.append(
                f"| {record['model']} | {name} | {cost['tokens']} | {cost['tokens'] / base['tokens']:.2f} "
                f"| {cost['seconds']:.1f} | {cost['seconds'] / base['seconds']:.2f} |"
            )
    return lines


def layer_table(record: dict, rule) -> list[str]:
    keys = [f"{name}/{pooling}" for name in TEMPLATES for pooling in ("mean", "lasttoken")]
    keys += [key for key in record["sts"] if key.startswith("eol-string")]
    per_template, pair = picks(record, rule)
    lines = [
        f"## {record['model']} ({record['num_layers']} layers, {record['texts']} texts)",
        "",
        "Mean STS score per layer. Columns: template / pooling; `eol-string` is the eol-wrapped string "
        "tokenized as one piece (not what ships: the export tokenizes the text on its own). "
        "`*` marks each template's rule pick (default pooling), `◀` the rule's (template, layer) pair.",
        "",
        "| layer | " + " | ".join(keys) + " |",
        "|---" * (len(keys) + 1) + "|",
    ]
    for k in range(record["num_layers"] + 1):
        cells = []
        for key in keys:
            name, pooling = key.split("/")
            mark = ""
            if name in per_template and key == default_key(name) and per_template[name] == k:
                mark = " *"
            if key == default_key(pair.prompt) and k == pair.layer:
                mark += " ◀"
            cells.append(f"{record['sts'][key]['mean'][k]:.3f}{mark}")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="minilm-l6,smollm2-135m,gemma3-270m")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-prompts"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/prompts.md"))
    parser.add_argument("--command", default="PYTHONPATH=. python benchmarks/prompts.py")
    args = parser.parse_args()
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    args.work.mkdir(parents=True, exist_ok=True)
    tasks = sts_tasks(args.data, args.pairs)
    records = []
    for alias in args.models.split(","):
        path = args.work / f"{alias}-{args.pairs}.json"
        if not path.is_file():
            path.write_text(json.dumps(measure_model(alias, tasks, args.work / f"{alias}-{args.pairs}.partial.json")))
        records.append(json.loads(path.read_text()))
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    load = f"{' '.join(load_before)} / {' '.join(load_after)}"
    args.output.write_text(report(records, args.command, load, args.pairs) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
