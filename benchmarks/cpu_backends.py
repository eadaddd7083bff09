"""CPU serving backends side by side: full torch model, cut torch export, cut ONNX graph, cut ONNX int8 graph.

For each (model, layer): export with `--format onnx --quantize int8` (reused when WORK already holds the same
export), time the four encoders interleaved batch by batch in one process (`layerpick.benchmark.timing`, the
machinery of `layerpick bench`) at batch 1 and 32 with one thread count for torch and onnxruntime, and score each
encoder on the shared STS tasks: cosine Spearman (MTEB's main score for STS) of each pair's embeddings against
the gold score, on a seeded sample of pairs per task, and the mean over the tasks.

    PYTHONPATH=. .venv/bin/python benchmarks/cpu_backends.py --work /tmp/layerpick-cpu-backends \
        > benchmarks/results/cpu_backends.md

Writes the markdown report on stdout, progress on stderr. Run it alone: the timings share the machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CONFIGS = [("smollm2-135m", 28), ("smollm2-135m", 6), ("minilm-l6", 6), ("minilm-l6", 4)]
TASKS = {"STSBenchmark": 500, "SICK-R": 500, "BIOSSES": None}  # pairs sampled per task (None: all)
ENCODERS = ("full torch", "cut torch", "cut onnx", "cut onnx int8")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_pairs(data: Path, seed: int) -> tuple[dict[str, tuple[list[str], list[str], np.ndarray]], str]:
    """The sampled pairs of every task, and a sentence saying how they were sampled."""
    tasks, words = {}, []
    for task, sample in TASKS.items():
        rows = [
            json.loads(line)
            for line in (data / task / "test.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        words.append(f"{task} {min(sample or len(rows), len(rows))} of {len(rows)} test pairs")
        if sample is not None and sample < len(rows):
            rows = random.Random(seed).sample(rows, sample)
        tasks[task] = (
            [r["sentence1"] for r in rows],
            [r["sentence2"] for r in rows],
            np.array([float(r["score"]) for r in rows]),
        )
    return tasks, ", ".join(words)


def sts_scores(encoder, tasks, batch_size: int = 32) -> dict[str, float]:
    """Cosine Spearman per task (every distinct text embedded once), and their mean."""
    texts = sorted({t for first, second, _ in tasks.values() for t in (*first, *second)})
    vectors = np.asarray(
        encoder.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False), np.float64
    )
    vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    index = {text: i for i, text in enumerate(texts)}
    scores = {}
    for task, (first, second, gold) in tasks.items():
        cosine = (vectors[[index[t] for t in first]] * vectors[[index[t] for t in second]]).sum(axis=1)
        scores[task] = float(spearmanr(cosine, gold).statistic)
    scores["mean"] = float(np.mean([scores[task] for task in TASKS]))
    return scores


def export(model: str, layer: int, work: Path) -> tuple[Path, dict]:
    """The export with its float ONNX graph, and its int8 graph made by the export's own int8 step
    (`layerpick.exporting.onnx.step`): when that step refuses the graph (cosine to the float graph below 0.99 on the
    parity texts),
    `export --quantize int8` would write nothing, so the graph is quantised here the same way and marked
    refused, to show what it would cost."""
    from layerpick.core.calibration import load_calibration
    from layerpick.exporting.onnx import graph as onnx_graph, step as onnx_step
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model
    from layerpick.exporting.parity import DEFAULT_PARITY_TEXTS
    from layerpick.exporting.metadata import read_metadata
    from layerpick.exporting.onnx.encoder import OnnxEncoder

    out = work / f"{model}-k{layer}"
    facts_file = work / f"{model}-k{layer}.int8.json"
    if getattr(read_metadata(out), "layer", None) == layer and facts_file.is_file():
        log(f"reusing {out}")
        return out, json.loads(facts_file.read_text())
    log(f"exporting {model} layer {layer} to {out}")
    export_model(model, layer, out, ExportConfig(overwrite=True, progress=False, format="onnx"))
    graph, texts = OnnxEncoder(out), list(DEFAULT_PARITY_TEXTS)
    try:
        int8 = onnx_step._int8(out, graph, texts)
        facts = {
            "refused": None,
            "min_cosine": int8["min_cosine"],
            "bytes": int8["bytes"],
            "kept_float32": int8["kept_float32"],
        }
    except onnx_step.OnnxParityError as refusal:
        log(f"int8 refused: {refusal}; quantising here to show its cost")
        calibration = load_calibration(limit=onnx_step.CALIBRATION_TEXTS, seed=0).texts
        kept, matmuls = onnx_graph.outlier_matmuls(
            out / onnx_graph.FLOAT_FILE, [graph.feed(calibration[i : i + 8]) for i in range(0, len(calibration), 8)]
        )
        onnx_graph.quantize_int8(out / onnx_graph.FLOAT_FILE, out / onnx_graph.INT8_FILE, kept)
        cosines = onnx_step.cosine_rows(graph.encode(texts), OnnxEncoder(out, onnx_graph.INT8_FILE).encode(texts))
        facts = {
            "refused": str(refusal),
            "min_cosine": min(cosines),
            "bytes": onnx_graph.graph_bytes(out, onnx_graph.INT8_FILE),
            "kept_float32": {"matmuls": len(kept), "of": matmuls},
        }
    facts_file.write_text(json.dumps(facts))
    return out, facts


def encoders(exported: Path, model: str, work: Path) -> dict:
    """The four encoders; onnxruntime takes torch's thread count at load."""
    from layerpick.benchmark.baseline import build_baseline_dir, full_model_dir
    from layerpick.exporting.load import load_encoder, load_sentence_transformer

    baseline = work / f"baseline-{exported.name}"
    if not baseline.exists():
        baseline.mkdir()
        build_baseline_dir(exported, full_model_dir(model), baseline)
    return {
        "full torch": load_sentence_transformer(baseline / "baseline"),
        "cut torch": load_sentence_transformer(exported),
        "cut onnx": load_encoder(exported, backend="onnx"),
        "cut onnx int8": load_encoder(exported, backend="onnx-int8"),
    }


