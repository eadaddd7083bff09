"""What fewer augmented views change in LiDAR: the per-layer curve and the layer it picks, V = 2..16.

One forward pass over 16 views of every text; LiDAR with V views uses the first V of them, so the
comparison isolates the number of views (the paper uses V = 16; layerpick's default is 4).

    python benchmarks/lidar_views.py --model minilm-l6 --texts 128
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from scipy.stats import spearmanr

from layerpick.core.calibration import load_calibration
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import load_model
from layerpick.metrics.lidar import lidar
from layerpick.selection.views import make_views

VIEW_COUNTS = (2, 4, 8, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-l6")
    parser.add_argument("--texts", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    loaded = load_model(args.model)
    texts = load_calibration(limit=args.texts).texts
    views = make_views(texts, max(VIEW_COUNTS), seed=0)
    start = time.perf_counter()
    pooled = collect(
        loaded, [v for per_text in views for v in per_text], CollectConfig(max_length=args.max_length, progress=False)
    ).pooled
    forward = time.perf_counter() - start
    pooled = pooled.reshape(pooled.shape[0], len(texts), max(VIEW_COUNTS), -1)
    curves = {v: [lidar(layer[:, :v]) for layer in pooled] for v in VIEW_COUNTS}
    reference = curves[max(VIEW_COUNTS)]
    lines = [
        f"# LiDAR with fewer views: {args.model}, {len(texts)} texts",
        "",
        f"Command: `python benchmarks/lidar_views.py --model {args.model} --texts {args.texts} "
        f"--max-length {args.max_length}`",
        "",
        f"Forward pass over {len(texts) * max(VIEW_COUNTS)} view texts: {forward:.1f} s "
        "(the cost of views grows linearly with V).",
        "",
        "| views V | argmax layer (1..L) | Spearman vs V=16 over layers | LiDAR by layer |",
        "|---|---|---|---|",
    ]
    for v, curve in curves.items():
        best = max(range(1, len(curve)), key=lambda k: curve[k])
        rho = spearmanr(curve[1:], reference[1:]).statistic
        lines.append(f"| {v} | {best} | {rho:+.3f} | " + ", ".join(f"{x:.2f}" for x in curve) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
