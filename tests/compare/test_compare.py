"""compare: hand-made select/validation reports of three fake models (L = 6, 12, 30), the table, the files, the
pairing, the labels, bad input through the library and the real entry point, and a real tiny select."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from layerpick.comparison.run import (
    CompareError,
    NotAReportError,
    OutputExistsError,
    ReportNotFoundError,
    compare_reports,
    load_entries,
    short_name,
)
from layerpick.errors import LayerpickError

LAYERPICK = str(Path(sys.executable).parent / "layerpick")
METRICS = {"dataset-entropy": "max", "dime": "min"}


def select_report(model, num_layers, selected, *, revision=None, rule="max-dataset-entropy", metrics=METRICS):
    scores = {
        name: [None if k == 0 and name == "dime" else float((k * 7 + len(name)) % 11) for k in range(num_layers + 1)]
        for name in metrics
    }
    return {
        "format": "layerpick-select/1",
        "model": model,
        "revision": revision,
        "num_layers": num_layers,
        "representation": "exported",
        "pooling": "mean",
        "rule": rule,
        "selected_layer": selected,
        "scores": scores,
        "directions": dict(metrics),
        "calibration": {"source": "embedded", "count": 8, "sha256": "0" * 64},
        "seed": 0,
        "versions": {},
        "timings": {},
    }


def validation(model, num_layers, means, selected=None):
    """validation.json with two tasks whose mean is `means` (a dict layer -> score; other layers unscored)."""
    by_layer = [means.get(k) for k in range(num_layers + 1)]
    low = [None if v is None else v - 0.1 for v in by_layer]
    high = [None if v is None else v + 0.1 for v in by_layer]
    best = max(means, key=lambda k: (means[k], -k))
    return {
        "format": "layerpick-validation/1",
        "model": model,
        "num_layers": num_layers,
        "layers_evaluated": sorted(means),
        "tasks": {"A": {"main_score_by_layer": low}, "B": {"main_score_by_layer": high}},
        "mean_by_layer": by_layer,
        "selected_layer": selected,
        "last_layer": num_layers,
        "best_layer": best,
        "timings": {},
        "versions": {},
    }


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.fixture
def three_models(tmp_path):
    """small (L=6): report + validation/validation.json (select's and validate's default layout);
    base (L=12): a `layerpick run` folder (select/, validate/); large (L=30): a bare report.json file."""
    small = tmp_path / "out" / "small"
    write(small / "report.json", select_report("org/small", 6, 3))
    write(
        small / "validation" / "validation.json",
        validation("org/small", 6, {k: 0.5 + 0.02 * k for k in range(7)} | {3: 0.7}),
    )
    base = tmp_path / "runs" / "base"
    write(base / "select" / "report.json", select_report("/models/base", 12, 4, revision="step1000"))
    write(base / "validate" / "validation.json", validation("/models/base", 12, {4: 0.62, 12: 0.6}, selected=4))
    write(base / "run.json", {})
    large = write(tmp_path / "large" / "report.json", select_report("large-alias", 30, 12))
    return small, base, large


def test_table_relative_depth_and_gains(three_models, tmp_path):
    small, base, large = three_models
    result = compare_reports([small, base, large], tmp_path / "cmp")
    rows = {row["label"]: row for row in result.report.table}
    assert list(rows) == ["org/small", "base@step1000", "large-alias"]
    s, b, g = rows["org/small"], rows["base@step1000"], rows["large-alias"]
    # default rel 1e-6: 3 / 6 is exact; approx absorbs the repr only
    assert (s["num_layers"], s["selected_layer"], s["selected_depth"]) == (6, 3, pytest.approx(0.5))
    # default rel 1e-6: scores copied from the fixture's JSON; repr only
    assert s["selected_score"] == pytest.approx(0.7) and s["last_score"] == pytest.approx(0.62)
    # default rel 1e-6: exact depth and a score copied from the fixture; repr only
    assert s["best_layer"] == 3 and s["best_depth"] == pytest.approx(0.5) and s["best_score"] == pytest.approx(0.7)
    # default rel 1e-6 (approx(0.0): abs 1e-12): 0.7 - 0.62 in float64 is 0.0799...96; 0.7 - 0.7 is 0
    assert s["gain_over_last"] == pytest.approx(0.08) and s["gap_to_best"] == pytest.approx(0.0)
    # default rel 1e-6: 4 / 12 and 0.62 - 0.6 in float64; repr only
    assert b["selected_depth"] == pytest.approx(4 / 12) and b["gain_over_last"] == pytest.approx(0.02)
    assert b["best_layer"] == 4 and b["revision"] == "step1000" and b["validated"]
    # default rel 1e-6: 12 / 30 in float64; repr only
    assert g["selected_depth"] == pytest.approx(0.4) and not g["validated"]
    assert g["selected_score"] is None and g["gain_over_last"] is None and g["best_layer"] is None
    models = {m["label"]: m for m in result.report.models}
    # default rel 1e-6: 12 / 30 in float64; repr only
    assert models["large-alias"]["depth"][12] == pytest.approx(0.4) and len(models["large-alias"]["depth"]) == 31
    assert models["org/small"]["validation"].endswith("validation.json") and models["org/small"]["tasks"] == ["A", "B"]
    assert result.report.metrics == {"dataset-entropy": "max", "dime": "min"}


def test_files_written(three_models, tmp_path):
    out = tmp_path / "cmp"
    result = compare_reports(list(three_models), out)
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "compare.json",
        "compare.md",
        "mean-task-score.png",
        "metric-dataset-entropy.png",
        "metric-dime.png",
    ]
    assert sorted(p.name for p in result.files) == names
    assert all((out / n).stat().st_size > 0 for n in names)
    assert (out / "metric-dime.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "compare.json").read_text()) == result.report.to_json()
    markdown = (out / "compare.md").read_text()
    assert (
        "| org/small | 6 | max-dataset-entropy | none | 3 | 0.50 | 0.7000 | 0.6200 | 3 | 0.50 | 0.7000 | +0.0800 |"
        in markdown
    )
    assert "| large-alias | 30 | max-dataset-entropy | none | 12 | 0.40 | – |" in markdown
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_without_validation_no_mean_plot(three_models, tmp_path):
    result = compare_reports([three_models[2]], tmp_path / "cmp")
    assert not (tmp_path / "cmp" / "mean-task-score.png").exists()
    assert result.report.plots == ["metric-dataset-entropy.png", "metric-dime.png"]


def test_pairing(three_models, tmp_path):
    small, base, _ = three_models
    entries = load_entries([small, base / "select" / "report.json", base / "validate" / "validation.json"])
    assert [(e.select is not None, e.validation is not None) for e in entries] == [(True, True), (True, True)]
    # files given one by one pair as the folder does; the same file twice counts once
    entries = load_entries([small / "validation" / "validation.json", small / "report.json", small])
    assert len(entries) == 1 and entries[0].select and entries[0].validation
    # a folder of model folders: each one
    entries = load_entries([tmp_path / "out", tmp_path / "runs"])
    assert [e.label for e in entries] == ["org/small", "base@step1000"]


def test_validation_only_and_same_folder_files(tmp_path):
    folder = tmp_path / "m"
    write(folder / "validation.json", validation("tiny", 4, {0: 0.3, 2: 0.5, 4: 0.4}))
    [entry] = load_entries([folder])
    assert entry.select is None and entry.selected_layer is None and entry.rule is None
    result = compare_reports([folder], tmp_path / "cmp")
    row = result.report.table[0]
    # default rel 1e-6: a score copied from the fixture's JSON; repr only
    assert row["best_layer"] == 2 and row["last_score"] == pytest.approx(0.4) and row["gain_over_last"] is None
    assert result.report.plots == ["mean-task-score.png"]


def test_pair_checks(tmp_path):
    folder = tmp_path / "m"
    write(folder / "report.json", select_report("tiny", 4, 2))
    write(folder / "validation.json", validation("tiny-other", 4, {2: 0.5, 4: 0.4}, selected=3))
    [entry] = load_entries([folder])
    assert any("tiny-other" in note for note in entry.notes) and any("layer 3" in note for note in entry.notes)
    write(folder / "validation.json", validation("tiny", 6, {2: 0.5, 6: 0.4}))
    with pytest.raises(CompareError, match="not from the same model"):
        load_entries([folder])


def test_unique_labels_with_revisions(tmp_path):
    paths = [
        write(tmp_path / "a" / "report.json", select_report("pythia", 6, 2, revision="step1000")),
        write(tmp_path / "b" / "report.json", select_report("pythia", 6, 3, revision="step2000")),
        write(tmp_path / "c" / "report.json", select_report("pythia", 6, 4)),
        write(tmp_path / "d" / "report.json", select_report("pythia", 6, 4)),
        write(tmp_path / "x" / "d" / "report.json", select_report("pythia", 6, 5)),
        write(tmp_path / "e" / "r1.json", select_report("/abs/path/pythia", 6, 1)),
        write(tmp_path / "e" / "r2.json", select_report("/abs/path/pythia", 6, 1)),
    ]
    labels = [e.label for e in load_entries(paths)]
    assert labels == [
        "pythia@step1000",
        "pythia@step2000",
        "pythia (c)",
        "pythia (d) #1",
        "pythia (d) #2",
        "pythia (r1)",
        "pythia (r2)",
    ]


def test_short_name():
    assert short_name("HuggingFaceTB/SmolLM2-135M") == "HuggingFaceTB/SmolLM2-135M"
    assert short_name("smollm2-135m") == "smollm2-135m"
    assert short_name("/tmp/x/tiny-llama/") == "tiny-llama" and short_name("./models/m") == "m"


@pytest.mark.parametrize(
    "content, error, message",
    [
        (None, ReportNotFoundError, "report not found"),
        ("{not json", NotAReportError, "not valid JSON"),
        ("[1, 2]", NotAReportError, "expected a JSON object"),
        (
            {"format": "layerpick-select/1", "model": "m", "num_layers": 4, "rule": "max-dime"},
            NotAReportError,
            "missing selected_layer, scores",
        ),
        (
            {"format": "layerpick-validation/1", "model": "m", "tasks": {}},
            NotAReportError,
            "is not a layerpick validation.json: missing num_layers, mean_by_layer",
        ),
        (
            {"hello": 1},
            NotAReportError,
            "no format key (expected layerpick-select/1 for a select report.json or "
            "layerpick-validation/1 for a validation.json)",
        ),
        ({"format": "layerpick-bench/1"}, NotAReportError, "format 'layerpick-bench/1'"),
        ({**select_report("m", 4, 2), "selected_layer": 9}, NotAReportError, "selected_layer must be a layer in 0..4"),
        ({**select_report("m", 4, 2), "scores": {"dime": [1.0, 2.0]}}, NotAReportError, "must hold 5 values"),
        ({**select_report("m", 4, 2), "num_layers": 0}, NotAReportError, "num_layers must be a positive integer"),
        (
            {**validation("m", 4, {1: 0.5}), "mean_by_layer": [None] * 5, "failures": {"A": "ZeroDivisionError"}},
            NotAReportError,
            "no layer has a mean task score (failed: A); nothing to compare",
        ),
        (
            {**validation("m", 4, {1: 0.5}), "tasks": {}, "mean_by_layer": [None] * 5},
            NotAReportError,
            "no layer has a mean task score (no tasks)",
        ),
    ],
)
def test_bad_inputs(tmp_path, content, error, message):
    path = tmp_path / "r.json"
    if content is not None:
        write(path, content)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare_reports([path], tmp_path / "cmp")
    assert issubclass(error, LayerpickError) and not (tmp_path / "cmp").exists()


def test_a_metric_without_values_draws_an_empty_plot_without_warnings(tmp_path):
    import warnings

    report = select_report("m", 4, 2)
    report["scores"]["dime"] = [None] * 5
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # matplotlib's "No artists with labels found to put in legend"
        result = compare_reports([write(tmp_path / "r.json", report)], tmp_path / "cmp")
    assert "metric-dime.png" in result.report.plots and (tmp_path / "cmp" / "metric-dime.png").is_file()


def test_empty_folder_and_no_inputs(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportNotFoundError, match="no report in"):
        load_entries([tmp_path / "empty"])
    with pytest.raises(CompareError, match="at least one report"):
        load_entries([])


def test_ambiguous_folder(tmp_path):
    write(tmp_path / "m" / "r1.json", select_report("a", 4, 2))
    write(tmp_path / "m" / "r2.json", select_report("b", 4, 2))
    write(tmp_path / "m" / "validation.json", validation("a", 4, {2: 0.5}))
    with pytest.raises(CompareError, match="which report goes with which validation"):
        load_entries([tmp_path / "m" / "r1.json", tmp_path / "m" / "r2.json", tmp_path / "m" / "validation.json"])


def test_existing_output(three_models, tmp_path):
    out = tmp_path / "cmp"
    compare_reports(list(three_models), out)
    first = (out / "compare.json").read_text()
    with pytest.raises(OutputExistsError, match="--overwrite"):
        compare_reports([three_models[2]], out)
    assert (out / "compare.json").read_text() == first
    compare_reports([three_models[2]], out, overwrite=True)  # a previous compare output is replaced whole
    assert (
        not (out / "mean-task-score.png").exists() and len(json.loads((out / "compare.json").read_text())["table"]) == 1
    )
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    # a folder holding anything else is never replaced, even with --overwrite
    with pytest.raises(OutputExistsError, match="holds no earlier layerpick comparison"):
        compare_reports([three_models[2]], three_models[0], overwrite=True)
    assert (three_models[0] / "report.json").exists()
    (tmp_path / "empty").mkdir()
    compare_reports([three_models[2]], tmp_path / "empty")  # an empty folder is fine
    file = write(tmp_path / "file", "x")
    with pytest.raises(OutputExistsError, match="not a directory"):
        compare_reports([three_models[2]], file, overwrite=True)


def test_output_in_place_keeps_the_folder(three_models, tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    compare_reports(list(three_models), ".")
    compare_reports([three_models[2]], ".", overwrite=True)  # the folder (a shell's cwd) stays, its files change
    assert Path.cwd() == here and here.is_dir()
    assert sorted(p.name for p in here.iterdir()) == [
        "compare.json",
        "compare.md",
        "metric-dataset-entropy.png",
        "metric-dime.png",
    ]


def test_no_partial_output_on_failure(three_models, tmp_path, monkeypatch):
    import layerpick.comparison.run as compare

    out = tmp_path / "cmp"
    compare_reports(list(three_models), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*args, **kwargs):
        raise RuntimeError("plotting failed")

    monkeypatch.setattr(compare, "plot_mean_score", broken)
    with pytest.raises(RuntimeError):
        compare_reports([three_models[0]], out, overwrite=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with pytest.raises(RuntimeError):
        compare_reports([three_models[0]], tmp_path / "new")
    assert not (tmp_path / "new").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------------------------------ the real CLI


def run_cli(*args):
    """The installed `layerpick` script in a subprocess (slow: it imports torch and transformers)."""
    return subprocess.run([LAYERPICK, "compare", *map(str, args)], capture_output=True, text=True, timeout=300)


def run_main(capsys, monkeypatch, *args):
    """The same entry point, `layerpick.cli.app:main`, in this process; returns (exit code, stdout, stderr)."""
    from layerpick.cli.app import main

    monkeypatch.setattr(sys, "argv", ["layerpick", "compare", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as done:
        code = done.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code, stderr, message):
    assert code == 1, stderr
    assert "Traceback" not in stderr and stderr.strip().startswith("layerpick: error:")
    assert message in stderr and len(stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_cli_table_and_json(three_models, tmp_path, capsys, monkeypatch):
    result = run_cli(*three_models, "--output", tmp_path / "cmp")
    assert result.returncode == 0, result.stderr
    assert "org/small" in result.stdout and "3 (0.50)" in result.stdout and "+0.0800" in result.stdout
    assert "rule: max-dataset-entropy" in result.stdout and "wrote" in result.stdout
    code, out, _ = run_main(capsys, monkeypatch, *three_models, "--output", tmp_path / "cmp", "--json", "--overwrite")
    assert code == 0
    assert json.loads(out) == json.loads((tmp_path / "cmp" / "compare.json").read_text())


@pytest.mark.slow
def test_cli_existing_output_is_a_user_error(three_models, tmp_path, capsys, monkeypatch):
    out = write(tmp_path / "cmp" / "keep.txt", "mine").parent
    code, _, err = run_main(capsys, monkeypatch, three_models[2], "--output", out)
    assert_one_line_error(code, err, "holds no earlier layerpick comparison")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "report not found"),
        ("bad-json", "not valid JSON"),
        ("not-report", "no format key"),
        ("overwrite-foreign", "holds no earlier layerpick comparison"),
    ],
)
def test_cli_user_errors(three_models, tmp_path, capsys, monkeypatch, case, message):
    out, extra = tmp_path / "cmp", []
    if case == "missing":
        args = [tmp_path / "nope.json"]
    elif case == "bad-json":
        args = [write(tmp_path / "bad.json", "{")]
    elif case == "not-report":
        args = [write(tmp_path / "other.json", {"hello": 1})]
    else:
        write(out / "keep.txt", "mine")
        args, extra = [three_models[2]], ["--overwrite"]
    code, _, err = run_main(capsys, monkeypatch, *args, "--output", out, *extra)
    assert_one_line_error(code, err, message)
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_cli_usage_errors(tmp_path, capsys, monkeypatch):
    code, _, err = run_main(capsys, monkeypatch)
    assert code == 2 and "Missing argument" in err
    code, _, err = run_main(capsys, monkeypatch, tmp_path, "--no-such-option")
    assert code == 2 and "No such option" in err


def test_cli_help_has_an_example(capsys, monkeypatch):
    code, out, _ = run_main(capsys, monkeypatch, "--help")
    assert code == 0 and "Example: layerpick compare" in out


# ------------------------------------------------------------------------------------------ a real select


@pytest.mark.slow
def test_real_tiny_selects(tiny_dirs, tmp_path):
    from layerpick.core.collect import CollectConfig
    from layerpick.core.models import LoadOptions
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.job import select_and_write

    calibration = tmp_path / "calib.txt"
    calibration.write_text("\n".join(f"sentence number {i} talks about topic {i % 5} and more" for i in range(16)))
    config = SelectConfig(
        calibration=str(calibration),
        metrics="dataset-entropy,curvature",
        rule="max-dataset-entropy",
        collect=CollectConfig(progress=False, batch_size=8),
    )
    for family in ("llama", "gpt2"):
        select_and_write(str(tiny_dirs(family)), LoadOptions(), config, tmp_path / "out" / family)
    result = compare_reports([tmp_path / "out"], tmp_path / "cmp")
    rows = result.report.table
    assert len(rows) == 2 and len({row["label"] for row in rows}) == 2
    for row in rows:
        # default rel 1e-6: the same float64 division; repr only
        assert row["num_layers"] == 4 and row["selected_depth"] == pytest.approx(row["selected_layer"] / 4)
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == [
        "compare.json",
        "compare.md",
        "metric-curvature.png",
        "metric-dataset-entropy.png",
    ]
