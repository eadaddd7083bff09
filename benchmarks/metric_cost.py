"""What the metrics cost next to the forward passes they need, and how metric time grows with N and L.

Part 1 (real model): `score_layers` with all six metrics on the embedded calibration set; forward time and
metric time are timed separately inside the same run (token-level metrics run inside the forward pass and
their time is subtracted from it). Part 2 (synthetic states, D = 576 like SmolLM2): each dataset-level metric
timed on one layer as N grows, and on every layer as L grows.

    python benchmarks/metric_cost.py --model smollm2-135m --texts 512 --output benchmarks/results/metric_cost.md
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import torch

from layerpick.core.calibration import load_calibration
from layerpick.core.collect import CollectConfig
from layerpick.core.models import load_model
from layerpick.metrics import list_metrics
from layerpick.metrics.curvature import curvature
from layerpick.metrics.dime import dime
from layerpick.metrics.entropy import dataset_entropy, prompt_entropy
from layerpick.metrics.infonce import infonce
from layerpick.metrics.lidar import lidar
from layerpick.selection.scoring import ScoringConfig, score_layers

DATASET_METRICS = {
    "dataset-entropy": lambda v: dataset_entropy(v[:, 0]),
    "dime": lambda v: dime(v[:, 0], v[:, 1]),
    "infonce": lambda v: infonce(v[:, 0], v[:, 1]),
    "lidar": lambda v: lidar(v),
}


def real_model_part(model: str, texts: int, views: int) -> list[str]:
    loaded = load_model(model)
    sample = load_calibration(limit=texts).texts
    start = time.perf_counter()
    result = score_layers(loaded, sample, list_metrics(), CollectConfig(progress=False), ScoringConfig(views=views))
    total = time.perf_counter() - start
    forward, metrics = result.timings["forward_s"], result.timings["metrics_s"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return [
        f"## {model}: {len(sample)} texts, {loaded.num_layers + 1} layers, all six metrics, {views} views",
        "",
        "| forward passes s | metrics s | metrics / forward | total s | peak RSS MB |",
        "|---|---|---|---|---|",
        f"| {forward:.1f} | {metrics:.1f} | **{metrics / forward:.1%}** | {total:.1f} | {rss:.0f} |",
        "",
        f"Forward passes: the calibration texts once plus {views} augmented views of each ({len(sample) * (1 + views)} "
        "texts in all). Target: metrics add at most 30% on top of the forward passes.",
    ]


def synthetic(num_texts: int, views: int, dim: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    base = torch.randn(num_texts, 1, dim, generator=generator)
    return base + 0.3 * torch.randn(num_texts, views, dim, generator=generator)


def timed(function, *args) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def growth_in_n(sizes: list[int], dim: int, views: int) -> list[str]:
    lines = [
        "## Metric time on ONE layer as N grows (synthetic, D = %d, %d views)" % (dim, views),
        "",
        "| N | " + " | ".join(DATASET_METRICS) + " | prompt-entropy + curvature (N texts of 32 tokens) |",
        "|---" * (len(DATASET_METRICS) + 2) + "|",
    ]
    for n in sizes:
        states = synthetic(n, views, dim)
        cells = [f"{timed(f, states):.3f}" for f in DATASET_METRICS.values()]
        tokens = torch.randn(n, 32, dim)
        token_time = timed(lambda: [(prompt_entropy(t), curvature(t)) for t in tokens])
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {token_time:.3f} |")
    return lines + ["", "Seconds. DiME is N x N eigendecompositions (1 + 10 permutations): O(N^3)."]


def growth_in_l(layer_counts: list[int], n: int, dim: int, views: int) -> list[str]:
    lines = [
        f"## Metric time on ALL layers as L grows (synthetic, N = {n}, D = {dim})",
        "",
        "| L | all dataset-level metrics s | per layer s |",
        "|---|---|---|",
    ]
    for layers in layer_counts:
        states = [synthetic(n, views, dim, seed=k) for k in range(layers + 1)]
        seconds = timed(lambda: [f(s) for s in states for f in DATASET_METRICS.values()])
        lines.append(f"| {layers} | {seconds:.2f} | {seconds / (layers + 1):.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--sizes", default="256,512,1024,2048")
    parser.add_argument("--layers", default="6,18,30")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.manual_seed(0)
    lines = [
        "# Metric cost",
        "",
        f"Command: `python benchmarks/metric_cost.py --model {args.model} --texts {args.texts} "
        f"--views {args.views} --sizes {args.sizes} --layers {args.layers}`",
        "",
    ]
    lines += real_model_part(args.model, args.texts, args.views) + [""]
    lines += growth_in_n([int(x) for x in args.sizes.split(",")], 576, args.views) + [""]
    lines += growth_in_l([int(x) for x in args.layers.split(",")], 512, 576, args.views)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
