"""Ctrl-C: at any moment the command prints "layerpick: aborted" and exits 130, commits nothing, and an
interrupted `layerpick run` resumes when run again.

The subprocess tests send a real SIGINT to the real entry point: while the libraries are still being imported,
and in the middle of the work (a marker file tells the test when the process is there, so nothing depends on
timing guesses). The run tests interrupt `run_workflow` at each point where it writes, then run it again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from layerpick._util import interrupt
from layerpick.benchmark.run import BenchConfig
from layerpick.exporting.config import ExportConfig
from layerpick.selection.config import SelectConfig
from layerpick.workflow.run import LEDGER, RunConfig, run_workflow
from tests.testkit.tasks import sts_folder

pytestmark = pytest.mark.slow

# The entry point with one hook: `layerpick.cli.app.<hook>` is replaced by a function that writes MARKER (then
# does the original's work, or sleeps as a long job would), so the test knows when to send SIGINT.
LAUNCHER = """
import sys, time
from pathlib import Path
marker, hook = Path(sys.argv[1]), sys.argv[2]
sys.argv = ["layerpick", *sys.argv[3:]]
from layerpick.cli import app
if hook == "imports":  # the signal arrives while torch, transformers and the commands are being imported
    original = app.prepare_libraries
    def prepare(argv):
        original(argv)
        marker.write_text("importing")
    app.prepare_libraries = prepare
else:  # the signal arrives in the middle of a long job
    import layerpick.core.collect_job as job
    def long_job(*args, **kwargs):
        marker.write_text("working")
        for _ in range(600):
            time.sleep(0.1)
    job.collect_layers = long_job  # where `layerpick collect` looks its job up when it runs
app.main()
"""


def launch(tmp_path: Path, hook: str, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, Path]:
    marker = tmp_path / f"marker-{hook}"
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(marker), hook, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the command never reached the hook"
        time.sleep(0.01)
    return process, marker


@pytest.mark.parametrize("hook", ["imports", "work"])
def test_ctrl_c_prints_aborted_and_exits_130(hook, tiny_dirs, tmp_path):
    process, _ = launch(tmp_path, hook, "collect", str(tiny_dirs("llama")), "-q")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err == "layerpick: aborted\n", err


def test_ctrl_c_under_debug_shows_where_and_keeps_130(tiny_dirs, tmp_path):
    import os

    env = {**os.environ, "LAYERPICK_DEBUG": "1"}
    process, _ = launch(tmp_path, "work", "collect", str(tiny_dirs("llama")), "-q", env=env)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" in err and "long_job" in err and err.strip().endswith("layerpick: aborted")


def test_an_interrupt_swallowed_by_a_library_commits_nothing(tiny_dirs, tmp_path, monkeypatch):
    """The atomic writers honour a requested interrupt even when the KeyboardInterrupt never came up: an export
    whose parity pass 'swallowed' Ctrl-C stops before the directory is moved into place."""
    from layerpick.exporting import job, parity

    collect = parity.collect

    def swallowing(*args, **kwargs):
        interrupt.request()  # the SIGINT handler ran; some library caught the KeyboardInterrupt and carried on
        return collect(*args, **kwargs)

    monkeypatch.setattr(parity, "collect", swallowing)
    interrupt.reset()
    try:
        with pytest.raises(KeyboardInterrupt):
            job.export_model(str(tiny_dirs("llama")), 2, tmp_path / "out", ExportConfig(progress=False))
    finally:
        interrupt.reset()
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- run resumes

BENCH = BenchConfig(batch_sizes=(1,), texts=4, repeats=1, memory=False)
STAGES = ("select", "validate", "export", "bench")


def _raise_once(monkeypatch, target, name: str) -> None:
    original = getattr(target, name)
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, interrupted)


def _points():
    from layerpick.exporting import parity as export_parity
    from layerpick.selection import job as select_job
    from layerpick.selection import report as select_report
    from layerpick.validation import evaluate as validation_evaluate
    from layerpick.workflow import run as workflow

    return {  # where the interrupt lands -> (module, function), and the stages finished before it
        "select-scoring": ((select_job, "score_transformed"), ()),
        "select-writing-report": ((select_report, "plot_metrics"), ()),
        "select-recorded": ((workflow.Ledger, "record"), ()),
        "validate": ((validation_evaluate, "_evaluate"), ("select",)),
        "export-parity": ((export_parity, "check_parity"), ("select", "validate")),
        "bench": ((workflow, "run_bench"), ("select", "validate", "export")),
        "model-card": ((workflow, "annotate_export"), STAGES),
    }


@pytest.mark.parametrize("point", list(_points()))
def test_an_interrupted_run_resumes(point, tiny_dirs, tmp_path, monkeypatch):
    (target, name), finished = _points()[point]
    task = sts_folder(tmp_path)
    select = SelectConfig(limit=12, metrics="dime", transform="none")  # no whitening fit: not what is under test
    config = RunConfig(tasks=(str(task),), layers="last", select=select, bench=BENCH)
    out = tmp_path / "out"
    model = str(tiny_dirs("llama"))
    with monkeypatch.context() as patch:
        _raise_once(patch, target, name)
        with pytest.raises(KeyboardInterrupt):
            run_workflow(model, out, config=config, progress=False)
    if out.exists():
        assert (out / LEDGER).is_file(), f"{point}: a folder without run.json would be refused by the next run"
        recorded = json.loads((out / LEDGER).read_text())["stages"]
        assert set(recorded) == set(finished), recorded
        assert not [p.name for p in out.rglob("*") if ".partial-" in p.name]
    else:
        assert not finished
    again = run_workflow(model, out, config=config, progress=False)
    assert set(again.stages) == set(STAGES)
    assert {stage for stage in STAGES if again.stages[stage]["reused"]} == set(finished)
    assert again.export.parity["passed"] and (out / "bench.json").is_file()


# Signals that arrive while the interpreter shuts down: in an atexit handler, and while the modules are freed
# (after Python has handed SIGINT back to its default action, which killed the process: exit 130, no message).
SHUTDOWN_LAUNCHER = """
import atexit, os, signal, sys, time
sys.argv = ["layerpick", *sys.argv[1:]]
from layerpick.cli import app

def interrupt_me():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)

class FreedLate:
    def __del__(self, kill=os.kill, pid=os.getpid(), sigint=signal.SIGINT, sleep=time.sleep):
        kill(pid, sigint)  # the module's globals may be gone by now
        sleep(0.2)

late = FreedLate()
atexit.register(interrupt_me)
app.main()
"""


@pytest.mark.parametrize("command", ["export", "select"])
def test_ctrl_c_during_shutdown_keeps_a_finished_command_a_success(command, tiny_dirs, tmp_path):
    """After the output is committed and the last line printed, Ctrl-C while the interpreter shuts down does not
    turn success into failure (issue 33, cause 13)."""
    out = tmp_path / "out"
    tail = ["--layer", "1"] if command == "export" else ["--limit", "12", "--metrics", "dime", "--transform", "none"]
    done = subprocess.run(
        [sys.executable, "-c", SHUTDOWN_LAUNCHER, command, tiny_dirs("llama"), *tail, "--output", str(out), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "aborted" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert (out / ("layerpick.json" if command == "export" else "report.json")).is_file()
