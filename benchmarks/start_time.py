"""How long the command line takes to answer before any work (help, a command's help, an option error, the first
error of a command that runs), before and after a change, side by side in one run.

    python benchmarks/start_time.py --before <rev> --repeats 5 --output benchmarks/results/start_time.md

`--before REV` is unpacked with `git archive` (as in `run_time.py`); the code after is this checkout. Each command
line runs as a child process with its tree first on PYTHONPATH, before and after alternating ABBA over
`--repeats` pairs, in an empty folder. The table gives the median wall-clock seconds of each and their ratio, and
checks that both trees gave the same exit code.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_time import ENTRY, load_average, unpack  # noqa: E402

COMMANDS = (
    "--help",
    "heal --help",
    "select --no-such-option",
    "export ./no-such-model --layer 1 --output out",
)


def time_once(tree: Path, line: str, folder: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env = {k: v for k, v in env.items() if not k.startswith("LAYERPICK_")}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, *shlex.split(line)], cwd=folder, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - started, done.returncode


def measure(trees: dict[str, Path], line: str, repeats: int, folder: Path) -> dict:
    seconds: dict[str, list[float]] = {name: [] for name in trees}
    codes: dict[str, set[int]] = {name: set() for name in trees}
    order = list(trees)
    for repeat in range(repeats):
        for name in order if repeat % 2 == 0 else order[::-1]:
            took, code = time_once(trees[name], line, folder)
            seconds[name].append(took)
            codes[name].add(code)
    if len({frozenset(c) for c in codes.values()}) != 1:
        raise SystemExit(f"{line!r}: the trees exit differently: {codes}")
    return {"line": line, "code": codes[order[0]], **{name: statistics.median(s) for name, s in seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="start-time-"))
    trees = {"before": unpack(args.before, scratch / "before"), "after": Path(__file__).resolve().parents[1]}
    folder = scratch / "cwd"
    folder.mkdir()
    load = load_average()
    rows = [measure(trees, line, args.repeats, folder) for line in COMMANDS]
    lines = [
        "# How long the command line takes to answer (before any work)",
        "",
        f"Command: `python benchmarks/start_time.py {shlex.join(sys.argv[1:])}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load} before, {load_average()} "
        f"after. Median of {args.repeats} runs each, before and after alternating ABBA; 'before' is {args.before}.",
        "",
        "| command line | exit code | before (s) | after (s) | before / after |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        code = ",".join(str(c) for c in sorted(row["code"]))
        lines.append(
            f"| `layerpick {row['line']}` | {code} | {row['before']:.2f} | {row['after']:.2f} | "
            f"{row['before'] / row['after']:.1f}x |"
        )
    args.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(args.output.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
