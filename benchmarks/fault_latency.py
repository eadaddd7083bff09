"""How long a user waits for the one-line answer to a fault (issue 13): wall time of the real `layerpick`
entry point, from start to exit, for faults that used to cost seconds to minutes.

Each case runs `--repeats` times in a fresh process; the table gives the median and the exit code. The
`--version` row is the floor (no torch import); the others pay for importing torch and transformers, which
is most of their time. The cases use only what every install has: the tiny model is built here.

    python benchmarks/fault_latency.py --repeats 3 --output benchmarks/results/fault_latency.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = [sys.executable, "-c", "from layerpick.cli.app import main; main()"]


def cases(tiny: Path, work: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    online = {"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": ""}
    return [
        ("--version", ["--version"], {}),
        ("hub-id typo, HF_HUB_OFFLINE=1", ["collect", "minilm/l6", "-q"], {"HF_HUB_OFFLINE": "1"}),
        ("hub-id typo, online mode (hub unreachable or 404)", ["collect", "minilm/l6", "-q"], online),
        ("alias typo", ["collect", "minilm-l7", "-q"], {}),
        ("select --tolerance 2 (refused before loading)", ["select", str(tiny), "--tolerance", "2", "-q"], {}),
        ("select --output on a read-only place", ["select", str(tiny), "--output", "/sys/x", "-q"], {}),
        ("--device cuda without CUDA", ["collect", str(tiny), "--device", "cuda", "-q"], {}),
        ("truncated model.safetensors", ["collect", str(_truncated(tiny, work)), "-q"], {}),
    ]


def _truncated(tiny: Path, work: Path) -> Path:
    import shutil

    target = work / "truncated"
    shutil.copytree(tiny, target)
    data = (tiny / "model.safetensors").read_bytes()
    (target / "model.safetensors").write_bytes(data[: len(data) // 2])
    return target


def timed(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run([*ENTRY, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    return time.perf_counter() - started, done.returncode, done.stderr.strip().splitlines()[-1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from tiny import save_tiny

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        tiny = save_tiny("llama", work / "tiny")
        rows = []
        for name, words, env in cases(tiny, work):
            runs = [timed(words, env) for _ in range(args.repeats)]
            seconds = statistics.median(run[0] for run in runs)
            rows.append((name, seconds, runs[0][1], (runs[0][2] or [""])[0]))
            print(f"{name}: {seconds:.2f} s, exit {runs[0][1]}", file=sys.stderr)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    lines = [
        "# Fault latency: the wait for the one-line answer",
        "",
        f"Command: `python benchmarks/fault_latency.py --repeats {args.repeats}` "
        f"(load average after the run: {' '.join(load)}; median of {args.repeats} fresh processes).",
        "",
        "| fault | seconds | exit | message |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {name} | {seconds:.2f} | {code} | {message.replace('|', '/')[:110]} |"
        for name, seconds, code, message in rows
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
