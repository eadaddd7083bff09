"""select end to end: library on tiny models, the CLI (in this process through the entry point's `run`; in a
child process where the process's own stdout is what is checked), bad input."""

import json
import subprocess

import pytest

from layerpick.core.models import load_model
from layerpick.errors import CalibrationError, NonFiniteStatesError
from layerpick.selection.config import SelectConfig
from layerpick.selection.job import run_select
from layerpick.selection.scoring import ScoringConfig
from tests.testkit.calibration import QUIET, calibration_file
from tests.testkit.cli import LAYERPICK, invoke
from tests.testkit.tiny import save_tiny


def test_report_has_every_metric_for_every_layer(tiny_dirs, tmp_path):
    config = SelectConfig(calibration=calibration_file(tmp_path), collect=QUIET, scoring=ScoringConfig(views=3))
    report = run_select(str(tiny_dirs("llama")), config=config)
    assert report.num_layers == 4
    assert set(report.scores) == {"prompt-entropy", "dataset-entropy", "dime", "infonce", "lidar", "curvature"}
    assert all(len(v) == 5 for v in report.scores.values())
    assert 1 <= report.selected_layer <= 4
    assert report.calibration["count"] == 24 and len(report.calibration["sha256"]) == 64
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
    config = SelectConfig(
        transform="none",
        calibration=calibration_file(tmp_path),
        metrics="prompt-entropy",
        rule="min-prompt-entropy",
        collect=QUIET,
    )
    run_select(str(tiny_dirs("llama")), config=config)
    assert calls == [24]  # no augmented-view pass
    calls.clear()
    config = SelectConfig(
        transform="none",
        calibration=calibration_file(tmp_path),
        metrics="dime,infonce,lidar",
        rule="max-dime",
        collect=QUIET,
        scoring=ScoringConfig(views=3),
    )
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


def run_cli(*args, env=None):
    return invoke(*args, env=env)


