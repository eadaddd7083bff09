"""The ONNX backend reads a folder's pooling from both forms of 1_Pooling/config.json: the legacy flags
(`pooling_mode_mean_tokens: true`) and the one key sentence-transformers 5.7 and later write (`pooling_mode`)."""

from __future__ import annotations

import json

import pytest

from layerpick.errors import LayerpickError
from layerpick.exporting.onnx.encoder import _pooling


def folder(tmp_path, config: dict):
    modules = [{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize(
    "config, mode",
    [
        ({"pooling_mode": "mean"}, "mean"),
        ({"pooling_mode": "cls"}, "cls"),
        ({"pooling_mode": "lasttoken"}, "lasttoken"),
        ({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}, "mean"),
        ({"pooling_mode_cls_token": True}, "cls"),
    ],
)
def test_both_forms_of_the_pooling_config_are_read(tmp_path, config, mode):
    assert _pooling(folder(tmp_path, config)) == mode


@pytest.mark.parametrize("config", [{"pooling_mode": "max"}, {"pooling_mode_max_tokens": True}, {}])
def test_a_pooling_the_graph_reader_does_not_apply_is_one_line(tmp_path, config):
    with pytest.raises(LayerpickError, match="the ONNX backend pools with one of"):
        _pooling(folder(tmp_path, config))
