"""How much faster is an exported (cut) model than its full model, next to the ideal its kept compute implies?

For each model and layer K: export the model cut after layer K (`layerpick.exporting.job.export_model`; or, when
that is missing, a cut built here with `load_model` + `surgery.truncate_` + sentence-transformers
Transformer + Pooling), run `layerpick.benchmark.run.run_bench` (both models timed side by side in one process with
interleaved repeats; peak memory per model in fresh processes), and compare the measured throughput ratio
with the ideal one.

Ideal speed-up. Per token, a model spends E on work outside its blocks (embedding lookup: a gather, ~0
FLOPs; Gemma's sqrt(d) scale, the final norm and the pooling: a few d) and B in each block:
    B = 2·d·hd·(2·h + 2·kv)        q, k, v, o projections (h query heads, kv key/value heads of size hd)
      + 2·2·h·hd·T_keys            scores (QKᵀ) and the weighted sum (AV) over T_keys keys per token
      + m·2·d·ff                   the MLP: m = 3 matrices when gated (Llama, Gemma), 2 otherwise
with T_keys = (T + 1) / 2 for causal models (mean over positions), T for bidirectional ones, T = the
texts' mean token count. A model cut after K of L blocks keeps E + K·B of E + L·B, so
    ideal speed-up = (E + L·B) / (E + K·B)  ≈  L / K   (E is tiny next to B).
Tokenisation, Python overhead and the batch padding are outside this count: they cost the same in both
models, which is why batch size 1 (where they weigh most) falls further below the ideal than batch 32.

Usage:
    python benchmarks/export_speedup.py --layers 15 [--report select-report.json] [--gemma-layers 9] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from layerpick.benchmark.run import BenchConfig, bench_texts, run_bench
from layerpick.core import registry

logger = logging.getLogger("export_speedup")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = ROOT / "benchmarks" / "results" / "export_speedup.md"
TARGET = 0.85
GATED = {"llama", "mistral", "qwen2", "qwen3", "gemma3_text"}
CAUSAL_EXCEPTIONS = {"bert", "roberta", "xlm-roberta"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="15", help="comma-separated K values for smollm2-135m")
    parser.add_argument("--report", type=Path, help="a `layerpick select` report: its selected layer is added")
    parser.add_argument("--gemma-layers", default="9", help="K values for gemma3-270m (when installed)")
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument("--texts", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--workdir", type=Path, help="where exports go (default: a temporary directory)")
    parser.add_argument("--threads", type=int, help="torch threads for the timing (default: torch's choice)")
    return parser.parse_args(argv)


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def smollm_layers(args: argparse.Namespace) -> list[int]:
    layers = _ints(args.layers)
    if args.report:
        selected = json.loads(args.report.read_text())["selected_layer"]
        layers += [int(selected)] if int(selected) not in layers else []
    return layers


# ---------------------------------------------------------------------------------------------- export


def export(alias: str, layer: int, target: Path) -> str:
    """Write the cut model to `target`; return how it was made."""
    try:
        from layerpick.exporting.config import ExportConfig
        from layerpick.exporting.job import export_model
    except ImportError:
        export_model = None
    if export_model is not None:
        export_model(alias, layer, target, ExportConfig(overwrite=True, progress=False))
        return "layerpick.exporting.job.export_model"
    _export_here(alias, layer, target)
    return "built in this script (load_model + truncate_ + Transformer + Pooling): layerpick.exporting.job was missing"


def _export_here(alias: str, layer: int, target: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from layerpick.core import surgery
    from layerpick.core.models import load_model

    loaded = load_model(alias)
    num_layers = loaded.num_layers
    surgery.truncate_(loaded.model, layer)
    tokenizer = loaded.tokenizer
    tokenizer.chat_template = None  # sentence-transformers 6 would route plain strings through it
    with tempfile.TemporaryDirectory() as staging:
        loaded.model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        transformer = Transformer(staging, max_seq_length=512)
        pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=loaded.family.default_pooling)
        SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(target))
    meta = {
        "source": {"model": alias, "path": loaded.path},
        "layer": layer,
        "num_layers": num_layers,
        "pooling": loaded.family.default_pooling,
    }
    (target / "layerpick.json").write_text(json.dumps(meta, indent=2))


# ---------------------------------------------------------------------------------------------- compute


def flops_per_token(config, tokens: float) -> tuple[float, float]:
    """(E, B): FLOPs per token outside the blocks and in one block (see the module docstring)."""
    d, heads, ff = config.hidden_size, config.num_attention_heads, config.intermediate_size
    head_dim = getattr(config, "head_dim", None) or d // heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    keys = tokens if config.model_type in CAUSAL_EXCEPTIONS else (tokens + 1) / 2
    projections = 2 * d * head_dim * (2 * heads + 2 * kv)
    attention = 2 * 2 * heads * head_dim * keys
    mlp = (3 if config.model_type in GATED else 2) * 2 * d * ff
    outside = 6 * d  # embedding scale, final norm, pooling: a few d; the lookup itself is a gather
    return float(outside), float(projections + attention + mlp)


def ideal_speedup(export_dir: Path, layer: int, num_layers: int, texts: list[str]) -> dict:
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(str(export_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(export_dir))
    tokens = sum(len(ids) for ids in tokenizer(texts)["input_ids"]) / len(texts)
    outside, block = flops_per_token(config, tokens)
    full, cut = outside + num_layers * block, outside + layer * block
    return {
        "mean_tokens": tokens,
        "block_mflops": block / 1e6,
        "outside_mflops": outside / 1e6,
        "full_mflops": full / 1e6,
        "cut_mflops": cut / 1e6,
        "ideal": full / cut,
    }


# ---------------------------------------------------------------------------------------------- runs


def run_one(alias: str, layer: int, args: argparse.Namespace, workdir: Path) -> dict:
    target = workdir / f"{alias}-k{layer}"
    started = time.perf_counter()
    how = export(alias, layer, target)
    meta = json.loads((target / "layerpick.json").read_text())
    logger.info("exported %s K=%d in %.0f s (%s)", alias, layer, time.perf_counter() - started, how)
    config = BenchConfig(batch_sizes=tuple(_ints(args.batch_sizes)), texts=args.texts, repeats=args.repeats)
    result = run_bench(target, config)
    ideal = ideal_speedup(target, layer, int(meta["num_layers"]), bench_texts(args.texts))
    return {
        "model": alias,
        "layer": layer,
        "num_layers": int(meta["num_layers"]),
        "export": how,
        "ideal": ideal,
        "result": result.to_json(),
        "notes": result.notes,
    }


def machine() -> dict:
    import torch

    versions = {name: _version(name) for name in ("torch", "transformers", "sentence-transformers")}
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        **versions,
    }


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# ---------------------------------------------------------------------------------------------- report


def render(runs: list[dict], command: str, env: dict, loads: tuple[str, str], elapsed: float) -> str:
    lines = [
        "# Export speed-up: exported (cut) model vs full model",
        "",
        f"Command (from the repository root), {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {elapsed / 60:.1f} min:",
        "",
        "```",
        command,
        "```",
        "",
        f"Machine: {env['cpus']} CPUs, torch {env['torch']} ({env['torch_threads']} threads), transformers "
        f"{env['transformers']}, sentence-transformers {env['sentence-transformers']}, Python {env['python']}, "
        f"{env['platform']}. Load average (1, 5, 15 min) before: {loads[0]}; after: {loads[1]}.",
        "",
        "Speed-up = exported texts/s ÷ full texts/s on the same texts and batches in one process, the two models "
        "alternating batch by batch (A B, B A, ...; median of the repeats). Ideal = (E + L·B) ÷ (E + K·B) "
        "from FLOPs per token (formula in "
        "`benchmarks/export_speedup.py`); it is ≈ L/K because the blocks hold nearly all the compute. "
        f"Target: at least {TARGET:.0%} of ideal at batch size 32. Memory = peak memory the model adds to a fresh "
        "process (RSS on CPU), exported ÷ full; params = exported ÷ full parameter count.",
        "",
        "| model | K / L | batch | texts/s export | texts/s full | speed-up | ideal | % of ideal | p50 latency ms "
        "export / full | peak MB export / full | memory | params |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        lines += [_row(run, row) for row in run["result"]["rows"]]
    lines += [
        "",
        *_verdicts(runs),
        "",
        "## Notes",
        "",
        *_load_note(loads, env["cpus"]),
        "- Batch size 1 lands further below the ideal than batch 32: tokenisation and the Python work of each "
        "`encode` call cost both models the same, and at one text per call they weigh the most.",
    ]
    lines += [_run_note(run) for run in runs]
    notes = sorted({note for run in runs for note in run["notes"]})
    lines += [f"- {note}" for note in notes]
    memory = {run["result"]["memory_method"] for run in runs} - {None}
    lines += [f"- memory method: {method}" for method in sorted(memory)]
    lines += [
        "- The embedding matrix is kept whole by every cut, so parameter and memory ratios stay well above "
        "K/L (most of all for Gemma-3-270M, whose 262k-token embedding holds 170 M of its 268 M parameters).",
        "",
        "<details><summary>raw results (JSON)</summary>",
        "",
        "```json",
        json.dumps(runs, indent=1),
        "```",
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)


def _load_note(loads: tuple[str, str], cpus: int | None) -> list[str]:
    """A warning when other work shared the machine: absolute numbers then mean little, ratios still hold."""
    try:
        busiest = max(float(value) for text in loads for value in text.split())
    except ValueError:
        return []
    if cpus is None or busiest <= cpus:
        return []
    return [
        f"- The machine was shared with other jobs (load average up to {busiest:.1f} on {cpus} CPUs): absolute "
        "texts/s and latencies are several times worse than on an idle machine. The ratios still compare like "
        "with like, because both models met the same load, batch by batch."
    ]


def _run_note(run: dict) -> str:
    ideal = run["ideal"]
    return (
        f"- {run['model']} K={run['layer']}: exported with {run['export']}; mean {ideal['mean_tokens']:.1f} "
        f"tokens per text; per token one block costs {ideal['block_mflops']:.2f} MFLOPs, the rest of the model "
        f"{ideal['outside_mflops']:.3f} MFLOPs."
    )


def _row(run: dict, row: dict) -> str:
    exported, full = row["exported"], row["baseline"]
    ideal = run["ideal"]["ideal"]
    share = row["throughput_ratio"] / ideal
    mb = lambda value: "-" if value is None else f"{value / 1e6:.0f}"  # noqa: E731
    memory = "-" if row["memory_ratio"] is None else f"{row['memory_ratio']:.2f}"
    return (
        f"| {run['model']} | {run['layer']} / {run['num_layers']} | {row['batch_size']} | "
        f"{exported['texts_per_s']:.1f} | {full['texts_per_s']:.1f} | {row['throughput_ratio']:.2f}x | "
        f"{ideal:.2f}x | {share:.0%} | {exported['latency_median_ms']:.1f} / {full['latency_median_ms']:.1f} | "
        f"{mb(exported['peak_memory_bytes'])} / {mb(full['peak_memory_bytes'])} | {memory} | "
        f"{run['result']['parameter_ratio']:.2f} |"
    )


def _verdicts(runs: list[dict]) -> list[str]:
    out = []
    for run in runs:
        for row in run["result"]["rows"]:
            if row["batch_size"] != 32:
                continue
            share = row["throughput_ratio"] / run["ideal"]["ideal"]
            verdict = "meets" if share >= TARGET else "does NOT meet"
            out.append(
                f"- {run['model']} K={run['layer']}, batch 32: {share:.0%} of ideal, {verdict} the {TARGET:.0%} target."
            )
    return out


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    for noisy in ("sentence_transformers", "transformers", "layerpick", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    args = parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    plan = [("smollm2-135m", k) for k in smollm_layers(args)]
    if registry.ENTRIES["gemma3-270m"].is_installed():
        plan += [("gemma3-270m", k) for k in _ints(args.gemma_layers)]
    else:
        logger.info("gemma3-270m is not installed: skipped")
    command = shlex.join(["python", "benchmarks/export_speedup.py", *(sys.argv[1:] if argv is None else argv)])
    load_before, started, runs = _load(), time.perf_counter(), []
    with tempfile.TemporaryDirectory(prefix="export-speedup-") as scratch:
        workdir = args.workdir or Path(scratch)
        for alias, layer in plan:
            logger.info("benchmarking %s at K=%d", alias, layer)
            runs.append(run_one(alias, layer, args, workdir))
            _log_run(runs[-1])
            write(args.output, render(runs, command, machine(), (load_before, _load()), time.perf_counter() - started))
    logger.info("wrote %s", args.output)


def write(path: Path, text: str) -> None:
    """Write the results so far (after every run, so an interrupted benchmark keeps what it measured)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _log_run(run: dict) -> None:
    for row in run["result"]["rows"]:
        logger.info(
            "%s K=%d batch %d: speed-up %.2fx (ideal %.2fx), memory ratio %s",
            run["model"],
            run["layer"],
            row["batch_size"],
            row["throughput_ratio"],
            run["ideal"]["ideal"],
            row["memory_ratio"],
        )


if __name__ == "__main__":
    main()