@pytest.mark.slow
def test_cli_json_prints_only_the_report(tiny_dirs, tmp_path):
    """A child process: nothing but the report reaches the process's stdout (a library printing there would)."""
    out = tmp_path / "out"
    result = subprocess.run(
        [
            LAYERPICK,
            "select",
            str(tiny_dirs("bert")),
            "--calibration",
            calibration_file(tmp_path),
            "--json",
            "--output",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == json.loads((out / "report.json").read_text())
    assert (out / "metrics.png").stat().st_size > 0 and (out / "report.md").is_file()


@pytest.mark.slow
def test_cli_table_marks_the_choice(tiny_dirs, tmp_path):
    result = run_cli(
        "select",
        str(tiny_dirs("mamba")),
        "--transform",
        "none",
        "--calibration",
        calibration_file(tmp_path),
        "--output",
        str(tmp_path / "o"),
        "--rule",
        "min-curvature",
        "--metrics",
        "curvature",
        "-q",
    )
    assert result.returncode == 0, result.stderr
    assert "curvature ↓" in result.stdout and "◀" in result.stdout and "selected: layer" in result.stdout


@pytest.mark.slow
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
    result = run_cli(
        "select",
        str(tiny_dirs("llama")),
        "--calibration",
        calibration_file(tmp_path),
        "--output",
        str(out),
        "-q",
        *args,
    )
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.full  # 45 s in a child process; the default tier selects minilm-l6 in the README's Python block
@pytest.mark.integration
def test_cli_on_minilm(tmp_path):
    result = run_cli("select", "minilm-l6", "--limit", "48", "--output", str(tmp_path / "m"), "--json", "-q")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["num_layers"] == 6 and report["family"] == "bert"
    assert all(v is not None for v in report["scores"]["dataset-entropy"])


# ---------------------------------------------------------------- prompt templates


@pytest.mark.slow
def test_several_templates_score_every_pair(tiny_dirs, tmp_path):
    from layerpick.selection.prompt_choice import choose_pair
    from layerpick.selection.result import SelectReport
    from layerpick.selection.rules import parse_rule

    calibration = calibration_file(tmp_path)
    config = SelectConfig(
        transform="none", calibration=calibration, collect=QUIET, scoring=ScoringConfig(views=3), prompt="none,eol"
    )
    report = run_select(str(tiny_dirs("llama")), config=config)
    assert list(report.by_prompt) == ["none", "eol"]
    assert report.by_prompt["none"]["pooling"] == "mean" and report.by_prompt["eol"]["pooling"] == "lasttoken"
    pair = choose_pair({label: entry["scores"] for label, entry in report.by_prompt.items()}, parse_rule(report.rule))
    assert (report.prompt["name"], report.selected_layer) == (pair.prompt, pair.layer)
    assert (
        report.scores == report.by_prompt[pair.prompt]["scores"]
        and report.pooling == report.by_prompt[pair.prompt]["pooling"]
    )
    alone = run_select(
        str(tiny_dirs("llama")),
        config=SelectConfig(
            transform="none", calibration=calibration, collect=QUIET, scoring=ScoringConfig(views=3), prompt="eol"
        ),
    )
    assert alone.by_prompt is None and alone.prompt["name"] == "eol" and alone.pooling == "lasttoken"
    assert alone.scores == report.by_prompt["eol"]["scores"]  # one pass per template, the same as alone
    plain = run_select(
        str(tiny_dirs("llama")),
        config=SelectConfig(calibration=calibration, collect=QUIET, scoring=ScoringConfig(views=3)),
    )
    assert plain.prompt == {"name": "none", "template": None} and plain.scores != alone.scores
    assert SelectReport.from_json(json.loads(json.dumps(report.to_json()))).to_json() == report.to_json()
    assert "by_prompt" not in alone.to_json()


@pytest.mark.slow
def test_cli_prompts_side_by_side(tiny_dirs, tmp_path):
    out = tmp_path / "o"
    result = run_cli(
        "select",
        str(tiny_dirs("gpt2")),
        "--transform",
        "none",
        "--calibration",
        calibration_file(tmp_path),
        "--output",
        str(out),
        "--prompt",
        "none,eol,sum",
        "--metrics",
        "infonce",
        "-q",
    )
    assert result.returncode == 0, result.stderr
    assert "side by side" in result.stdout and "selected: prompt" in " ".join(result.stdout.split())
    report = json.loads((out / "report.json").read_text())
    assert set(report["by_prompt"]) == {"none", "eol", "sum"} and report["prompt"]["name"] in report["by_prompt"]
    page = (out / "report.md").read_text()
    assert "## Prompt templates side by side" in page and "| eol (lasttoken): infonce |" in page


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (["--prompt", "nope"], "unknown prompt 'nope'"),
        (["--prompt", "no placeholder here"], "unknown prompt"),
        (["--prompt", "{text} and {text}"], "exactly one {text}"),
        (["--prompt", "eol", "--max-length", "8"], "leaving no room for text"),
        (["--prompt", "none,eol,eol"], "more than once"),
    ],
)
def test_cli_bad_prompt(tiny_dirs, tmp_path, args, message):
    out = tmp_path / "out"
    result = run_cli(
        "select",
        str(tiny_dirs("llama")),
        "--calibration",
        calibration_file(tmp_path),
        "--output",
        str(out),
        "-q",
        *args,
    )
    assert result.returncode == 1, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.slow
def test_prompt_from_the_environment(tiny_dirs, tmp_path):
    out = tmp_path / "o"
    result = run_cli(
        "select",
        str(tiny_dirs("llama")),
        "--calibration",
        calibration_file(tmp_path),
        "--output",
        str(out),
        "--metrics",
        "infonce",
        "-q",
        env={"LAYERPICK_PROMPT": "eol"},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "report.json").read_text())["prompt"]["name"] == "eol"


def test_views_wrap_the_augmented_text_not_the_template(tiny_dirs, tmp_path, monkeypatch):
    import layerpick.selection.scoring as scoring
    from layerpick.core.prompts import parse_prompt

    calls = []
    real = scoring.collect
    monkeypatch.setattr(
        scoring,
        "collect",
        lambda loaded, texts, config, *a: calls.append((list(texts), config.prompt)) or real(loaded, texts, config, *a),
    )
    config = SelectConfig(
        transform="none",
        calibration=calibration_file(tmp_path),
        metrics="infonce",
        rule="min-infonce",
        collect=QUIET,
        scoring=ScoringConfig(views=2),
        prompt="eol",
    )
    run_select(str(tiny_dirs("llama")), config=config)
    ((views, prompt),) = calls
    assert prompt == parse_prompt("eol") and len(views) == 48
    assert not any("This sentence" in view for view in views)  # the template is added by the tokenizer
