"""`layerpick export --format static` on tiny BERT and Llama models: the directory is a model2vec static model that
model2vec and sentence-transformers load alike, its table is model2vec's distillation of the cut model, its
cosine to the cut is measured where it must be 1, `bench` and `validate --exported` take it, and bad requests end
in one line with nothing written. The same export of minilm-l6 runs as an integration test."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from model2vec import StaticModel
from sentence_transformers import SentenceTransformer
from typer.testing import CliRunner

from layerpick._util import extras
from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.run import run_bench
from layerpick.cli.app import app
from layerpick.core import registry, surgery
from layerpick.core.models import LoadOptions
from layerpick.errors import LayerpickError
from layerpick.exporting import annotate, static, static_checks
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.parity import DEFAULT_PARITY_TEXTS
from layerpick.exporting.static_checks import StaticExportError, StaticRequest
from tests.testkit.tasks import sts_folder
from tests.testkit.tiny import TEXTS, make_loaded, make_model, make_tokenizer, parameter_count

LAYER, DIMS = 2, 16
ONE_TOKEN_TEXTS = [" the", " and"]  # one token each in the tiny vocabulary, for the model and the static table
LONG_TEXT = "the quick brown fox jumps over the lazy dog " * 80  # far beyond any max_seq_length


@pytest.fixture(scope="module")
def bert_static(tiny_dirs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bert-static") / "out"
    export_model(str(tiny_dirs("bert")), LAYER, out, ExportConfig(progress=False, format="static", static_dims=DIMS))
    return out


@pytest.fixture(scope="module")
def llama_cli(tiny_dirs, tmp_path_factory):
    """A Llama static export made through the CLI: last-token pooling, normalised, the default dimension."""
    out = tmp_path_factory.mktemp("llama-static") / "out"
    result = CliRunner().invoke(
        app,
        [
            "export",
            str(tiny_dirs("llama")),
            "--layer",
            str(LAYER),
            "--output",
            str(out),
            "--format",
            "static",
            "--pooling",
            "lasttoken",
            "--normalize",
            "--quiet",
        ],
    )
    return out, result


@pytest.fixture(params=["bert", "llama"])
def exported(request, bert_static, llama_cli) -> Path:
    return bert_static if request.param == "bert" else llama_cli[0]


def metadata(directory: Path) -> dict:
    return json.loads((directory / "layerpick.json").read_text())


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


# ---- what is written, and who reads it


def test_model2vec_and_sentence_transformers_load_it_and_agree(exported):
    texts = [*TEXTS, LONG_TEXT]
    ours = StaticModel.from_pretrained(str(exported)).encode(texts)
    encoder = SentenceTransformer(str(exported), device="cpu")
    assert type(encoder[0]).__name__ == "StaticEmbedding"
    theirs = encoder.encode(texts, convert_to_numpy=True)
    assert ours.shape == theirs.shape and ours.shape[0] == len(texts)
    # abs 1e-5: two readers of one float32 table, mean-pooled in another order
    assert np.abs(ours - theirs).max() <= 1e-5  # the long text too: neither reader truncates


def test_the_directory_holds_the_table_and_no_transformer(bert_static):
    names = {path.name for path in bert_static.iterdir()}
    assert names == {
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "modules.json",
        "README.md",
        "layerpick.json",
    }
    assert json.loads((bert_static / "config.json").read_text())["model_type"] == "model2vec"
    from safetensors import safe_open

    with safe_open(str(bert_static / "model.safetensors"), "np") as table:
        assert list(table.keys()) == ["embeddings"]
        assert table.get_tensor("embeddings").shape[1] == DIMS


def test_the_table_is_model2vecs_distillation_of_the_cut_model(bert_static):
    from model2vec.distill import distill_from_model

    cut = make_model("bert")
    surgery.truncate_(cut, LAYER)
    expected = distill_from_model(cut, make_tokenizer("bert"), device="cpu", pca_dims=DIMS, quantize_to="float32")
    got = StaticModel.from_pretrained(str(bert_static))
    assert got.tokens == expected.tokens
    # rtol 1e-5, atol 1e-6: model2vec's float32 distillation of the same cut model, run twice; round-off only
    np.testing.assert_allclose(got.embedding, expected.embedding, rtol=1e-5, atol=1e-6)


def test_layerpick_json_records_the_table_its_distillation_and_its_cosine(bert_static):
    meta = metadata(bert_static)
    table = meta["static"]
    assert (table["pca_dims"], table["hidden_size"], table["token_pooling"]) == (DIMS, 32, "mean")
    assert table["pca_applied"] and 0 < table["variance_kept"] < 1
    rows = StaticModel.from_pretrained(str(bert_static)).embedding.shape[0]
    assert table["vocabulary"] == {**table["vocabulary"], "rows": rows, "tokenizer_tokens": len(make_tokenizer("bert"))}
    assert table["bytes"] == meta["weights_bytes"] == (bert_static / "model.safetensors").stat().st_size
    assert table["distill_seconds"] > 0 and table["max_length"] is None and table["normalize"] is False
    parity = table["parity"]
    assert parity["texts"] == len(DEFAULT_PARITY_TEXTS) == len(parity["cosine_to_cut"])
    # abs 1e-6: cosine_to_cut is rounded to 6 decimals, min_cosine is not
    assert parity["min_cosine"] == pytest.approx(min(parity["cosine_to_cut"]), abs=1e-6)
    # 0.999: a static table is an approximation; mean cosine 1 would mean nothing was averaged
    assert -1 <= parity["min_cosine"] <= parity["mean_cosine"] < 0.999 and parity["refused_below"] is None
    assert meta["parity"]["passed"] and meta["layer"] == LAYER  # the torch cut it was distilled from was proven
    assert "--format static --static-dims 16" in meta["command"]


@pytest.mark.parametrize(("family", "pooling"), [("bert", "mean"), ("bert", "cls"), ("llama", "lasttoken")])
def test_cosine_to_the_cut_is_one_where_a_text_is_one_token(family, pooling, tiny_dirs, tmp_path):
    """A one-token text's static row is the cut model's output for that token, pooled as the export pools it:
    seen through the PCA, its cosine to the cut must be 1 (normalised or not); a longer text is not one row."""
    tokenizer = make_tokenizer(family)
    for text in ONE_TOKEN_TEXTS:
        assert len(tokenizer(text, add_special_tokens=False)["input_ids"]) == 1
    out = tmp_path / "out"
    result = export_model(
        str(tiny_dirs(family)),
        LAYER,
        out,
        ExportConfig(
            progress=False,
            format="static",
            static_dims=8,
            pooling=pooling,
            normalize=True,
            parity_texts=[*ONE_TOKEN_TEXTS, TEXTS[1]],
        ),
    )
    cosines = result.static["parity"]["cosine_to_cut"]
    # abs 1e-5: float32 table through the PCA vs the cut model; cosines rounded to 6 decimals
    assert cosines[:2] == pytest.approx([1.0, 1.0], abs=1e-5)
    # 0.999: a multi-token text is an average of rows, not the cut's output; cosine stays below 1
    assert cosines[2] < 0.999


def test_the_cli_renders_the_table_and_writes_normalize(llama_cli):
    out, result = llama_cli
    assert result.exit_code == 0, result.output
    assert "static      " in result.output and "vs the cut  cosine mean" in result.output
    modules = json.loads((out / "modules.json").read_text())
    assert [entry["type"].rsplit(".", 1)[-1] for entry in modules] == ["StaticEmbedding", "Normalize"]
    vectors = SentenceTransformer(str(out), device="cpu").encode(TEXTS)
    # rtol 1e-5: unit norm of float32 vectors, float32 rounding
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    table = metadata(out)["static"]
    assert (table["pca_dims"], table["token_pooling"]) == (32, "last")  # the hidden size: below model2vec's 256


def test_the_model_card_says_what_the_static_model_is_and_survives_annotation(bert_static, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(bert_static, copy)
    annotate.annotate_export(copy, speedup=12.5)
    card = (copy / "README.md").read_text()
    assert "static embeddings from layer 2 of 4" in card and "## Static model" in card
    assert "- model2vec" in card and "StaticModel.from_pretrained" in card and "12.50x" in card
    mean = metadata(copy)["static"]["parity"]["mean_cosine"]
    assert f"{mean:.4f} on average" in card
    StaticModel.from_pretrained(str(copy))  # model2vec reads the card's front matter


# ---- bench and validate take it


@pytest.mark.full  # a static export benched against its full model (12 s); the default tier benches statics by CLI
def test_bench_measures_it_against_its_full_model(bert_static):
    result = run_bench(bert_static, BenchConfig(texts=6, repeats=1, batch_sizes=(1, 3), memory=True))
    assert result.exported.layers == 0 and result.baseline.layers == 4
    assert result.baseline.parameters == parameter_count(make_model("bert"))
    assert result.exported.parameters == metadata(bert_static)["static"]["vocabulary"]["rows"] * DIMS
    assert [row.batch_size for row in result.rows] == [1, 3]
    assert all(row.throughput_ratio is not None and row.memory_ratio is not None for row in result.rows)
    assert "static table" in result.notes[0]


def test_bench_refuses_an_onnx_backend_for_it_before_loading(bert_static):
    with pytest.raises(BenchError, match="is a static export .* --backend torch"):
        run_bench(bert_static, BenchConfig(texts=4, repeats=1, backend="onnx", memory=False))


def test_bench_layers_takes_its_full_model(bert_static):
    from layerpick.benchmark.cuts import plan_cuts, run_cuts

    plan = plan_cuts(str(bert_static), "1,3")
    assert plan.num_layers == 4 and plan.layers == [1, 3]
    result = run_cuts(plan, BenchConfig(texts=4, repeats=1, batch_sizes=(2,), memory=False))
    assert [row.layer for row in result.rows] == [1, 3]


def test_validate_exported_scores_it_at_its_layer(bert_static, tmp_path):
    tasks = sts_folder(tmp_path)
    output = tmp_path / "v"
    result = CliRunner().invoke(
        app,
        [
            "validate",
            "--exported",
            str(bert_static),
            "--tasks",
            str(tasks),
            "--output",
            str(output),
            "--store",
            str(tmp_path / "store"),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((output / "validation.json").read_text())
    assert data["layers_evaluated"] == [LAYER] and isinstance(data["mean_by_layer"][LAYER], float)
    assert data["max_length"] is None and data["static"]["pca_dims"] == DIMS
    assert "static table distilled from layer 2" in data["notes"][0]


@pytest.mark.slow
def test_a_report_picked_under_a_transform_distils_its_layer_without_it(tiny_dirs, tmp_path, caplog):
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.job import run_select
    from layerpick.selection.report import write_report
    from tests.testkit.calibration import QUIET, calibration_file

    source = str(tiny_dirs("llama"))
    fit = calibration_file(tmp_path, n=40)
    picked = run_select(
        source,
        config=SelectConfig(
            calibration=fit, limit=None, metrics="infonce", transform="whiten-8", fit_texts=fit, collect=QUIET
        ),
    )
    write_report(picked, tmp_path / "select")
    report = tmp_path / "select" / "report.json"
    assert json.loads(report.read_text())["transform"]["name"] == "whiten-8"
    with caplog.at_level("WARNING", logger="layerpick.exporting.static_checks"):
        result = export_model(
            source,
            None,
            tmp_path / "table",
            ExportConfig(progress=False, format="static", static_dims=DIMS, report=report),
        )
    assert result.layer == picked.selected_layer and not result.transform
    assert metadata(tmp_path / "table")["layer"] == picked.selected_layer
    assert f"distils layer {picked.selected_layer} without it" in caplog.text
    with pytest.raises(StaticExportError, match="cannot carry the transform whiten-8"):  # asked for: still refused
        export_model(
            source,
            1,
            tmp_path / "asked",
            ExportConfig(progress=False, format="static", transform="whiten-8", fit_texts=fit),
        )
    assert not (tmp_path / "asked").exists()


# ---- bad requests: one line, nothing written


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(prompt="eol"), "cannot carry the prompt template eol: model2vec distils single tokens"),
        (dict(transform="center"), "cannot carry the transform center"),
        (dict(max_seq_length=64), "--max-seq-length does not apply to --format static"),
        (dict(static_dims=0), r"--static-dims must be at least 1 \(got 0\)"),
        (dict(static_dims=64), r"--static-dims 64 is above the model's hidden size \(32\)"),
        (dict(format="sentence-transformers", static_dims=8), "--static-dims applies to the static table"),
        (dict(load_options=LoadOptions(device_map="auto")), "distils on one device: drop --device-map"),
    ],
)
def test_bad_requests_fail_before_the_weights_are_read(options, message, tiny_dirs, tmp_path):
    source = tmp_path / "source"
    shutil.copytree(tiny_dirs("bert"), source)
    (source / "model.safetensors").write_bytes(os.urandom(4096))  # read first, it would be the error
    load_options = options.pop("load_options", LoadOptions())
    config = ExportConfig(progress=False, **{"format": "static", **options})
    with pytest.raises(LayerpickError, match=message) as caught:
        export_model(str(source), LAYER, tmp_path / "out" / "deep", config, load_options=load_options)
    assert len(str(caught.value).splitlines()) == 1
    assert leftovers(tmp_path) == ["source"]


def test_quantize_is_for_onnx_only(tmp_path):
    with pytest.raises(LayerpickError, match="--quantize applies to the ONNX graph"):
        export_model(str(tmp_path / "none"), LAYER, tmp_path / "out", ExportConfig(format="static", quantize="int8"))


def test_missing_extra_names_the_extra(tiny_dirs, tmp_path, monkeypatch):
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name, *a: None if name == "model2vec" else real(name, *a)
    )
    result = CliRunner().invoke(
        app, ["export", str(tiny_dirs("bert")), "--layer", "2", "--output", str(tmp_path / "out"), "--format", "static"]
    )
    assert result.exit_code != 0 and isinstance(result.exception, StaticExportError)
    assert str(result.exception) == (
        "--format static needs the optional extra: pip install 'layerpick[static]' (missing: model2vec)"
    )
    assert leftovers(tmp_path) == []


def byte_tokenizer_model(folder: Path) -> Path:
    """A tiny Llama with ByT5's tokenizer: bytes in Python, no Rust tokenizer for model2vec to read."""
    from transformers import ByT5Tokenizer

    make_model("llama").save_pretrained(folder)
    ByT5Tokenizer(extra_ids=0).save_pretrained(folder)
    return folder