def measure(model: str, layer: int, args, tasks, full_scores: dict) -> dict:
    from layerpick.benchmark.run import bench_texts
    from layerpick.benchmark.timing import split_batches, time_side_by_side

    exported, int8 = export(model, layer, args.work)
    metadata = json.loads((exported / "layerpick.json").read_text())
    models = encoders(exported, model, args.work)
    texts = bench_texts(args.texts)
    speed = {}
    for size in (1, 32):
        log(f"{model} k{layer}: timing at batch {size}")
        speed[size] = time_side_by_side(models, split_batches(texts, size), args.repeats, "cpu")
    scores = {}
    for name, encoder in models.items():
        if name == "full torch" and model in full_scores:
            scores[name] = full_scores[model]
            continue
        log(f"{model} k{layer}: STS with {name}")
        scores[name] = sts_scores(encoder, tasks)
    full_scores.setdefault(model, scores["full torch"])
    sizes = {
        "full torch": None,
        "cut torch": metadata["weights_bytes"],
        "cut onnx": metadata["onnx"]["bytes"],
        "cut onnx int8": int8["bytes"],
    }
    return {
        "model": model,
        "layer": layer,
        "num_layers": metadata["num_layers"],
        "speed": speed,
        "scores": scores,
        "sizes": sizes,
        "int8_min_cosine": int8["min_cosine"],
        "int8_refused": int8["refused"] is not None,
        "int8_kept": int8["kept_float32"],
        "onnx_parity": max(
            metadata["onnx"]["parity"]["token_states_max_rel_diff"],
            metadata["onnx"]["parity"]["embeddings_max_rel_diff"],
        ),
    }


