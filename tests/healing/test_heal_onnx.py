"""A healed cut compounded with ONNX Runtime: `heal --format onnx --quantize int8` adds the graphs traced from the
trained weights (checked against them), and `export HEALED --format onnx` copies a healed export with its graph,
keeping its heal record and its teacher; the bench of either times the graph against the full model."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from layerpick.errors import LayerpickError
from layerpick.exporting import ExportConfig, export_model
from layerpick.exporting.metadata import ExportMetadata
from layerpick.healing import heal_or_sweep
from tests.healing.conftest import save_embedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plain_embedder(tmp_path_factory):
    """A tiny BERT embedder without a default prompt (a prompt the graph's reader does not apply is refused)."""
    return save_embedder(tmp_path_factory.mktemp("plain-embedder"), "bert")


@pytest.fixture(scope="module")
def healed_graph(plain_embedder, tiny_config, tmp_path_factory):
    output = tmp_path_factory.mktemp("healed-onnx") / "bert-l1"
    config = dataclasses.replace(tiny_config, format="onnx", quantize="int8", layer=1)
    report = heal_or_sweep(str(plain_embedder), None, output, config)
    return report, output


def test_the_heal_writes_the_graphs_of_the_trained_weights(healed_graph, plain_embedder):
    from sentence_transformers import SentenceTransformer

    from layerpick.exporting.onnx.encoder import OnnxEncoder

    report, output = healed_graph
    metadata = ExportMetadata.read(output / "layerpick.json")
    assert metadata.is_healed and metadata.onnx["parity"]["passed"] and "int8" in metadata.onnx
    assert (output / "onnx" / "model.onnx").is_file() and (output / "onnx" / "model_quantized.onnx").is_file()
    assert metadata.command.endswith("--format onnx --quantize int8") and "layerpick heal" in metadata.command
    assert metadata.source["path"] == str(plain_embedder)  # the teacher stays the bench's baseline
    texts = ["a short text", "another, longer text about the weather today"]
    torch_vectors = SentenceTransformer(str(output), device="cpu").encode(texts)
    graph_vectors = OnnxEncoder(output, "onnx/model.onnx").encode(texts)
    assert np.allclose(graph_vectors, torch_vectors, atol=1e-4)


def test_a_healed_export_exported_again_with_its_graph_keeps_its_heal_and_teacher(healed_graph, tmp_path):
    _, output = healed_graph
    heal_model_output = json.loads((output / "layerpick.json").read_text())
    again = tmp_path / "again"
    export_model(str(output), 1, again, ExportConfig(format="onnx"))
    metadata = ExportMetadata.read(again / "layerpick.json")
    assert metadata.heal == heal_model_output["heal"]
    assert metadata.baseline["path"] == heal_model_output["source"]["path"]  # the teacher, the bench's baseline
    assert metadata.onnx["parity"]["passed"] and "int8" not in metadata.onnx


def test_a_static_heal_is_refused_before_any_work(tiny_embedder, tiny_config, tmp_path):
    for changes, message in (
        ({"format": "static"}, "a heal writes a sentence-transformers export"),
        ({"quantize": "int8"}, "--quantize applies to the ONNX graph"),
    ):
        with pytest.raises(LayerpickError, match=message):
            heal_or_sweep(str(tiny_embedder), 1, tmp_path / "out", dataclasses.replace(tiny_config, **changes))
        assert not (tmp_path / "out").exists()
