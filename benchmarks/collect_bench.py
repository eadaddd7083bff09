"""Collection cost: layerpick's one-pass collection against a plain `output_hidden_states=True` loop.

Both run over the same texts in the same length-sorted batches, alternately, each in a fresh subprocess
(so each reports its own peak RSS). The ratio of medians is the number that matters.

    python benchmarks/collect_bench.py --model smollm2-135m --texts 512 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run_one(mode: str, model: str, texts: int, batch_size: int) -> dict:
    import torch

    from layerpick.core.calibration import load_calibration
    from layerpick.core.collect import CollectConfig, collect
    from layerpick.core.models import load_model

    torch.set_grad_enabled(False)
    loaded = load_model(model)
    sample = load_calibration(limit=texts).texts
    config = CollectConfig(batch_size=batch_size, progress=False)
    start = time.perf_counter()
    if mode == "plain":
        _plain_loop(loaded, sample, config)
    else:
        collect(loaded, sample, config)
    seconds = time.perf_counter() - start
    return {
        "mode": mode,
        "seconds": seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "texts": len(sample),
        "layers": loaded.num_layers,
    }


def _plain_loop(loaded, texts, config) -> None:
    """What a user would write: the same sorted batches, `output_hidden_states=True`, nothing kept."""
    from layerpick.core.collect import token_lengths

    lengths = token_lengths(loaded.tokenizer, texts, config.max_length)
    order = sorted(range(len(texts)), key=lambda i: -lengths[i])
    for start in range(0, len(order), config.batch_size):
        batch = [texts[i] for i in order[start : start + config.batch_size]]
        encoded = loaded.tokenizer(
            batch, padding=True, truncation=True, max_length=config.max_length, return_tensors="pt"
        )
        loaded.model(**encoded, output_hidden_states=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=["plain", "collect"])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.model, args.texts, args.batch_size)))
        return
    runs = {"plain": [], "collect": []}
    for _ in range(args.repeats):
        for mode in ("plain", "collect"):
            command = [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--model",
                args.model,
                "--texts",
                str(args.texts),
                "--batch-size",
                str(args.batch_size),
            ]
            result = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[mode].append(json.loads(result.stdout.strip().splitlines()[-1]))
    table = _table(args, runs)
    print(table)
    if args.output:
        args.output.write_text(table)


def _seconds(runs) -> str:
    return ", ".join(f"{r['seconds']:.2f}" for r in runs)


def _table(args, runs) -> str:
    plain = statistics.median(r["seconds"] for r in runs["plain"])
    ours = statistics.median(r["seconds"] for r in runs["collect"])
    rss = {m: max(r["peak_rss_mb"] for r in runs[m]) for m in runs}
    first = runs["collect"][0]
    lines = [
        f"# Collection cost: {args.model}, {first['texts']} texts, {first['layers'] + 1} layers, batch "
        f"{args.batch_size}",
        "",
        f"Command: `python benchmarks/collect_bench.py --model {args.model} --texts {args.texts} "
        f"--batch-size {args.batch_size} --repeats {args.repeats}`",
        "",
        "| method | median s | runs (s) | peak RSS MB |",
        "|---|---|---|---|",
        f"| plain loop, output_hidden_states=True | {plain:.2f} | {_seconds(runs['plain'])} | {rss['plain']:.0f} |",
        f"| layerpick collect (all layers pooled) | {ours:.2f} | {_seconds(runs['collect'])} | {rss['collect']:.0f} |",
        "",
        f"**ratio collect / plain = {ours / plain:.3f}** (target <= 1.2). Runs alternate, each in a fresh process.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
