"""How each stage's cost grows with texts, text length, layers, width and dtype; a 1B select's peak memory.

Random-weight models are built from real configurations (no download): BERT-base, a Llama-style 0.5B
(Qwen2.5-0.5B's shape), Llama-3.2-1B's shape, and that 1B shape cut to 4 and 8 blocks (the layers axis).
Tokenizers: all-MiniLM-L6-v2's (BERT's vocabulary) and SmolLM2's (for the Llamas). Parts:

- forward: layerpick's own pass (`core.collect`: every layer pooled) over N texts of exactly T tokens;
  one process per (model, dtype), cells in growing size, peak RSS of the process after each cell;
- metrics: every metric on ONE layer of synthetic states as N (pooled, views) or T (token states) grows, at
  the widths of the models here and of an 8B model (D = 4096), measured, not extrapolated;
- fit: the default whitening (whiten-256) fitted on one layer as N and D grow;
- export: `layerpick export` of each model at its middle layer (load, cut, save, parity check), own process;
- select-1b: `layerpick select` on the 1B model in bfloat16, 512 texts (64 of them 512 tokens long, the rest
  the embedded set's), own process, wall time and peak RSS.

Every growth column is the log-log slope between the smallest and the largest point of its axis; the 8B row
is extrapolated from those slopes and marked so. Results accumulate in WORK/scale.json: a run of some parts
(`--parts metrics,fit`) keeps the others' earlier results, and the table names each part's command and load.

    python benchmarks/scale.py --work /tmp/layerpick-scale --output benchmarks/results/scale.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLAMA_1B = dict(
    vocab_size=128256,
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    tie_word_embeddings=True,
    rope_theta=500000.0,
    max_position_embeddings=2048,
)
LLAMA_05B = dict(
    vocab_size=151936,
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    tie_word_embeddings=True,
    rope_theta=1000000.0,
    max_position_embeddings=2048,
)
MODELS = {  # name -> (family, config, tokenizer source, saved dtype)
    "bert-base": ("bert", {}, "minilm-l6", "float32"),
    "llama-0.5b": ("llama", LLAMA_05B, "smollm2-135m", "bfloat16"),
    "llama-1b": ("llama", LLAMA_1B, "smollm2-135m", "bfloat16"),
    "llama-1b-L4": ("llama", {**LLAMA_1B, "num_hidden_layers": 4}, "smollm2-135m", "bfloat16"),
    "llama-1b-L8": ("llama", {**LLAMA_1B, "num_hidden_layers": 8}, "smollm2-135m", "bfloat16"),
}
# (model, dtype) -> the (N texts, T tokens) cells of its forward part, smallest first
FORWARD = {
    ("bert-base", "float32"): [(64, 32), (256, 32), (32, 128), (1024, 32), (32, 512), (2048, 32)],
    ("bert-base", "bfloat16"): [(32, 32), (32, 128), (32, 512)],
    ("llama-0.5b", "float32"): [(32, 128)],
    ("llama-0.5b", "bfloat16"): [(32, 32), (32, 128), (32, 512)],
    ("llama-1b-L4", "bfloat16"): [(32, 128)],
    ("llama-1b-L8", "bfloat16"): [(32, 128)],
    ("llama-1b", "float32"): [(32, 128)],
    ("llama-1b", "bfloat16"): [(32, 32), (32, 128), (32, 512)],
}
WIDTHS = (768, 2048, 4096)
POOLED_SIZES = (64, 256, 1024, 2048)
TOKEN_LENGTHS = (32, 128, 512)
FIT_SIZES = (512, 2048)
VIEWS = 2


def non_embedding_params(model) -> int:
    embedding = model.get_input_embeddings().weight.numel()
    return sum(p.numel() for p in model.parameters()) - embedding


def build(work: Path) -> None:
    """Save every model of MODELS under work/models (once) with its tokenizer and its parameter counts."""
    import torch
    import transformers as tf

    from layerpick.core.models import load_model

    tokenizers = {}
    for name, (family, config, tokenizer_source, dtype) in MODELS.items():
        target = work / "models" / name
        if (target / "params.json").exists():
            continue
        if tokenizer_source not in tokenizers:
            tokenizers[tokenizer_source] = load_model(tokenizer_source).tokenizer
        config_class = tf.BertConfig if family == "bert" else tf.LlamaConfig
        torch.manual_seed(0)
        model = tf.AutoModel.from_config(config_class(**config), dtype=getattr(torch, dtype)).eval()
        model.save_pretrained(target)
        tokenizers[tokenizer_source].save_pretrained(target)
        counts = {
            "params": sum(p.numel() for p in model.parameters()),
            "non_embedding": non_embedding_params(model),
            "layers": model.config.num_hidden_layers,
            "hidden": model.config.hidden_size,
        }
        (target / "params.json").write_text(json.dumps(counts))
        print(f"built {name}: {counts}", flush=True)


def texts_of(tokenizer, count: int, tokens: int) -> list[str]:
    """`count` distinct texts of at least `tokens` tokens, cut from the embedded calibration set's words."""
    from layerpick.core.calibration import load_calibration

    words = " ".join(load_calibration(limit=None).texts).split()
    words, texts = words * 2, []
    for i in range(count):
        start, size = (i * 37) % (len(words) // 2), tokens
        while len(tokenizer(" ".join(words[start : start + size]))["input_ids"]) < tokens:
            size += tokens // 2 + 1
        texts.append(" ".join(words[start : start + size]))
    return texts


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def forward_cells(work: Path, model: str, dtype: str, cells: list[tuple[int, int]]) -> list[dict]:
    """One process: load once, then time layerpick's pass over each (N, T) cell."""
    from layerpick.core.collect import CollectConfig, collect
    from layerpick.core.models import LoadOptions, load_model

    loaded = load_model(str(work / "models" / model), LoadOptions(dtype=dtype, device="cpu"))
    loaded_rss = rss_mb()
    rows = []
    for count, tokens in cells:
        texts = texts_of(loaded.tokenizer, count, tokens)
        config = CollectConfig(batch_size=16, max_length=tokens, progress=False)
        collect(loaded, texts[:2], config)  # warm-up
        start = time.perf_counter()
        states = collect(loaded, texts, config)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "model": model,
                "dtype": dtype,
                "texts": count,
                "tokens": tokens,
                "seconds": seconds,
                "layers": states.num_layers,
                "peak_rss_mb": rss_mb(),
                "loaded_rss_mb": loaded_rss,
            }
        )
    return rows


