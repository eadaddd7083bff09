"""A healed export is an ordinary export: `validate --exported` scores it at its layer and `bench` times it against
the full model it was cut from (read from its layerpick.json), as for any export."""

from __future__ import annotations

from layerpick.benchmark import BenchConfig
from layerpick.benchmark.run import run_bench
from layerpick.validation import ValidateConfig
from layerpick.validation.run import run_validation
from tests.healing.conftest import LAYER
from tests.testkit.tasks import sts_folder


def test_validate_scores_the_healed_export_at_its_layer(healed, tmp_path):
    _, output = healed
    config = ValidateConfig(exported_dir=output, output_dir=tmp_path / "v", store_dir=tmp_path / "s", progress=False)
    report = run_validation(None, [str(sts_folder(tmp_path))], config).report.to_json()
    assert report["layers_evaluated"] == [LAYER]
    assert isinstance(report["tasks"]["sts"]["main_score_by_layer"][LAYER], float)


def test_bench_times_the_healed_export_against_the_full_model(healed, tiny_dirs):
    _, output = healed
    result = run_bench(output, BenchConfig(batch_sizes=(4,), texts=8, repeats=1, memory=False), progress=False)
    assert [row.batch_size for row in result.rows] == [4]
    assert result.baseline.path == str(tiny_dirs("llama")) and result.exported.layers == LAYER


def test_a_healed_export_converts_to_onnx_int8_keeping_its_heal(healed, tiny_dirs, tmp_path):
    """`layerpick export HEALED --layer K --format onnx --quantize int8`: the healed weights, exported whole, keep
    the heal section; its full model stays the baseline bench compares with."""
    from layerpick.exporting import ExportConfig, export_model
    from layerpick.exporting.metadata import read_metadata

    report, output = healed
    converted = tmp_path / "onnx"
    export_model(str(output), LAYER, converted, ExportConfig(progress=False, format="onnx", quantize="int8"))
    metadata = read_metadata(converted)
    assert metadata.heal == report.to_json() and metadata.onnx
    assert (converted / "onnx" / "model_quantized.onnx").is_file()
    assert metadata.baseline["path"] == str(tiny_dirs("llama"))
