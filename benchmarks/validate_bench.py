"""Measure `layerpick validate`: fidelity to published MTEB scores, and the speed of one pass for all layers.

    fidelity: all-MiniLM-L6-v2 (minilm-l6), last layer, mean pooling, on every folder of ../shared/data,
              next to the published MTEB score in each SOURCE.md (raw vectors and unit-length vectors).
    speed:    smollm2-135m on STSBenchmark + Banking77Classification + SciFact (deterministic subsamples,
              written as MTEB-named folders so the real task classes run): `--layers all` (31 layers) vs the
              last layer alone, each from a cold store, and the one-process-per-layer design (re-load and
              re-encode everything for each layer) measured on a few layers and extrapolated to all of them.

Run from the repository root:
    .venv/bin/python benchmarks/validate_bench.py fidelity
    .venv/bin/python benchmarks/validate_bench.py speed
Each prints a markdown table (and writes it with --markdown PATH).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import mteb
import torch

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import load_model
from layerpick.core.models import resolve_max_seq_length
from layerpick.validation import ValidateConfig, run_validation
from layerpick.validation.encoder import LayerEncoder, layer_model_meta
from layerpick.validation.evaluate import single_threaded_blas
from layerpick.validation.tasks import resolve_tasks

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PUBLISHED = {  # task: (published all-MiniLM-L6-v2 score from SOURCE.md, tolerance asked for)
    "STSBenchmark": (0.8203, 0.002),
    "SICK-R": (0.7758, 0.002),
    "BIOSSES": (0.8164, 0.002),
    "SciFact": (0.6451, 0.005),
    "Banking77Classification": (0.8004, 0.02),
    "EmotionClassification": (0.4083, 0.02),
    "AmazonCounterfactualClassification": (0.6364, 0.02),
    "TwitterSemEval2015": (0.6786, None),  # different split from MTEB's: not comparable
    "Banking77Clustering_derived": (None, None),  # not an MTEB task
}


def fidelity(args) -> str:
    folders = [str(DATA / name) for name in PUBLISHED]
    runs = {}
    for normalize in (False, True):
        began = time.perf_counter()
        result = run_validation(
            "minilm-l6",
            folders,
            ValidateConfig(
                layers=[6],
                normalize=normalize,
                output_dir=args.work / f"fidelity-normalize-{normalize}",
                store_dir=args.store,
                progress=not args.quiet,
            ),
        )
        runs[normalize] = (result.report.to_json(), time.perf_counter() - began)
    lines = [
        "| task | published | layerpick (raw vectors) | diff | layerpick (unit vectors) | diff | asked | holds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, (published, tolerance) in PUBLISHED.items():
        raw = runs[False][0]["tasks"][name]["main_score_by_layer"][6]
        unit = runs[True][0]["tasks"][name]["main_score_by_layer"][6]
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    _f(published),
                    _f(raw),
                    _diff(raw, published),
                    _f(unit),
                    _diff(unit, published),
                    f"±{tolerance}" if tolerance else "n/a",
                    _holds(raw, unit, published, tolerance),
                ]
            )
            + " |"
        )
    data = runs[False][0]
    lines += [
        "",
        f"Wall time: {runs[False][1]:.0f} s (encoding {data['texts_encoded']} texts: "
        f"{data['timings']['collect_s']:.0f} s), then {runs[True][1]:.0f} s for the unit-vector run "
        f"(store reused: {runs[True][0]['texts_encoded']} texts encoded). "
        f"Failures: {data['failures'] or 'none'}.",
    ]
    return "\n".join(lines)


def speed(args) -> str:
    folders = _subsample(
        args.work / "speed-data",
        args.seed,
        args.sts_pairs,
        args.banking_per_label,
        args.scifact_queries,
        args.scifact_docs,
    )
    _warm_up(args, folders)
    last = _timed_run(args, folders, layers=[args.last_layer], tag="last")
    every = _timed_run(args, folders, layers="all", tag="all")
    reference = _reference_design(args, folders)
    plain_last = reference["runs"][-1]
    n = args.last_layer + 1
    lines = [
        "| run | wall s | CPU s | encode s | evaluate s | texts encoded | mteb evaluations | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|",
        _row(f"layerpick, last layer alone (--layers {args.last_layer})", last),
        _row(f"layerpick, all {n} layers (--layers all), one pass per distinct text", every),
    ]
    for run in reference["runs"]:
        label = f"one process per layer (reference design), layer {run['layer']}: reload, re-encode all"
        lines.append(_row(label, run))
    measured = reference["runs"]
    extrapolated = {key: n * sum(r[key] for r in measured) / len(measured) for key in ("wall_s", "cpu_s")}
    lines.append(
        f"| one process per layer, all {n} layers: **extrapolated** from the {len(measured)} measured "
        f"layers | {extrapolated['wall_s']:.0f} | {extrapolated['cpu_s']:.0f} | | | | {3 * n} | |"
    )
    same_work = (last["collect_s"] + every["evaluate_s"]) / (last["collect_s"] + last["evaluate_s"])
    lines += [
        "",
        f"- all {n} layers / last layer alone (layerpick, both cold): wall "
        f"**{every['wall_s'] / last['wall_s']:.2f}x**, "
        f"CPU **{every['cpu_s'] / last['cpu_s']:.2f}x**; with the forward pass (the same work in both) taken from "
        f"the first run: **{same_work:.2f}x** (target <= 1.5x)",
        f"- all {n} layers / last layer with a plain encoder (reference design, layer {plain_last['layer']}): "
        f"wall **{every['wall_s'] / plain_last['wall_s']:.2f}x**, CPU **{every['cpu_s'] / plain_last['cpu_s']:.2f}x**",
        f"- one process per layer ({n} layers, extrapolated) / all layers in one pass: wall "
        f"**{extrapolated['wall_s'] / every['wall_s']:.1f}x**, CPU **{extrapolated['cpu_s'] / every['cpu_s']:.1f}x**",
        f"- subsample (seed {args.seed}): {json.dumps(folders['_sizes'])}",
    ]
    return "\n".join(lines)


def _row(label: str, r: dict) -> str:
    return (
        f"| {label} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {_f1(r.get('collect_s'))} | "
        f"{_f1(r.get('evaluate_s'))} | {r['texts']} | {r['evaluations']} | {r['rss_mib']:.0f} |"
    )


def _f1(value) -> str:
    return "" if value is None else f"{value:.1f}"


def _warm_up(args, folders: dict) -> None:
    """One small unmeasured run first: imports, lazy initialisation and the file cache must not count
    against whichever run comes first."""
    sts = args.work / "warm-up" / "STSBenchmark"
    shutil.rmtree(sts.parent, ignore_errors=True)
    rows = _rows(Path(folders["tasks"][0]) / "test.jsonl")
    _write(sts / "test.jsonl", range(min(4, len(rows))), rows)
    run_validation(
        args.model,
        [str(sts)],
        ValidateConfig(
            layers=[0, 1],
            output_dir=sts.parent / "out",
            store_dir=sts.parent / "store",
            batch_size=args.batch_size,
            progress=False,
        ),
    )


def _timed_run(args, folders: dict, *, layers, tag: str) -> dict:
    store = args.work / f"store-{tag}"
    shutil.rmtree(store, ignore_errors=True)
    wall, cpu = time.perf_counter(), _cpu_s()
    result = run_validation(
        args.model,
        folders["tasks"],
        ValidateConfig(
            layers=layers,
            output_dir=args.work / f"out-{tag}",
            store_dir=store,
            batch_size=args.batch_size,
            progress=not args.quiet,
        ),
    )
    data = result.report.to_json()
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": _cpu_s() - cpu,
        "collect_s": data["timings"]["collect_s"],
        "evaluate_s": data["timings"]["evaluate_s"],
        "texts": data["texts_encoded"],
        "evaluations": sum(t["evaluations_run"] for t in data["tasks"].values()),
        "rss_mib": _peak_rss_mib(),
        "failures": data["failures"],
    }


def _reference_design(args, folders: dict) -> dict:
    """Re-load the model and re-encode every text of every task for each layer (no store, no sharing)."""
    runs = []
    for layer in (int(k) for k in args.reference_layers.split(",")):
        wall, cpu = time.perf_counter(), _cpu_s()
        loaded = load_model(args.model)
        encoder = _PlainEncoder(loaded, layer, args.batch_size)
        specs = resolve_tasks(folders["tasks"])
        for spec in specs:
            with single_threaded_blas():  # as layerpick validate does, so only the design differs
                mteb.evaluate(
                    encoder,
                    spec.new_task(),
                    cache=None,
                    show_progress_bar=False,
                    encode_kwargs={"batch_size": args.batch_size, "show_progress_bar": False},
                    co2_tracker=False,
                )
        runs.append(
            {
                "layer": layer,
                "wall_s": time.perf_counter() - wall,
                "cpu_s": _cpu_s() - cpu,
                "texts": encoder.texts,
                "evaluations": len(specs),
                "rss_mib": _peak_rss_mib(),
            }
        )
        del loaded, encoder
    return {"runs": runs}


class _PlainEncoder(LayerEncoder):
    """The reference design: every encode call runs the model over its texts again (all of them, no dedupe)."""

    def __init__(self, loaded, layer: int, batch_size: int) -> None:
        meta = layer_model_meta("reference", layer, "bench", embed_dim=None, max_tokens=None, experiment={})
        super().__init__(source=None, layer=layer, meta=meta)
        self.loaded, self.batch_size, self.texts = loaded, batch_size, 0
        self.max_length = resolve_max_seq_length(loaded, None)  # what layerpick validate uses too

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
        texts = [t for batch in inputs for t in batch["text"]]
        self.texts += len(texts)
        config = CollectConfig(batch_size=self.batch_size, max_length=self.max_length, progress=False)
        states = collect(self.loaded, texts, config)
        return states.pooled[self.layer].numpy()


def _subsample(root: Path, seed: int, sts_pairs: int, per_label: int, queries: int, docs: int) -> dict:
    """Deterministic subsamples, written as MTEB-named folders (the real task classes and protocols run)."""
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    sts = _rows(DATA / "STSBenchmark" / "test.jsonl")
    _write(root / "STSBenchmark" / "test.jsonl", sorted(rng.sample(range(len(sts)), sts_pairs)), sts)
    train = _rows(DATA / "Banking77Classification" / "train.jsonl")
    test = _rows(DATA / "Banking77Classification" / "test.jsonl")
    _write(root / "Banking77Classification" / "train.jsonl", _per_label(train, per_label * 3, rng), train)
    _write(root / "Banking77Classification" / "test.jsonl", _per_label(test, per_label, rng), test)
    sizes = {"STSBenchmark pairs": sts_pairs, "Banking77 train/test per label": [per_label * 3, per_label]}
    sizes.update(_scifact(root / "SciFact", rng, queries, docs))
    return {
        "tasks": [str(root / name) for name in ("STSBenchmark", "Banking77Classification", "SciFact")],
        "_sizes": sizes,
    }


def _scifact(folder: Path, rng: random.Random, queries: int, docs: int) -> dict:
    all_queries = _rows(DATA / "SciFact" / "queries.jsonl")
    qrels = [line.rstrip("\n").split("\t") for line in open(DATA / "SciFact" / "qrels.tsv", encoding="utf-8")][1:]
    chosen = [all_queries[i] for i in sorted(rng.sample(range(len(all_queries)), queries))]
    ids = {q["_id"] for q in chosen}
    kept_qrels = [r for r in qrels if r[0] in ids]
    relevant = {r[1] for r in kept_qrels}
    corpus = _rows(DATA / "SciFact" / "corpus.jsonl")
    others = [i for i, d in enumerate(corpus) if d["_id"] not in relevant]
    keep = sorted([i for i, d in enumerate(corpus) if d["_id"] in relevant] + rng.sample(others, docs - len(relevant)))
    _write(folder / "corpus.jsonl", keep, corpus)
    _write(folder / "queries.jsonl", range(len(chosen)), chosen)
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in kept_qrels))
    return {"SciFact queries": queries, "SciFact corpus": len(keep)}


def _per_label(rows: list[dict], count: int, rng: random.Random) -> list[int]:
    by_label: dict = {}
    for index, row in enumerate(rows):
        by_label.setdefault(row["label"], []).append(index)
    return sorted(i for indices in by_label.values() for i in rng.sample(indices, min(count, len(indices))))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


def _write(path: Path, indices, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(rows[i], ensure_ascii=False) + "\n" for i in indices), encoding="utf-8")


def _cpu_s() -> float:
    """CPU seconds of this process (every thread): less sensitive than wall time to other jobs on the machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _f(value) -> str:
    return "-" if value is None else f"{value:.4f}"


def _diff(value, published) -> str:
    return "-" if value is None or published is None else f"{value - published:+.4f}"


def _holds(raw, unit, published, tolerance) -> str:
    if published is None or tolerance is None:
        return "n/a"
    verdict = {True: "yes", False: "no"}
    return f"raw {verdict[abs(raw - published) <= tolerance]}, unit {verdict[abs(unit - published) <= tolerance]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("fidelity", "speed"))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "layerpick-validate-bench")
    parser.add_argument("--store", type=Path, default=None, help="store for the fidelity run (default: the cache)")
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sts-pairs", type=int, default=200)
    parser.add_argument("--banking-per-label", type=int, default=4)
    parser.add_argument("--scifact-queries", type=int, default=30)
    parser.add_argument("--scifact-docs", type=int, default=150)
    parser.add_argument("--reference-layers", default="10,30")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--last-layer", type=int, default=30)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    logging.getLogger("mteb").setLevel(logging.ERROR)
    torch.set_num_threads(torch.get_num_threads())
    args.work.mkdir(parents=True, exist_ok=True)
    table = fidelity(args) if args.mode == "fidelity" else speed(args)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