def metric_cells() -> list[dict]:
    """Each metric on one layer of synthetic states, as N (pooled and views) and T (tokens) grow, per width."""
    import torch

    from layerpick.metrics.curvature import curvature
    from layerpick.metrics.dime import dime
    from layerpick.metrics.entropy import dataset_entropy, prompt_entropy
    from layerpick.metrics.infonce import infonce
    from layerpick.metrics.lidar import lidar

    pooled = {
        "dataset-entropy": lambda v: dataset_entropy(v[:, 0]),
        "dime": lambda v: dime(v[:, 0], v[:, 1]),
        "infonce": lambda v: infonce(v[:, 0], v[:, 1]),
        "lidar": lidar,
    }
    generator = torch.Generator().manual_seed(0)
    rows = []
    for dim in WIDTHS:
        for count in POOLED_SIZES:
            base = torch.randn(count, 1, dim, generator=generator)
            views = base + 0.3 * torch.randn(count, VIEWS, dim, generator=generator)
            for name, function in pooled.items():
                rows.append({"metric": name, "dim": dim, "texts": count, **measured(function, views)})
        for tokens in TOKEN_LENGTHS:
            states = torch.randn(64, tokens, dim, generator=generator)
            for name, function in (("prompt-entropy", prompt_entropy), ("curvature", curvature)):
                cost = measured(lambda: [function(text) for text in states])
                rows.append(
                    {
                        "metric": name,
                        "dim": dim,
                        "tokens": tokens,
                        "seconds": cost["seconds"] / 64,
                        "rss_growth_mb": cost["rss_growth_mb"],
                    }
                )
    return rows


def fit_cells() -> list[dict]:
    import numpy as np

    from layerpick.core.transform import fit, parse_transform

    spec = parse_transform("whiten-256")
    rng = np.random.default_rng(0)
    return [
        {"dim": dim, "texts": count, **measured(fit, spec, rng.standard_normal((count, dim)))}
        for dim in WIDTHS
        for count in FIT_SIZES
    ]


