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
