"""The Python verbs take paths and lists the way Python callers write them (issue 33, cause 10): a `pathlib.Path`
wherever a path goes (the model, an output, a config's path fields), one string where a list goes, None for a
config's defaults; a wrong type is one `ArgumentError` (a TypeError too) before any work."""

import re
from pathlib import Path

import pytest

import layerpick
from layerpick import ExportConfig, HealConfig, SelectConfig, ValidateConfig
from layerpick.errors import ArgumentError
from tests.testkit.calibration import calibration_file
from tests.testkit.tasks import sts_folder


def test_paths_everywhere_a_path_goes(tiny_dirs, tmp_path):
    model = tiny_dirs("llama")  # a Path
    texts = Path(calibration_file(tmp_path, n=40))
    report = layerpick.select(
        model, SelectConfig(calibration=texts, limit=16, metrics="infonce"), output=tmp_path / "s"
    )
    assert report.calibration["source"] == str(texts)
    cut = layerpick.export(
        model, ExportConfig(layer=1, transform="center", fit_texts=texts), output=tmp_path / "cut", progress=False
    )
    assert cut.layer == 1 and (tmp_path / "cut" / "layerpick.json").is_file()
    run = layerpick.validate(model, ValidateConfig(tasks=sts_folder(tmp_path), layers="1"), output=tmp_path / "v")
    scored = [layer for layer, mean in enumerate(run.report.mean_by_layer) if mean is not None]
    assert scored == [1]  # one task folder given as one Path (not a list), scored at the layer asked


def test_one_task_name_is_a_list_of_one_not_its_characters(tiny_dirs, tmp_path):
    with pytest.raises(Exception) as refused:
        layerpick.validate(tiny_dirs("llama"), ValidateConfig(tasks="NoSuchTask", layers="1"), output=tmp_path / "v")
    assert "NoSuchTask" in str(refused.value) and "'/'" not in str(refused.value)


def test_a_none_config_is_the_defaults(tmp_path):
    with pytest.raises(Exception, match="give exactly one of a layer"):
        layerpick.export("./no/such/model", None, output=tmp_path / "x")  # ExportConfig(): neither layer nor report
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda tmp: layerpick.select(42), "model must be a path (a str or an os.PathLike), not int"),
        (lambda tmp: layerpick.export("m", {"layer": 1}, output=tmp), "config must be ExportConfig or None, not dict"),
        (lambda tmp: layerpick.export("m", ExportConfig(layer=1, fit_texts=3), output=tmp), "ExportConfig.fit_texts"),
        (lambda tmp: layerpick.heal("m", {"layer": 1}, output=tmp), "config must be HealConfig or None, not dict"),
        (lambda tmp: layerpick.heal("m", HealConfig(layer=1, fit_texts=3), output=tmp), "HealConfig.fit_texts"),
        (lambda tmp: layerpick.compare(7, output=tmp), "reports must be a path or a list of paths, not int"),
        (lambda tmp: layerpick.bench(None), "export_dir must be a path"),
        (lambda tmp: layerpick.run("m", SelectConfig()), "config must be RunConfig or None, not SelectConfig"),
    ],
)
def test_a_wrong_type_is_one_error_at_the_door(call, message, tmp_path):
    with pytest.raises(ArgumentError, match=re.escape(message)):
        call(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert issubclass(ArgumentError, TypeError)


def test_compare_takes_one_folder_as_a_list_of_one(tmp_path):
    with pytest.raises(Exception) as refused:
        layerpick.compare(str(tmp_path / "only"), output=tmp_path / "cmp")
    assert "no report in /" not in str(refused.value) and "only" in str(refused.value)
