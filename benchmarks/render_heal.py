"""Render the tables of benchmarks/results/heal.md from benchmarks/results/heal_runs.json (one record per heal).

    python benchmarks/render_heal.py           # rewrites every table between heal.md's render markers
    python benchmarks/render_heal.py --check   # exits 1 if heal.md's tables differ from the data

The data file holds the measurements (scores, fidelity, minutes, memory, speed) of every heal on the page; a new
heal is a new record, and the page's tables follow from it. Each table sits between `<!-- render: NAME -->` and
`<!-- /render -->`; the prose around them is written by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DATA = RESULTS / "heal_runs.json"
PAGE = RESULTS / "heal.md"
MINI, MPNET = "minilm-l6", "all-mpnet-base-v2"
BLOCK = re.compile(r"(<!-- render: (\S+) -->\n)(.*?)(<!-- /render -->)", re.S)


def pct(value: float | None, full: float) -> str:
    return "-" if value is None else f"{100 * value / full:.1f}"


def shares(run: dict, model: dict) -> tuple[str, str, str]:
    """The run's share (%) of the full model: nine-task mean, SciFact used alone, SciFact as a query encoder."""
    published = run.get("share", {})
    full = {"mean": run.get("full_mean", model["mean"]), "scifact": model["scifact"], "scifact_query": model["scifact"]}
    return tuple(
        f"{published[key]:.1f}" if key in published else pct(run.get(key), full[key])
        for key in ("mean", "scifact", "scifact_query")
    )


def row(cells: list) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def header(names: list[str]) -> list[str]:
    return [row(names), row(["---"] * len(names))]


def fidelity(pair: list[float] | None) -> str:
    return "-" if not pair else f"{pair[0]:.3f} -> {pair[1]:.3f}"


def matrix(data: dict, model: str, columns: dict[str, str], speed_column: str) -> list[str]:
    """K by text source: each cell the shares (mean / SciFact alone / as a query encoder), minutes and cosine."""
    full = data["models"][model]
    runs = [r for r in data["runs"] if r["model"] == model and r.get("matrix")]
    notes: list[str] = []
    lines = header(["K", *columns.values(), "`bench` throughput, batch 1 / 32"])
    for k in sorted({r["k"] for r in runs}):
        cells: list = [k]
        for column in columns:
            run = next((r for r in runs if r["k"] == k and r["matrix"] == column), None)
            if run is None:
                cells.append("not run")
                continue
            cell = " / ".join(shares(run, full))
            if run["start"] != "plain":
                cell += f" ({run['minutes']:g} min, {run['cosine'][1]:.3f})"
            if run.get("note"):
                notes.append(run["note"])
                cell += f" [{len(notes)}]"
            cells.append(cell)
        fast = next((r for r in runs if r["k"] == k and r["matrix"] == speed_column and r.get("throughput")), None)
        cells.append(f"{fast['throughput'][0]:.2f}x / {fast['throughput'][1]:.2f}x" if fast else "-")
        lines.append(row(cells))
    return lines + ([""] + [f"[{i + 1}] {note}." for i, note in enumerate(notes)] if notes else [])


def every_heal(data: dict) -> list[str]:
    lines = header(
        [
            "run",
            "K",
            "blocks",
            "texts",
            "epochs",
            "batches",
            "minutes",
            "peak RSS (GB)",
            "held-out cosine",
            "10-NN overlap",
            "nine-task mean %",
            "SciFact alone %",
            "as query encoder %",
        ]
    )
    for run in data["runs"]:
        if run["start"] == "plain" or "-blocks-" in run["id"] or run["id"].endswith("-first-p900"):
            continue
        where = "" if run["device"] == "cpu" else f" ({run['device'].upper()})"
        lines.append(
            row(
                [
                    f"`{run['id']}`",
                    run["k"],
                    ",".join(map(str, run["blocks"])),
                    run["texts"],
                    run["epochs"],
                    run["batches"] + where,
                    f"{run['minutes']:g}",
                    run.get("peak_rss_gb", "-"),
                    fidelity(run["cosine"]),
                    fidelity(run.get("knn_overlap")),
                    *shares(run, data["models"][run["model"]]),
                ]
            )
        )
    return lines


