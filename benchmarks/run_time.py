"""How long `layerpick run` with no options takes, before and after a change, on the same machine in one run.

`--before REV` is a git revision of this repository (the code before the change); the code after it is this
checkout. The revision is unpacked with `git archive` into a scratch folder (no worktree is touched). Each
variant runs `layerpick run` exactly as the README's first command does (no options: the default model, the
embedded calibration set, select + export + bench), in a fresh empty folder, as a child process with its
own tree first on PYTHONPATH. Variants alternate ABBA over `--repeats` pairs so that a change in the
machine's load falls on both. The table gives wall-clock seconds, each stage's seconds (run.json), the
layer each run selected and exported, and the load average before and after each run; the script fails
if the two variants select different layers.

    python benchmarks/run_time.py --before <rev> --output benchmarks/results/run_time.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from layerpick.cli.app import main; sys.argv[0] = 'layerpick'; main()"
STAGES = ("select", "validate", "export", "bench")


def unpack(revision: str, target: Path) -> Path:
    """The repository at `revision`, unpacked into `target`, with its layerpick/cli link as in a checkout."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="tar")
    return target


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "n/a"


def run_once(tree: Path, scratch: Path, label: str, args: list[str]) -> dict:
    """`layerpick run ARGS` with `tree` first on the path, in a new empty folder; what it took and picked."""
    folder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=scratch))
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env = {k: v for k, v in env.items() if not k.startswith("LAYERPICK_") or k == "LAYERPICK_CACHE"}
    before = load_average()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, "run", *args], cwd=folder, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{label}: layerpick run failed:\n{done.stderr[-3000:]}")
    out = folder / "layerpick-out" / "smollm2-135m" / "run"
    stages = json.loads((out / "run.json").read_text())["stages"]
    select = json.loads((out / "select" / "report.json").read_text())
    export = json.loads((out / "model" / "layerpick.json").read_text())
    return {
        "label": label,
        "seconds": seconds,
        "stages": {s: stages[s]["seconds"] for s in STAGES if s in stages},
        "selected": select["selected_layer"],
        "exported": export["layer"],
        "texts": select["calibration"]["count"],
        "views": select.get("views"),
        "load_before": before,
        "load_after": load_average(),
    }


def warm_up(tree: Path) -> None:
    """Load the default model once (its GGUF weights are dequantised and cached the first time)."""
    code = "from layerpick.core.models import LoadOptions, load_model; load_model('smollm2-135m', LoadOptions())"
    subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(tree)}, check=True, capture_output=True
    )


def render(runs: list[dict], args) -> str:
    lines = [
        "# `layerpick run` (no options): before and after",
        "",
        f"Command: `python benchmarks/run_time.py --before {args.before} --repeats {args.repeats}"
        + (f" --run-args '{args.run_args}'" if args.run_args else "")
        + "`",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}. "
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. `before` is revision `{args.before}` "
        f"({args.before_commit}), `after` is {args.after_commit}; they ran alternately (ABBA), each in a fresh "
        "folder as the README's first command, `layerpick run` with no options.",
        "",
        "| run | variant | wall s | select s | export s | bench s | calibration texts | views | selected | "
        "exported | load avg before | load avg after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for index, run in enumerate(runs, 1):
        stage = run["stages"]
        lines.append(
            f"| {index} | {run['label']} | {run['seconds']:.1f} | {stage.get('select', 0):.1f} | "
            f"{stage.get('export', 0):.1f} | {stage.get('bench', 0):.1f} | {run['texts']} | {run['views']} | "
            f"{run['selected']} | {run['exported']} | {run['load_before']} | {run['load_after']} |"
        )
    before = statistics.median(r["seconds"] for r in runs if r["label"] == "before")
    after = statistics.median(r["seconds"] for r in runs if r["label"] == "after")
    layers = {r["label"]: r["selected"] for r in runs}
    lines += [
        "",
        f"**after / before = {after / before:.2f}** (median wall seconds {after:.1f} / {before:.1f}; "
        "target at most 0.50); selected layer before "
        f"{layers['before']}, after {layers['after']} (must be the same).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision of the code before the change")
    parser.add_argument("--repeats", type=int, default=1, help="ABBA pairs: 1 runs before, after")
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--run-args",
        default="",
        help="extra `layerpick run` options (e.g. '--bench-texts 8' for a quick check of the script itself)",
    )
    args = parser.parse_args()
    git = ["git", "rev-parse", "--short"]
    args.before_commit = subprocess.run(
        [*git, args.before], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    args.after_commit = subprocess.run(
        [*git, "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    args.after_commit += " with uncommitted changes" if dirty else ""
    run_args = args.run_args.split()
    with tempfile.TemporaryDirectory(prefix="layerpick-run-time-") as scratch:
        trees = {"before": unpack(args.before, Path(scratch) / "before"), "after": ROOT}
        warm_up(trees["after"])
        order = [("before", "after") if i % 2 == 0 else ("after", "before") for i in range(args.repeats)]
        runs = []
        for pair in order:
            for label in pair:
                runs.append(run_once(trees[label], Path(scratch), label, run_args))
                print(f"{label}: {runs[-1]['seconds']:.1f} s, layer {runs[-1]['selected']}", file=sys.stderr)
    text = render(runs, args)
    if args.output:
        args.output.write_text(text)
    print(text)
    if len({r["selected"] for r in runs}) != 1:
        raise SystemExit("the variants selected different layers")


if __name__ == "__main__":
    main()
