"""`layerpick validate MODEL --static DIR`: static exports of a tiny BERT scored beside its layers, on the same
tasks, in validation.json, the frontier table and the plots; and the one-line refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerpick.cli.app import app
from layerpick.frontier.plot import draw_statics, frontier_figure, pyplot
from layerpick.frontier.table import frontier_table
from layerpick.validation import ValidateConfig, run_validation
from layerpick.validation.errors import StaticExportError
from tests.testkit.cli import invoke
from tests.testkit.tasks import ALL_KINDS

pytest.importorskip("model2vec")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("tasks")
    return [str(ALL_KINDS["sts"](root)), str(ALL_KINDS["retrieval"](root))]


def validate(model: str, tasks: list[str], tmp_path: Path, name: str, **config):
    common = dict(store_dir=tmp_path / "store", progress=False, output_dir=tmp_path / name)
    return run_validation(model, tasks, ValidateConfig(**common, **config))


@pytest.mark.slow
def test_static_exports_score_as_they_do_alone(tiny_dirs, statics, tasks, tmp_path):
    model = str(tiny_dirs("bert"))
    run = validate(model, tasks, tmp_path, "with-statics", static_exports=tuple(statics))
    entries = run.report.static_exports
    assert [(entry["name"], entry["layer"], entry["pca_dims"]) for entry in entries] == [
        ("static-1", 1, 8),
        ("static-3", 3, 8),
    ]
    for path, entry in zip(statics, entries):
        alone = validate(None, tasks, tmp_path, f"alone-{path.name}", exported_dir=path).report
        for name in ("sts", "retrieval"):
            # abs 1e-6: main scores are rounded to 6 decimals; the same static model scored twice
            assert entry["main_score"][name] == pytest.approx(alone.task_scores(name)[entry["layer"]], abs=1e-6)
        mean_over = run.report.mean_over
        # default rel 1e-6: the same float64 mean of the same scores; summation order only
        assert entry["mean"] == pytest.approx(sum(entry["main_score"][n] for n in mean_over) / len(mean_over))
    plain = validate(model, tasks, tmp_path, "plain").report
    assert plain.static_exports is None and "static_exports" not in plain.to_json()
    # default rel 1e-6: the same layers scored the same way; the scores are equal
    assert run.report.mean_by_layer == pytest.approx(plain.mean_by_layer)  # the layers' own scores are unchanged


@pytest.mark.slow
def test_statics_are_rows_of_the_frontier_table_and_lines_of_the_plot(tiny_dirs, statics, tasks, tmp_path):
    run = validate(str(tiny_dirs("bert")), tasks, tmp_path, "out", static_exports=tuple(statics))
    data = run.report.to_json()
    header, rows = frontier_table(data)
    static_rows = [row for row in rows if row[0].startswith("static ")]
    assert [row[0] for row in static_rows] == ["static static-1", "static static-3"]
    best = data["frontier"]["best_score"]
    for row, entry in zip(static_rows, data["static_exports"]):
        assert row[1] == f"{entry['mean']:.4f}" and row[2] == f"{best - entry['mean']:.4f}"
        assert row[3:-1] == ["–"] * (len(header) - 4) and "from layer" in row[-1]
    figure, axis = frontier_figure()
    draw_statics(axis, data["static_exports"])
    lines = {line.get_label(): line.get_ydata()[0] for line in axis.get_lines()}
    pyplot().close(figure)
    for entry in data["static_exports"]:
        label = f"static {entry['name']} (from layer {entry['layer']}): {entry['mean']:.3f}"
        # default rel 1e-6: the plotted value is the mean itself; repr only
        assert lines[label] == pytest.approx(entry["mean"])
    assert {"frontier.png", "validation.png"} <= {path.name for path in run.files}


@pytest.mark.slow
def test_cli_takes_repeated_static(tiny_dirs, statics, tasks, tmp_path):
    args = ["validate", str(tiny_dirs("bert")), "--tasks", tasks[0], "--output", str(tmp_path / "out")]
    args += ["--store", str(tmp_path / "store"), "--quiet"]
    result = CliRunner().invoke(app, [*args, "--static", str(statics[0]), "--static", str(statics[1]), "--json"])
    assert result.exit_code == 0, result.output
    assert [entry["layer"] for entry in json.loads(result.stdout)["static_exports"]] == [1, 3]
    table = CliRunner().invoke(app, [*args, "--static", str(statics[0])], env={"COLUMNS": "240"})
    assert table.exit_code == 0 and "static static-1" in table.stdout, table.stdout


def test_a_folder_that_is_not_a_static_export_is_refused_before_loading(tiny_dirs, tasks, tmp_path):
    with pytest.raises(StaticExportError, match="is not a layerpick static export"):
        validate("no-such-model", tasks, tmp_path, "out", static_exports=(tiny_dirs("bert"),))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_static_export_of_another_depth_is_refused(tiny_dirs, statics, tasks, tmp_path):
    other = tmp_path / "other-depth"
    shutil.copytree(statics[0], other)
    metadata = json.loads((other / "layerpick.json").read_text())
    (other / "layerpick.json").write_text(json.dumps({**metadata, "num_layers": 7}))
    with pytest.raises(StaticExportError, match="model with 7 layers; the model validated has 4"):
        validate(str(tiny_dirs("bert")), tasks, tmp_path, "out", static_exports=(other,))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_static_with_exported_is_refused_in_one_line(statics, tasks, tmp_path):
    args = ["validate", "--exported", str(statics[0]), "--static", str(statics[1]), "--tasks", tasks[0]]
    done = invoke(*args, "--output", tmp_path / "out")
    assert done.returncode == 1 and done.stderr.strip().endswith("give a model, not --exported"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