def render(results: list[dict], args, samples: str, load_before: str, load_after: str, seconds: float) -> str:
    lines = [
        "# CPU backends: full torch, cut torch, cut ONNX, cut ONNX int8",
        "",
        f"Throughput in texts/s (median of {args.repeats} interleaved passes over {args.texts} calibration "
        f"sentences; the four encoders alternate batch by batch in one process), {args.threads} threads for "
        "torch and onnxruntime. STS: cosine Spearman (MTEB's main STS score) on the shared task data, "
        f"seeded sample (seed {args.seed}): {samples}; mean over the three tasks. Sizes: weight files "
        "(safetensors, or the ONNX graph).",
        "",
        "| model | layer | encoder | texts/s b=1 | texts/s b=32 | vs full b=1 | vs full b=32 | STSB | SICK-R "
        "| BIOSSES | STS mean | size MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        speed = result["speed"]
        for name in ENCODERS:
            one, many = speed[1][name].texts_per_s, speed[32][name].texts_per_s
            ratio1 = one / speed[1]["full torch"].texts_per_s
            ratio32 = many / speed[32]["full torch"].texts_per_s
            score = result["scores"][name]
            size = result["sizes"][name]
            layer = (
                f"{result['layer']} of {result['num_layers']}" if name != "full torch" else str(result["num_layers"])
            )
            label = f"{name} (refused by export)" if name == "cut onnx int8" and result["int8_refused"] else name
            lines.append(
                f"| {result['model']} | {layer} | {label} | {one:.1f} | {many:.1f} | {ratio1:.2f}x | "
                f"{ratio32:.2f}x | {score['STSBenchmark']:.4f} | {score['SICK-R']:.4f} | "
                f"{score['BIOSSES']:.4f} | {score['mean']:.4f} | "
                f"{'-' if size is None else f'{size / 1e6:.1f}'} |"
            )
    lines += [
        "",
        "Export checks: ONNX graph vs torch export, max difference relative to the largest value "
        "(layerpick.json); int8 graph vs float graph, lowest cosine on the parity texts (at least 0.99 or "
        "`export --quantize int8` refuses it; a refused graph is quantised by this script the same way, to "
        "show what it would cost).",
        "",
        "| model | layer | onnx parity | int8 min cosine | MatMuls kept float32 | int8 export |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['model']} | {r['layer']} | {r['onnx_parity']:.1e} | {r['int8_min_cosine']:.4f} | "
        f"{r['int8_kept']['matmuls']} of {r['int8_kept']['of']} | {'refused' if r['int8_refused'] else 'written'} |"
        for r in results
    ]
    lines += [
        "",
        f"Load average before: `{load_before}`; after: `{load_after}` (the machine is shared; "
        f"2 cores). Wall time {seconds / 60:.1f} min.",
        "",
        "Produced by:",
        "",
        "```bash",
        "PYTHONPATH=. .venv/bin/python benchmarks/cpu_backends.py "
        + " ".join(sys.argv[1:])
        + " > benchmarks/results/cpu_backends.md",
        "```",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-cpu-backends"))
    parser.add_argument("--texts", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA, help="the shared task data (default: ../shared/data)")
    parser.add_argument("--only", help="model:layer, for a quick trial")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    torch.set_num_threads(args.threads)
    args.work.mkdir(parents=True, exist_ok=True)
    configs = [c for c in CONFIGS if args.only is None or f"{c[0]}:{c[1]}" == args.only]
    load_before = Path("/proc/loadavg").read_text().strip()
    started = time.perf_counter()
    tasks, samples = load_pairs(args.data, args.seed)
    full_scores: dict = {}
    results = [measure(model, layer, args, tasks, full_scores) for model, layer in configs]
    load_after = Path("/proc/loadavg").read_text().strip()
    print(render(results, args, samples, load_before, load_after, time.perf_counter() - started))


if __name__ == "__main__":
    main()
