"""The heal's memory floor (`layerpick.healing.memory`) beside the peak RSS measured for the same heal.

    python benchmarks/heal_memory.py --peaks peaks.tsv --output $WORK/heal_memory.md   # its rows: heal_runs.json

`peaks.tsv` holds one heal a line, tab-separated: a label, the peak RSS in kB (`/usr/bin/time -v`'s "Maximum
resident set size" of that `layerpick heal` run), then the heal's own arguments (`MODEL --layer K [--fit-texts F]...
[--batch-size B]`). Each heal runs through `layerpick heal`'s own path up to its memory check, which here records
the floor and the process's RSS at that point (the loaded model, its cut, the texts) and stops the heal before the
teacher's pass, so a line costs seconds; each runs in a process of its own, as the measured heal did. The table
says how far the measured peak rose above that RSS beyond the floor, beside the headroom `memory.headroom` keeps for
that floor (a heal whose floor and headroom exceed the free memory is warned about).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from layerpick.cli import app as cli_app
from layerpick.healing import memory

GB = 1e9


class Measured(BaseException):
    """Raised by the patched check once it has the floor: the heal stops there (past the CLI's error handling)."""


def floor_of(arguments: list[str]) -> tuple[memory.MemoryNeed, int, int]:
    """(need, batch size, RSS in bytes) of the heal `layerpick heal ARGUMENTS`, stopped at its memory check."""
    seen = {}

    def record(need, batch_size, device):
        seen.update(need=need, batch=batch_size, rss=psutil.Process().memory_info().rss)
        raise Measured

    original, memory.check = memory.check, record
    try:
        with tempfile.TemporaryDirectory() as scratch:
            cli_app.run(["heal", *arguments, "--output", str(Path(scratch) / "out"), "-q"])
    except Measured:
        pass
    finally:
        memory.check = original
    if not seen:
        raise SystemExit(f"the heal stopped before its memory check: {shlex.join(arguments)}")
    return seen["need"], seen["batch"], seen["rss"]


def in_fresh_process(heal: str) -> tuple[memory.MemoryNeed, int, int]:
    """floor_of in a process of its own, as the measured heal ran: a process that ran other heals before keeps
    their memory, which would inflate the RSS at the check."""
    done = subprocess.run([sys.executable, __file__, "--one", heal], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return memory.MemoryNeed(**found["need"]), found["batch"], found["rss"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peaks", type=Path)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--one", help="measure this one heal's arguments and print the result as JSON")
    args = parser.parse_args()
    if args.one:
        need, batch, rss = floor_of(shlex.split(args.one))
        print(json.dumps({"need": vars(need), "batch": batch, "rss": rss}))
        return
    if not (args.peaks and args.output):
        parser.error("--peaks and --output are required")
    rows = [
        "| heal | batch | longest texts (tokens) | floor (GB) | RSS at the check (GB) | measured peak (GB) | "
        "peak - RSS - floor (GB) | headroom kept (GB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for line in args.peaks.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, peak_kb, heal = line.split("\t")
        need, batch, rss = in_fresh_process(heal)
        peak, floor = int(peak_kb) * 1024, need.floor(batch)
        rows.append(
            f"| {label} | {batch} | {need.tokens} | {floor / GB:.2f} | {rss / GB:.2f} | {peak / GB:.2f} | "
            f"{(peak - rss - floor) / GB:.2f} | {memory.headroom(floor) / GB:.2f} |"
        )
        print(rows[-1], flush=True)
    args.output.write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
