"""`layerpick export MODEL --format static --layers 1,3` on a tiny BERT: one load, OUTPUT/layer-K per layer, each the
same table a single `--layer K --format static` export writes; bad requests end in one line before the weights are
read, and a run that fails part-way leaves nothing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerpick.cli.app import app
from layerpick.errors import LayerpickError
from layerpick.exporting import static, static_layers
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.static_layers import export_static_layers, parse_layers

LAYERS, DIMS = (1, 3), 16
CONFIG = ExportConfig(progress=False, format="static", static_dims=DIMS)


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


@pytest.fixture(scope="module")
def several(tiny_dirs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bert-layers") / "out"
    export_static_layers(str(tiny_dirs("bert")), "3,1", out, CONFIG)
    return out


def test_one_folder_per_layer_and_an_index(several):
    assert leftovers(several) == ["layer-1", "layer-3", "layers.json"]
    index = json.loads((several / "layers.json").read_text())
    assert index["layers"] == [1, 3] and index["exports"]["3"]["directory"] == "layer-3"
    assert index["exports"]["1"]["pca_dims"] == DIMS and index["exports"]["1"]["bytes"] > 0
    assert not list(several.parent.glob(".*partial*")) and not list(several.parent.glob(".*lock"))


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_is_what_a_single_export_gives(several, layer, tiny_dirs, tmp_path):
    single = tmp_path / "single"
    export_model(str(tiny_dirs("bert")), layer, single, CONFIG)
    ours = several / f"layer-{layer}"
    assert (ours / static.TABLE_FILE).read_bytes() == (single / static.TABLE_FILE).read_bytes()
    assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in single.iterdir())
    mine, theirs = (json.loads((path / "layerpick.json").read_text()) for path in (ours, single))
    assert mine["layer"] == theirs["layer"] == layer
    assert mine["static"]["parity"]["cosine_to_cut"] == theirs["static"]["parity"]["cosine_to_cut"]
    assert f"--output {ours}" in json.dumps(mine) and "--layer " + str(layer) in json.dumps(mine)


def test_the_cli_writes_every_layer(tiny_dirs, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "export",
            str(tiny_dirs("bert")),
            "--layers",
            "1,2",
            "--output",
            str(out),
            "--format",
            "static",
            "--static-dims",
            "8",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert leftovers(out) == ["layer-1", "layer-2", "layers.json"]
    assert "wrote 2 static exports" in result.output and "layer-1, layer-2" in result.output


def test_parse_layers():
    assert parse_layers("6, 2,2") == [2, 6]
    with pytest.raises(LayerpickError, match="comma-separated layers"):
        parse_layers("two")
    with pytest.raises(LayerpickError, match="layer 0 is out of range for --layers"):
        parse_layers("0,2")


@pytest.mark.parametrize(
    ("layers", "options", "message"),
    [
        ("2,5", {}, r"layer 5 is out of range for --layers: this model has layers 1..4"),
        (
            "2",
            dict(format="sentence-transformers", static_dims=None),
            "--layers writes one static export per layer: add --format static",
        ),
        ("2", dict(format="onnx", static_dims=None), "add --format static"),
        ("x", {}, "--layers must be comma-separated layers"),
        ("2", dict(static_dims=64), r"--static-dims 64 is above the model's hidden size \(32\)"),
        ("2", dict(prompt="eol"), "cannot carry the prompt template"),
    ],
)
def test_bad_requests_fail_before_the_weights_are_read(layers, options, message, tiny_dirs, tmp_path):
    source = tmp_path / "source"
    shutil.copytree(tiny_dirs("bert"), source)
    (source / "model.safetensors").write_bytes(os.urandom(4096))  # read first, it would be the error
    config = ExportConfig(**{"progress": False, "format": "static", **options})
    with pytest.raises(LayerpickError, match=message) as caught:
        export_static_layers(str(source), layers, tmp_path / "out" / "deep", config)
    assert len(str(caught.value).splitlines()) == 1
    assert leftovers(tmp_path) == ["source"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layer", "2", "--layers", "1,2"], "give --layer K or --layers K1,K2,..., not both"),
        (["--layers", "1,2", "--report", "report.json"], "--layers names the layers to distil: drop --report"),
    ],
)
def test_conflicting_options_are_one_line(args, message, tiny_dirs, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["export", str(tiny_dirs("bert")), "--output", str(out), "--format", "static", *args]
    )
    assert result.exit_code == 1 and str(result.exception).startswith(message)
    assert len(str(result.exception).splitlines()) == 1
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "error", [static.StaticExportError("model2vec cannot distil BertModel: boom"), KeyboardInterrupt()]
)
def test_a_failure_or_interrupt_part_way_leaves_nothing(error, tiny_dirs, tmp_path, monkeypatch):
    real, calls = static.export_static, []

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # layer 1 is already in place in the staging folder
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(static, "export_static", second_fails)
    with pytest.raises(type(error)):
        export_static_layers(str(tiny_dirs("bert")), "1,2", tmp_path / "out", CONFIG)
    assert len(calls) == 2 and leftovers(tmp_path) == []  # no output, no staging folder, no lock file


def test_an_existing_output_needs_overwrite_and_is_replaced_whole(several, tiny_dirs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(several, out)
    with pytest.raises(LayerpickError, match="already holds a layerpick multi-layer static export"):
        export_static_layers(str(tiny_dirs("bert")), "2", out, CONFIG)
    export_static_layers(str(tiny_dirs("bert")), "2", out, ExportConfig(**{**CONFIG.__dict__, "overwrite": True}))
    assert leftovers(out) == ["layer-2", "layers.json"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(LayerpickError, match="holds no earlier layerpick multi-layer static export"):
        export_static_layers(str(tiny_dirs("bert")), "2", tmp_path / "other", CONFIG)


def test_the_index_names_every_layer_folder():
    assert static_layers.layer_name(12) == "layer-12"
