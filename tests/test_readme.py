"""The README's commands cannot drift from the code.

1. Every `layerpick ...` command line in the code blocks of the README and of the pages under docs/ names a real
   command and real options.
2. The bash and Python blocks marked `<!-- runnable -->` run and succeed, in the README's order, each group in
   its own scratch folder: the bash walkthrough from a fresh install to a served embedder (the full tier: two
   `layerpick run`s over all 30 layers of smollm2-135m) and the Python API on minilm-l6 (the default tier);
   `tasks/` there holds the local MTEB task folders that the README tells users to materialise with
   `layerpick validate --materialize`.
The outputs pasted under those blocks come from a real run of the same commands; they are not compared
here (timings and scores vary from machine to machine), only the commands are.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from layerpick.cli.app import app
from tests.testkit.paths import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- runnable -->\n)?```(bash|console|python)\n(.*?)```", re.S)
BASH = ["bash", "-euo", "pipefail", "-c"]
RUNNERS = {"bash": BASH, "console": BASH, "python": [sys.executable, "-c"]}


def code_blocks(document: Path = README, languages: tuple[str, ...] = ("bash", "console")) -> list[tuple[bool, str]]:
    """(marked runnable, body) of each fenced block in one of `languages`."""
    found = BLOCK.findall(document.read_text(encoding="utf-8"))
    return [(bool(marker), body) for marker, language, body in found if language in languages]


def runnable_blocks() -> list[tuple[list[str], str]]:
    """(the command that runs it, body) of each block marked runnable, in the README's order."""
    found = BLOCK.findall(README.read_text(encoding="utf-8"))
    return [(RUNNERS[language], body) for marker, language, body in found if marker]


def command_lines(documents: list[Path] = DOCUMENTS) -> list[str]:
    lines = []
    for _, body in (block for document in documents for block in code_blocks(document)):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip().removeprefix("$ ")
            if line.startswith("layerpick "):
                lines.append(line.rstrip("&").strip())
    return lines


def known_options() -> dict[str, set[str]]:
    command = typer.main.get_command(app)
    return {
        name: {opt for param in sub.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
        for name, sub in command.commands.items()
    }


def test_readme_has_runnable_blocks_and_commands():
    assert sum(marked for marked, _ in code_blocks()) >= 2
    assert sum(marked for marked, _ in code_blocks(languages=("python",))) >= 2  # the Python API runs too
    assert len(command_lines([README])) >= 8
    assert not any(
        marked for document in DOCUMENTS[1:] for marked, _ in code_blocks(document, ("bash", "console", "python"))
    ), "runnable blocks belong in the README, where test_runnable_blocks_succeed runs them"


@pytest.mark.parametrize("line", command_lines())
def test_readme_commands_use_real_options(line):
    words = shlex.split(line)[1:]
    if words[0].startswith("-"):
        assert set(words) <= {"--version", "--help", "-v", "--verbose"}
        return
    options = known_options()
    assert words[0] in options, f"no command {words[0]!r}"
    used = {word.split("=")[0] for word in words[1:] if word.startswith("-")}
    assert used <= options[words[0]], f"unknown options {used - options[words[0]]} in: {line}"


def run_in_order(blocks: list[tuple[list[str], str]], folder: Path) -> None:
    """Each block in one scratch folder, in the README's order, where `tasks/` holds the shared task folders."""
    (folder / "tasks").mkdir()
    for name in ("BIOSSES", "STSBenchmark"):
        (folder / "tasks" / name).symlink_to(SHARED_DATA / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for number, (runner, body) in enumerate(blocks):
        done = subprocess.run([*runner, body], cwd=folder, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, f"README block {number} failed:\n{body}\n{done.stderr[-3000:]}"


def test_runnable_blocks_are_the_walkthrough_and_the_python_api():
    """The two tests below run every runnable block between them: the bash walkthrough and the Python API."""
    languages = [runner[0] for runner, _ in runnable_blocks()]
    assert languages.count("bash") >= 2 and languages.count(sys.executable) >= 2
    assert set(languages) == {"bash", sys.executable}


@pytest.mark.full  # two `layerpick run`s of smollm2-135m over all 30 layers: about 20 minutes on 2 cores
@pytest.mark.integration
def test_the_walkthrough_blocks_succeed(tmp_path):
    """The bash blocks, in order: run, run --max-loss, serve the first run's export, load it."""
    run_in_order([block for block in runnable_blocks() if block[0] == BASH], tmp_path)


@pytest.mark.full  # every verb on minilm-l6, a heal included: 47-60 s, the default tier's slowest test
@pytest.mark.integration
def test_the_python_api_blocks_succeed(tmp_path):
    """The Python blocks, in order: every verb on minilm-l6 (select, validate on a task folder, export, bench,
    run, compare, heal), then the "layer k" core."""
    run_in_order([block for block in runnable_blocks() if block[0] != BASH], tmp_path)
