"""The command line answers `--help`, a command's `--help` and option errors without importing torch,
transformers, scipy.stats, matplotlib or mteb (seconds of imports): each command imports its stage only when it
runs. Checked in a fresh interpreter, where nothing else has imported them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "sentence_transformers", "scipy.stats", "matplotlib", "mteb")
PROBE = """
import contextlib, io, json, sys
from layerpick.cli.app import run
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = run(sys.argv[1:])
print(json.dumps({"code": code, "heavy": [name for name in %r if name in sys.modules]}))
""" % (HEAVY,)


def start(*argv: str, cwd=None) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv, code",
    [
        (["--help"], 0),
        (["heal", "--help"], 0),
        (["export", "--help"], 0),
        (["run", "--help"], 0),
        (["compare", "--help"], 0),
        (["select", "--no-such-option"], 2),
        (["validate", "--batch-size", "many"], 2),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_help_and_usage_errors_import_no_heavy_library(argv, code):
    seen = start(*argv)
    assert seen == {"code": code, "heavy": []}


def test_a_command_that_runs_still_imports_its_stage(tmp_path):
    """The probe can see a heavy import: a command that reaches its stage (here export, which fails on the
    missing model only after importing the export stage) has torch loaded."""
    seen = start("export", "./no-such-model", "--layer", "1", "--output", "out", cwd=tmp_path)
    assert seen["code"] == 1 and "torch" in seen["heavy"]
    assert list(tmp_path.iterdir()) == []
