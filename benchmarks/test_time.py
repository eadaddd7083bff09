"""Where the test suite's time goes: a pytest junit XML file (`pytest --junitxml=FILE`, whose per-test times are
the ones `--durations` prints: setup, call and teardown) summarised as markdown, for
benchmarks/results/test_time.md.

    python benchmarks/test_time.py FILE.xml [--top 50] [--tier-of MARKER_EXPR]

prints the slowest tests, the time by test file and the totals. With `--tier-of`, each test is also labelled
with the tier it belongs to now (`pytest --collect-only -m EXPR` decides membership).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def read_cases(path: Path) -> list[tuple[str, float, str]]:
    """(node id, seconds, outcome) of every test case in a junit XML file."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        index = next((i for i, part in enumerate(parts) if part.startswith("test_")), None)
        if index is None:  # not a test: the entry an interrupted session writes for the interrupt
            continue
        node = "/".join(parts[: index + 1]) + ".py::" + "::".join([*parts[index + 1 :], case.get("name", "")])
        outcome = next((tag for tag in ("skipped", "failure", "error") if case.find(tag) is not None), "passed")
        cases.append((node, float(case.get("time", 0.0)), outcome))
    return cases


def collected(expression: str) -> set[str]:
    """The node ids `pytest -m expression` selects."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", expression],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.strip() for line in done.stdout.splitlines() if "::" in line}


def render(cases: list[tuple[str, float, str]], top: int, member: set[str] | None, label: str) -> str:
    total = sum(seconds for _, seconds, _ in cases)
    outcomes = collections.Counter(outcome for _, _, outcome in cases)
    lines = [
        f"{len(cases)} tests, {total / 60:.1f} min of test time ("
        + ", ".join(f"{count} {name}" for name, count in sorted(outcomes.items()))
        + ")",
        "",
        f"| seconds | test{' | ' + label if member is not None else ''} |",
        f"|---:|---{'|---' if member is not None else ''}|",
    ]
    for node, seconds, _ in sorted(cases, key=lambda case: -case[1])[:top]:
        tier = f" | {'yes' if node in member else 'no'}" if member is not None else ""
        lines.append(f"| {seconds:.1f} | `{node}`{tier} |")
    by_file: dict[str, float] = collections.Counter()
    counts: dict[str, int] = collections.Counter()
    for node, seconds, _ in cases:
        by_file[node.split("::")[0]] += seconds
        counts[node.split("::")[0]] += 1
    lines += ["", "| seconds | tests | file |", "|---:|---:|---|"]
    lines += [f"| {seconds:.1f} | {counts[name]} | `{name}` |" for name, seconds in by_file.most_common(25)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument("--tier-of", help="a marker expression; label each test with whether it selects it")
    args = parser.parse_args()
    member = collected(args.tier_of) if args.tier_of else None
    print(render(read_cases(args.junit), args.top, member, f'in `-m "{args.tier_of}"`'), end="")


if __name__ == "__main__":
    main()