def per_task(data: dict) -> list[str]:
    """Each task's score as a share of the full model's, for minilm-l6 at K = 3 and all-mpnet-base-v2 at K = 6."""
    lines = header(["run", *[t.removesuffix("Classification").removesuffix("_derived") for t in data["tasks"]]])
    for model, k in ((MINI, 3), (MPNET, 6), (MPNET, 8)):
        full = data["models"][model]["tasks"]
        for run in data["runs"]:
            if run["model"] == model and run["k"] == k and run.get("matrix") and run.get("tasks"):
                lines.append(row([f"`{run['id']}`", *[f"{100 * s / f:.0f}" for s, f in zip(run["tasks"], full)]]))
    return lines


def blocks(data: dict) -> list[str]:
    """minilm-l6 healed 2 epochs on 1,000 SciFact passages, from each layout of the teacher's blocks."""
    full = data["models"][MINI]
    lines = header(
        ["K", "teacher blocks", "start", "held-out cosine", "SciFact alone %", "as query encoder %", "minutes"]
    )
    runs = [
        r
        for r in data["runs"]
        if r["model"] == MINI and r.get("texts") == "1,000 of SciFact's passages" and r.get("epochs") == 2
    ]
    for run in sorted(runs, key=lambda r: (r["k"], r["start"] != "first", r["blocks"])):
        _, alone, query = shares(run, full)
        blocks_ = ", ".join(map(str, run["blocks"]))
        lines.append(
            row([run["k"], blocks_, run["start"], fidelity(run["cosine"]), alone, query, f"{run['minutes']:g}"])
        )
    return lines


def memory(data: dict) -> list[str]:
    lines = header(
        [
            "run",
            "longest texts (tokens)",
            "floor",
            "RSS at the check",
            "measured peak",
            "peak - RSS - floor",
            "headroom kept",
        ]
    )
    for run in data["runs"]:
        m = run.get("memory")
        if not m:
            continue
        lines.append(
            row(
                [
                    f"`{run['id']}`",
                    m["longest_tokens"],
                    f"{m['floor_gb']:.2f}",
                    f"{m['rss_at_check_gb']:.2f}",
                    f"{m['peak_gb']:.2f}",
                    f"{m['beyond_floor_gb']:.2f}",
                    f"{m['headroom_gb']:.2f}",
                ]
            )
        )
    return lines


def batches(data: dict) -> list[str]:
    lines = header(["batches", "epochs", "minutes, cold / warm", "loss per epoch", "held-out cosine", "10-NN overlap"])
    for b in data["batches"]:
        minutes = f"{b.get('minutes_cold', '-')} / {b['minutes_warm']}"
        losses = ", ".join(f"{x:.4f}" for x in b["losses"])
        lines.append(
            row([b["batches"], b["epochs"], minutes, losses, fidelity(b["cosine"]), fidelity(b["knn_overlap"])])
        )
    return lines


def curve(data: dict) -> list[str]:
    run = next(r for r in data["runs"] if r.get("curve"))
    lines = header(["epoch", *range(1, len(run["curve"]) + 1)])
    lines.append(row([f"`{run['id']}`", *[f"{a:.4f} / {b:.4f}" for a, b in run["curve"]]]))
    return lines


def tables(data: dict) -> dict[str, list[str]]:
    return {
        "minilm": matrix(
            data,
            MINI,
            {
                "plain": "plain cut",
                "embedded": "embedded (600)",
                "generic": "generic (8,000)",
                "corpus": "corpus (8,000)",
            },
            "corpus",
        ),
        "mpnet": matrix(
            data,
            MPNET,
            {
                "plain": "plain cut",
                "embedded": "embedded (600)",
                "generic": "generic (8,000)",
                "sentences": "2,400 sentences + embedded",
                "passages": "800 passages + 2,400 sentences + embedded",
            },
            "sentences",
        ),
        "runs": every_heal(data),
        "tasks": per_task(data),
        "blocks": blocks(data),
        "memory": memory(data),
        "batches": batches(data),
        "curve": curve(data),
    }


def render(page: str, data: dict) -> str:
    rendered = tables(data)

    def fill(match: re.Match) -> str:
        return match.group(1) + "\n".join(rendered[match.group(2)]) + "\n" + match.group(4)

    return BLOCK.sub(fill, page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if heal.md's tables are not the data's")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    page = PAGE.read_text()
    new = render(page, data)
    if args.check:
        if new != page:
            print(f"{PAGE} is out of date: run python benchmarks/render_heal.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
