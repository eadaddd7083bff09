"""`layerpick bench SOURCE --layers ... --static DIR`: static exports of a tiny BERT timed in the same interleaved run
as its cuts and its full model. Structure and positive numbers only; no timing expectations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.cuts import plan_cuts, run_cuts
from layerpick.benchmark.cuts_output import to_markdown, write_cuts
from layerpick.benchmark.statics import size_on_disk
from layerpick.cli.app import app
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model

pytest.importorskip("model2vec")
SMALL = BenchConfig(batch_sizes=(1, 3), texts=3, repeats=1, memory=False)


@pytest.mark.full  # memory probes in 5 fresh processes (24 s); the CLI test below times statics beside cuts too
def test_static_exports_are_timed_beside_the_cuts(tiny_dirs, statics, tmp_path):
    plan = plan_cuts(str(tiny_dirs("bert")), "2", statics=tuple(statics))
    assert [peer.layer for peer in plan.statics] == [1, 3]
    result = run_cuts(plan, BenchConfig(batch_sizes=(1, 3), texts=3, repeats=1, memory=True, threads=1))
    assert [(r.layer, r.batch_size) for r in result.rows] == [(2, 1), (2, 3)]
    assert [(r.name, r.layer, r.batch_size) for r in result.statics] == [
        ("static-1", 1, 1),
        ("static-1", 1, 3),
        ("static-3", 3, 1),
        ("static-3", 3, 3),
    ]
    for row in result.statics:
        assert row.texts_per_s > 0 and row.full_texts_per_s > 0 and row.latency_median_ms > 0
        # default rel 1e-6: the ratio is the same division of the same floats; repr only
        assert row.measured_speedup == pytest.approx(row.texts_per_s / row.full_texts_per_s)
        assert row.peak_memory_bytes > 0 and row.memory_ratio > 0
        assert row.size_bytes == size_on_disk(Path(row.path)) > 0
    assert result.rows[0].size_bytes > 0 and result.full_size_bytes > result.rows[0].size_bytes
    table = to_markdown(result)
    assert "| static static-1 (layer 1) | 1 |" in table and "| static static-3 (layer 3) | 3 |" in table
    assert "size MB" in table and any("static static-3: a model2vec table" in note for note in result.notes)
    written = write_cuts(result, tmp_path / "out")
    data = json.loads(written[0].read_text())
    assert len(data["statics"]) == 4 and data["statics"][0]["size_bytes"] > 0


@pytest.mark.slow
def test_the_cli_takes_repeated_static(tiny_dirs, statics, tmp_path):
    out = tmp_path / "out"
    args = [
        "bench",
        str(tiny_dirs("bert")),
        "--layers",
        "2",
        "--batch-sizes",
        "1,3",
        "--texts",
        "3",
        "--repeats",
        "1",
        "--no-memory",
        "--output",
        str(out),
        "-q",
    ]
    for path in statics:
        args += ["--static", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "static static-1 (layer 1)" in result.output and "static static-3 (layer 3)" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["cuts.json", "cuts.md", "cuts.png"]


def test_a_directory_that_is_not_a_static_export_is_refused(tiny_dirs, tmp_path):
    cut = tmp_path / "cut"
    export_model(str(tiny_dirs("bert")), 2, cut, ExportConfig(progress=False))
    with pytest.raises(BenchError, match=f"--static {cut} is not a layerpick static export"):
        plan_cuts(str(tiny_dirs("bert")), "2", statics=(cut,))


def test_a_static_export_of_another_depth_is_refused(tiny_dirs, statics, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(statics[0], other)
    data = json.loads((other / "layerpick.json").read_text())
    (other / "layerpick.json").write_text(json.dumps({**data, "num_layers": 30}))
    with pytest.raises(BenchError, match="distilled from a model with 30 layers; the model benched has 4"):
        plan_cuts(str(tiny_dirs("bert")), "2", statics=(other,))


def test_static_needs_layers(tiny_dirs, statics, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["bench", str(tiny_dirs("bert")), "--static", str(statics[0]), "--output", str(out)]
    )
    assert result.exit_code == 1 and str(result.exception) == "--static needs --layers (e.g. --layers 2,4)"
    assert not out.exists()


def test_smaller_configs_keep_their_cut_rows_unchanged(tiny_dirs):
    result = run_cuts(plan_cuts(str(tiny_dirs("bert")), "1"), SMALL)
    assert result.statics == [] and [r.layer for r in result.rows] == [1, 1]
    assert "static" not in to_markdown(result).split("\n\n")[1]