def test_a_tokenizer_model2vec_cannot_read_is_refused_before_the_cut(tmp_path):
    source = byte_tokenizer_model(tmp_path / "byt5")
    with pytest.raises(StaticExportError, match=r"model2vec cannot distil .*ByT5Tokenizer\) has no fast"):
        export_model(str(source), LAYER, tmp_path / "out", ExportConfig(progress=False, format="static"))
    assert leftovers(tmp_path) == ["byt5"]


def test_a_failed_distillation_is_one_line_and_leaves_nothing(tiny_dirs, tmp_path, monkeypatch):
    import model2vec.distill

    def fails(*args, **kwargs):
        raise RuntimeError("index out of range in self\nand a long traceback")

    monkeypatch.setattr(model2vec.distill, "distill_from_model", fails)
    with pytest.raises(StaticExportError) as caught:
        export_model(str(tiny_dirs("bert")), LAYER, tmp_path / "out", ExportConfig(progress=False, format="static"))
    assert str(caught.value) == "model2vec cannot distil BertModel: index out of range in self"
    assert leftovers(tmp_path) == []


def test_the_loaded_model_sets_the_default_dimension_and_the_limit():
    loaded = make_loaded("bert")
    assert static_checks.check_model(loaded, StaticRequest(None), "cls") == static_checks.StaticPlan(32, "first", 32)
    assert static_checks.check_model(loaded, StaticRequest(8), "mean").dims == 8
    with pytest.raises(StaticExportError, match=r"--static-dims 33 is above the model's hidden size \(32\)"):
        static_checks.check_model(loaded, StaticRequest(33), "mean")  # where config.json could not be read before


