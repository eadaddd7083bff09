"""Options a user sets repeatedly also read LAYERPICK_* variables; MTEB_CACHE places validate's MTEB results.
Command lines run in this process (`tests.testkit.cli.invoke`), with the variables set for the call only."""

import json
from pathlib import Path

import pytest
import typer

from layerpick.cli.app import app
from layerpick.validation import ValidateConfig, run_validation
from tests.testkit.cli import invoke
from tests.testkit.tasks import sts_folder

REPEATED = {
    "model": "LAYERPICK_MODEL",
    "--calibration": "LAYERPICK_CALIBRATION",
    "--field": "LAYERPICK_FIELD",
    "--limit": "LAYERPICK_LIMIT",
    "--seed": "LAYERPICK_SEED",
    "--metrics": "LAYERPICK_METRICS",
    "--rule": "LAYERPICK_RULE",
    "--batch-size": "LAYERPICK_BATCH_SIZE",
    "--max-length": "LAYERPICK_MAX_LENGTH",
    "--pooling": "LAYERPICK_POOLING",
    "--representation": "LAYERPICK_REPRESENTATION",
    "--views": "LAYERPICK_VIEWS",
    "--revision": "LAYERPICK_REVISION",
    "--dtype": "LAYERPICK_DTYPE",
    "--device": "LAYERPICK_DEVICE",
    "--device-map": "LAYERPICK_DEVICE_MAP",
    "--max-memory": "LAYERPICK_MAX_MEMORY",
    "--trust-remote-code": "LAYERPICK_TRUST_REMOTE_CODE",
    "--quiet": "LAYERPICK_QUIET",
    "--tasks": "LAYERPICK_TASKS",
    "--task-data": "LAYERPICK_TASK_DATA",
    "--store": "LAYERPICK_STORE",
    "--host": "LAYERPICK_HOST",
    "--port": "LAYERPICK_PORT",
    "--threads": "LAYERPICK_THREADS",
    "--min-speedup": "LAYERPICK_MIN_SPEEDUP",
    "--choose": "LAYERPICK_CHOOSE",
    "--max-loss": "LAYERPICK_MAX_LOSS",
    "--prompt": "LAYERPICK_PROMPT",
}


def all_options():
    command = typer.main.get_command(app)
    for name, sub in command.commands.items():
        for param in sub.params:
            yield name, param.opts[0], param.envvar


# Same name, another quantity: heal's --max-loss is a loss of cosine fidelity to the full model, validate's and
# run's a loss of mean task score; a LAYERPICK_MAX_LOSS set for one must not silently set the other.
OWN_MEANING = {("heal", "--max-loss")}


@pytest.mark.parametrize(
    "command, option, envvar", [row for row in all_options() if row[1] in REPEATED and row[:2] not in OWN_MEANING]
)
def test_repeated_options_read_a_variable(command, option, envvar):
    assert envvar == REPEATED[option], f"{command} {option}"


@pytest.mark.parametrize("command, option", sorted(OWN_MEANING))
def test_an_option_of_another_meaning_reads_no_variable(command, option):
    assert [envvar for name, opt, envvar in all_options() if (name, opt) == (command, option)] == [None]


@pytest.mark.slow
def test_variables_reach_the_command(tiny_dirs, tmp_path):
    env = {
        "HOME": str(tmp_path),
        "LAYERPICK_MODEL": str(tiny_dirs("llama")),
        "LAYERPICK_LIMIT": "12",
        "LAYERPICK_RULE": "min-dime",
        "LAYERPICK_QUIET": "1",
        "LAYERPICK_MIN_SPEEDUP": "1.9",
    }
    done = invoke("select", "--metrics", "dime", "--transform", "none", "--output", tmp_path / "out", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["model"] == str(tiny_dirs("llama"))
    assert report["calibration"]["count"] == 12
    assert report["rule"] == "min-dime" and report["min_speedup"] == 1.9
    assert "forward pass" not in done.stderr  # quiet: no progress bars


def test_mteb_cache_holds_the_per_layer_results(tiny_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("MTEB_CACHE", str(tmp_path / "mteb-cache"))
    result = run_validation(
        str(tiny_dirs("llama")),
        [str(sts_folder(tmp_path))],
        ValidateConfig(layers="1,4", output_dir=tmp_path / "out", store_dir=tmp_path / "store", progress=False),
    )
    results = Path(result.report.to_json()["results_dir"])
    assert results == tmp_path / "mteb-cache" / "results"
    assert sorted(p.name for p in results.iterdir()) == [
        f"layerpick__{tiny_dirs('llama').name}__layer-{k}" for k in (1, 4)
    ]
    assert not (tmp_path / "out" / "results").exists()


@pytest.mark.parametrize("command", sorted(typer.main.get_command(app).commands))
def test_every_command_help_shows_an_example(command):
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert f"Example: layerpick {command}" in " ".join(result.output.split())


@pytest.mark.slow
def test_output_is_plain_when_not_a_terminal(tiny_dirs, tmp_path):
    """CI logs: no colour or cursor escape codes when stdout and stderr are not a terminal (here: captured)."""
    line = ["select", tiny_dirs("llama"), "--limit", "12", "--metrics", "dime", "--transform", "none"]
    done = invoke(*line, "--output", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "layer" in done.stdout and "forward pass" in done.stderr
    assert "\x1b[" not in done.stdout + done.stderr
