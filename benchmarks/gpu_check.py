"""The heavy steps of `benchmarks/gpu_check.sh`: picks on CPU and CUDA, cuts benched in half precision, gpu.md.

    python benchmarks/gpu_check.py picks --data ../shared/data --work /tmp/gpu-check
    python benchmarks/gpu_check.py cuts --work /tmp/gpu-check
    python benchmarks/gpu_check.py report --work /tmp/gpu-check --output benchmarks/results/gpu.md

`picks`: every packaged model that is installed, selected (a seeded sample of calibration texts, no transform)
and validated at every layer on subsampled STS task folders (as `rule_evidence.py` subsamples them), on the CPU
in float32 and with `--device cuda` in float16 and bfloat16. The GPU rows must pick the CPU's layer and stay
within SCORE_TOLERANCE of its mean task score at every layer. `cuts`: several cuts of each model timed against
the full model in half precision on the GPU at batch 1, 32 and 256 (the library's `run_cuts`, as `bench
--layers` runs it). `report`: benchmarks/results/gpu.md with the device name; exit 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rule_evidence import task_folders  # noqa: E402  (the subsampling rule_evidence.py uses)

from layerpick.core import registry  # noqa: E402
from layerpick.core.collect import CollectConfig  # noqa: E402
from layerpick.core.models import LoadOptions  # noqa: E402
from layerpick.errors import LayerpickError  # noqa: E402

MODELS = ("minilm-l6", "smollm2-135m", "gemma3-270m")
TASKS = ["STSBenchmark", "SICK-R", "BIOSSES"]
PRECISIONS = (("cpu", "float32"), ("cuda", "float16"), ("cuda", "bfloat16"))
SCORE_TOLERANCE = 0.01  # absolute, on the mean main score at any layer, GPU half precision against CPU float32
LIMIT, MAX_LENGTH, MAX_ROWS = 128, 128, 100
CUTS = {"minilm-l6": "2,4", "smollm2-135m": "2,8,25", "gemma3-270m": "3,9,15"}
BATCH_SIZES, BENCH_TEXTS, BENCH_DTYPE = (1, 32, 256), 256, "float16"


def installed_models() -> list[str]:
    return [name for name in MODELS if registry.get_entry(name).is_installed()]


def pick_row(model: str, folders: list[str], device: str, dtype: str, work: Path) -> dict:
    """Select and validate `model` on `device` in `dtype`; a one-line layerpick error (float16 overflow) is a
    row, not a crash."""
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.job import run_select
    from layerpick.validation.config import ValidateConfig
    from layerpick.validation.run import run_validation

    options, started = LoadOptions(device=device, dtype=dtype), time.perf_counter()
    collect = CollectConfig(max_length=MAX_LENGTH, progress=False)
    folder = work / f"{model}-{device}-{dtype}"
    try:
        report = run_select(model, options, SelectConfig(limit=LIMIT, transform="none", collect=collect))
        validation = run_validation(
            model,
            folders,
            ValidateConfig(
                layers="all",
                output_dir=folder / "validate",
                store_dir=folder / "store",
                max_length=MAX_LENGTH,
                transform="none",
                progress=False,
            ),
            load_options=options,
        )
    except LayerpickError as error:
        return {"model": model, "device": device, "dtype": dtype, "error": str(error)}
    return {
        "model": model,
        "device": device,
        "dtype": dtype,
        "pick": report.selected_layer,
        "mean_by_layer": validation.report.mean_by_layer,
        "seconds": round(time.perf_counter() - started, 1),
    }


def picks(args) -> None:
    folders = task_folders(args.data, args.work, MAX_ROWS, TASKS)
    rows = [
        pick_row(model, folders, device, dtype, args.work)
        for model in installed_models()
        for device, dtype in PRECISIONS
    ]
    (args.work / "picks.json").write_text(json.dumps(rows, indent=2))


def cuts(args) -> None:
    from layerpick.benchmark.config import BenchConfig
    from layerpick.benchmark.cuts import plan_cuts, run_cuts
    from layerpick.benchmark.cuts_output import to_markdown

    config = BenchConfig(batch_sizes=BATCH_SIZES, texts=BENCH_TEXTS, device="cuda", memory=True)
    tables = {}
    for model in installed_models():
        result = run_cuts(plan_cuts(model, CUTS[model]), config, LoadOptions(device="cuda", dtype=BENCH_DTYPE))
        tables[model] = to_markdown(result)
    (args.work / "cuts.json").write_text(json.dumps(tables, indent=2))


def judge(rows: list[dict]) -> list[dict]:
    """Each GPU row against its model's CPU row: same pick, largest score difference within the tolerance."""
    cpu = {row["model"]: row for row in rows if row["device"] == "cpu"}
    for row in rows:
        reference = cpu.get(row["model"])
        if row["device"] == "cpu" or "error" in row or reference is None or "error" in reference:
            row["ok"] = row["device"] == "cpu" and "error" not in row
            continue
        pairs = zip(row["mean_by_layer"], reference["mean_by_layer"])
        row["max_score_diff"] = max(abs(a - b) for a, b in pairs if a is not None and b is not None)
        row["ok"] = row["pick"] == reference["pick"] and row["max_score_diff"] <= SCORE_TOLERANCE
    return rows


def pick_lines(rows: list[dict]) -> list[str]:
    lines = [
        "| model | device | dtype | pick | max |score diff| vs CPU | seconds | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['model']} | {row['device']} | {row['dtype']} | – | – | – | error: {row['error']} |")
            continue
        diff = f"{row['max_score_diff']:.4f}" if "max_score_diff" in row else "(reference)"
        lines.append(
            f"| {row['model']} | {row['device']} | {row['dtype']} | {row['pick']} | {diff} | "
            f"{row['seconds']} | {'ok' if row['ok'] else 'FAILED'} |"
        )
    return lines


def report(args) -> None:
    rows = judge(json.loads((args.work / "picks.json").read_text()))
    tables = json.loads((args.work / "cuts.json").read_text())
    tests = (args.work / "tests.txt").read_text().strip().splitlines()
    lines = [
        "# GPU check",
        "",
        f"Device: {torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA "
        f"{torch.version.cuda}). Command: `bash benchmarks/gpu_check.sh` ({args.seconds} s in all).",
        "",
        "## The CUDA test subset (`pytest -m cuda`)",
        "",
        f"`{tests[-1] if tests else '(no output)'}`",
        "",
        "## Picks and scores: CPU float32 against CUDA float16 and bfloat16",
        "",
        f"Select: {LIMIT} calibration texts, max length {MAX_LENGTH}, no transform, the default rule. Validate: "
        f"every layer on {', '.join(TASKS)}, at most {MAX_ROWS} test rows each (seeded). A GPU row passes "
        f"with the CPU's pick and every layer's mean score within {SCORE_TOLERANCE} of the CPU's.",
        "",
        *pick_lines(rows),
        "",
        f"## Cuts in {BENCH_DTYPE} on the GPU, batch {', '.join(map(str, BATCH_SIZES))}",
        "",
    ]
    for model, table in tables.items():
        lines += [table.replace("# layerpick bench:", f"### {model}:", 1), ""]
    args.output.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")
    if not all(row["ok"] for row in rows):
        sys.exit("gpu_check: a GPU pick or score differs from the CPU's beyond the tolerance (see gpu.md)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("picks", "cuts", "report"))
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/gpu.md"))
    parser.add_argument("--seconds", type=int, default=0, help="the whole check's wall time, for the report")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    {"picks": picks, "cuts": cuts, "report": report}[args.step](args)


if __name__ == "__main__":
    main()