def measured(function, *args) -> dict:
    """Wall seconds of `function(*args)` and the most its call raised the process's RSS (MB), sampled every
    millisecond by a thread (torch and numpy release the GIL while they compute)."""
    start_rss = current_rss()
    peak, done = [start_rss], threading.Event()

    def sample() -> None:
        while not done.wait(0.001):
            peak[0] = max(peak[0], current_rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        function(*args)
    finally:
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
    return {"seconds": seconds, "rss_growth_mb": (max(peak[0], current_rss()) - start_rss) / 2**20}


def current_rss() -> int:
    """The process's resident set now, in bytes (/proc/self/statm)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def layerpick_cli(args: list[str], cwd: Path) -> dict:
    """`layerpick ARGS` in its own process: wall seconds and peak RSS (MB) from /usr/bin/time."""
    report = cwd / "time.txt"
    command = ["/usr/bin/time", "-f", "%e %M", "-o", str(report), str(Path(sys.executable).parent / "layerpick"), *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"layerpick {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    seconds, kilobytes = report.read_text().split()[-2:]
    return {"seconds": float(seconds), "peak_rss_mb": int(kilobytes) / 1024, "stdout": done.stdout}


def export_cells(work: Path) -> list[dict]:
    rows = []
    for model, dtype in (("bert-base", "float32"), ("llama-0.5b", "bfloat16"), ("llama-1b", "bfloat16")):
        layers = json.loads((work / "models" / model / "params.json").read_text())["layers"]
        output = work / "exports" / f"{model}-{dtype}"
        output.parent.mkdir(parents=True, exist_ok=True)
        result = layerpick_cli(
            [
                "export",
                str(work / "models" / model),
                "--layer",
                str(layers // 2),
                "--output",
                str(output),
                "--dtype",
                dtype,
                "--overwrite",
                "-q",
            ],
            output.parent,
        )
        size = sum(f.stat().st_size for f in output.rglob("*") if f.is_file()) / 2**20
        rows.append(
            {
                "model": model,
                "dtype": dtype,
                "layer": layers // 2,
                "size_mb": size,
                **{k: v for k, v in result.items() if k != "stdout"},
            }
        )
    return rows


def select_1b(work: Path) -> dict:
    """`layerpick select` on the 1B model in bfloat16 over 512 texts, 64 of them 512 tokens long."""
    from layerpick.core.calibration import load_calibration
    from layerpick.core.models import load_tokenizer

    tokenizer = load_tokenizer(str(work / "models" / "llama-1b"))
    calibration = work / "select-1b" / "calibration.txt"
    calibration.parent.mkdir(parents=True, exist_ok=True)
    texts = texts_of(tokenizer, 64, 512) + load_calibration(limit=448).texts
    calibration.write_text("\n".join(texts) + "\n")
    output = work / "select-1b" / "out"
    result = layerpick_cli(
        [
            "select",
            str(work / "models" / "llama-1b"),
            "--dtype",
            "bfloat16",
            "--calibration",
            str(calibration),
            "--limit",
            "512",
            "--max-length",
            "512",
            "--output",
            str(output),
            "--json",
            "-q",
        ],
        calibration.parent,
    )
    report = json.loads(result.pop("stdout"))
    return {
        **result,
        "selected_layer": report["selected_layer"],
        "texts": report["calibration"]["count"],
        "timings": report.get("timings"),
    }


def run_child(part: str, work: Path, *extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", part, "--work", str(work), *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"{part} {extra} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # {"rows": [...], "peak_rss_mb": ...}


def child(part: str, work: Path, extra: list[str]) -> None:
    if part == "forward":
        model, dtype = extra
        rows = forward_cells(work, model, dtype, FORWARD[(model, dtype)])
    else:
        rows = metric_cells() if part == "metrics" else fit_cells()
    print(json.dumps({"rows": rows, "peak_rss_mb": rss_mb()}))


def machine() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    flags = next((line for line in lines if line.startswith("flags")), "")
    amx = " with AMX bf16" if "amx_bf16" in flags else ""
    return f"{os.cpu_count()} cores of {names[0] if names else platform.processor() or 'a CPU'}{amx}"


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(work: Path, parts: set[str], previous: dict) -> dict:
    """The parts asked for, measured now, over the results of earlier runs (`previous`) of the other parts."""
    results = {**previous, "machine": machine()}
    results.setdefault("load", {})
    before = load_average()
    build(work)
    results["params"] = {m: json.loads((work / "models" / m / "params.json").read_text()) for m in MODELS}
    if "forward" in parts:
        results["forward"] = [
            row for model, dtype in FORWARD for row in run_child("forward", work, model, dtype)["rows"]
        ]
    for part in ("metrics", "fit"):
        if part in parts:
            measured = run_child(part, work)
            results[part], results[f"{part}_peak_rss_mb"] = measured["rows"], measured["peak_rss_mb"]
    if "export" in parts:
        results["export"] = export_cells(work)
    if "select-1b" in parts:
        results["select_1b"] = select_1b(work)
    results["load"][",".join(sorted(parts))] = [before, load_average()]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/layerpick-scale"))
    parser.add_argument("--parts", default="forward,metrics,fit,export,select-1b")
    parser.add_argument("--output", type=Path, help="the markdown table (default: print it)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.work, args.extra)
    args.work.mkdir(parents=True, exist_ok=True)
    store = args.work / "scale.json"
    previous = json.loads(store.read_text()) if store.exists() else {}
    results = measure(args.work, set(args.parts.split(",")), previous)
    parts = ",".join(sorted(args.parts.split(",")))
    results.setdefault("commands", {})[parts] = f"python benchmarks/scale.py --work {args.work} --parts {args.parts}"
    store.write_text(json.dumps(results, indent=1))
    from scale_report import render  # the tables live beside this script

    text = render(results)
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
