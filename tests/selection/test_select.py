"""select end to end: library on tiny models, the CLI through its real entry point, bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from layerpick.core.models import load_model
from layerpick.errors import CalibrationError, NonFiniteStatesError
from layerpick.selection.job import SelectConfig, run_select
from layerpick.selection.scoring import ScoringConfig
from tests.testkit.calibration import QUIET, calibration_file
from tests.testkit.tiny import save_tiny

LAYERPICK = str(Path(sys.executable).parent / "layerpick")
def test_report_has_every_metric_for_every_layer(tiny_dirs, tmp_path):
    config = SelectConfig(calibration=calibration_file(tmp_path), collect=QUIET, scoring=ScoringConfig(views=3))
    report = run_select(str(tiny_dirs("llama")), config=config)
    assert report["num_layers"] == 4
    assert set(report["scores"]) == {"prompt-entropy", "dataset-entropy", "dime", "infonce", "lidar", "curvature"}
    assert all(len(v) == 5 for v in report["scores"].values())
    assert 1 <= report["selected_layer"] <= 4
    assert report["calibration"]["count"] == 24 and len(report["calibration"]["sha256"]) == 64
    json.dumps(report.to_json(), allow_nan=False)


def test_same_seed_same_report(tiny_dirs, tmp_path):
    config = SelectConfig(calibration=calibration_file(tmp_path), collect=QUIET, scoring=ScoringConfig(seed=3))
    first = run_select(str(tiny_dirs("gpt2")), config=config).to_json()
    second = run_select(str(tiny_dirs("gpt2")), config=config).to_json()
    first.pop("timings"), second.pop("timings")
    assert first == second


def test_only_needed_passes(tiny_dirs, tmp_path, monkeypatch):
    import layerpick.selection.scoring as scoring

    calls = []
    real = scoring.collect
    monkeypatch.setattr(scoring, "collect", lambda *a, **k: calls.append(len(a[1])) or real(*a, **k))
    config = SelectConfig(calibration=calibration_file(tmp_path), metrics="prompt-entropy", rule="min-prompt-entropy",
                          collect=QUIET)
    run_select(str(tiny_dirs("llama")), config=config)
    assert calls == [24]  # no augmented-view pass
    calls.clear()
    config = SelectConfig(calibration=calibration_file(tmp_path), metrics="dime,infonce,lidar", rule="max-dime",
                          collect=QUIET, scoring=ScoringConfig(views=3))
    run_select(str(tiny_dirs("llama")), config=config)
    assert calls == [24 * 3]  # one shared view pass, no plain pass


def test_too_few_texts(tiny_dirs, tmp_path):
    config = SelectConfig(calibration=calibration_file(tmp_path, n=4), collect=QUIET)
    with pytest.raises(CalibrationError, match="at least 8 calibration texts"):
        run_select(str(tiny_dirs("llama")), config=config)


def test_non_finite_states_name_the_layer(tmp_path):
    directory = save_tiny("llama", tmp_path / "model")
    loaded = load_model(str(directory))
    from layerpick.core import surgery
    from layerpick.core.collect import collect

    surgery.blocks(loaded.model)[2].mlp.down_proj.weight.fill_(float("inf"))
    with pytest.raises(NonFiniteStatesError, match="layer 3"):
        collect(loaded, ["a text here", "another one"], QUIET)


def run_cli(*args, cwd=None):
    return subprocess.run([LAYERPICK, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_json_prints_only_the_report(tiny_dirs, tmp_path):
    out = tmp_path / "out"
    result = run_cli("select", str(tiny_dirs("bert")), "--calibration", calibration_file(tmp_path), "--json",
                     "--output", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == json.loads((out / "report.json").read_text())
    assert (out / "metrics.png").stat().st_size > 0 and (out / "report.md").is_file()


def test_cli_table_marks_the_choice(tiny_dirs, tmp_path):
    result = run_cli("select", str(tiny_dirs("mamba")), "--calibration", calibration_file(tmp_path),
                     "--output", str(tmp_path / "o"), "--rule", "min-curvature", "--metrics", "curvature", "-q")
    assert result.returncode == 0, result.stderr
    assert "curvature ↓" in result.stdout and "◀" in result.stdout and "selected: layer" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metrics", "dimee"], "did you mean 'dime'"),
        (["--rule", "best-dime"], "unknown rule"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--limit", "3"], "at least 8 calibration texts"),
    ],
)
def test_cli_bad_input(tiny_dirs, tmp_path, args, message):
    out = tmp_path / "out"
    result = run_cli("select", str(tiny_dirs("llama")), "--calibration", calibration_file(tmp_path),
                     "--output", str(out), "-q", *args)
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.integration
def test_cli_on_minilm(tmp_path):
    result = run_cli("select", "minilm-l6", "--limit", "48", "--output", str(tmp_path / "m"), "--json", "-q")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["num_layers"] == 6 and report["family"] == "bert"
    assert all(v is not None for v in report["scores"]["dataset-entropy"])