def test_the_pca_map_takes_rows_to_their_scores():
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(500, 6)).astype(np.float32) + 3.0
    basis = np.linalg.qr(rng.normal(size=(6, 6)))[0][:, :4] * np.array([1, -1, 1, -1])
    scores = (rows - rows.mean(axis=0)) @ basis
    mapping = static.pca_map(rows, scores)
    probe = rng.normal(size=(3, 6))
    # atol 1e-4: the scores were centred in float32 (rows ~3, eps ~2e-7); the fitted map carries that
    np.testing.assert_allclose(
        np.hstack([probe, np.ones((3, 1))]) @ mapping, (probe - rows.mean(axis=0)) @ basis, atol=1e-4
    )
    with pytest.raises(StaticExportError, match="not an affine map"):
        static.pca_map(rows, np.tanh(scores))


# ---- a packaged real model


@pytest.mark.full  # a real distillation (30-54 s); the default tier checks both readers on a tiny model's static export
@pytest.mark.integration
def test_minilm_static_export_loads_in_both_readers(tmp_path):
    entry = registry.ENTRIES["minilm-l6"]
    if not entry.is_installed():
        pytest.skip(f"minilm-l6 needs the package {entry.package} ({entry.install_command})")
    out = tmp_path / "minilm-static"
    result = export_model("minilm-l6", 2, out, ExportConfig(progress=False, format="static", static_dims=128))
    table, parity = result.static, result.static["parity"]
    print(
        f"minilm-l6 k=2: {table['vocabulary']['rows']} rows, distilled in {table['distill_seconds']:.1f} s, "
        f"cosine to the cut mean {parity['mean_cosine']:.4f} min {parity['min_cosine']:.4f}"
    )
    assert table["vocabulary"]["rows"] > 29_000 and table["pca_dims"] == 128 and result.normalize
    texts = list(DEFAULT_PARITY_TEXTS)
    ours = StaticModel.from_pretrained(str(out)).encode(texts)
    theirs = SentenceTransformer(str(out), device="cpu").encode(texts, convert_to_numpy=True)
    # abs 1e-5: two readers of one float32 table, mean-pooled in another order
    assert ours.shape == (len(texts), 128) and np.abs(ours - theirs).max() <= 1e-5
    assert parity["texts"] == len(texts) and -1 <= parity["min_cosine"] <= parity["mean_cosine"] <= 1
    similar = torch.nn.functional.cosine_similarity(torch.tensor(ours[:1]), torch.tensor(ours), dim=-1)
    # abs 1e-5: float32 cosine of a vector with itself
    assert similar[0] == pytest.approx(1.0, abs=1e-5) and (similar[1:] < 0.999).all()  # not one vector for all
