"""A post-pooling transform through every stage on tiny models: select scores it, validate evaluates it, export
ships exactly the fitted map as a Dense module (torch and ONNX agree), and a report carries it to the export."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformer

from layerpick.core.calibration import load_calibration
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import load_model
from layerpick.core.transform import fit, parse_transform
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.errors import ExportError
from layerpick.exporting.job import export_model
from layerpick.selection.config import SelectConfig
from layerpick.selection.job import run_select
from layerpick.selection.report import write_report
from tests.testkit.calibration import QUIET, calibration_file
from tests.testkit.tasks import sts_folder

LAYER = 2
TEXTS = ["the quick brown fox", "numbers like 42 and more words here", "layer selection", "a dog"]


@pytest.fixture(scope="module")
def fit_file(tmp_path_factory) -> str:
    return calibration_file(tmp_path_factory.mktemp("fit"), n=40)


@pytest.fixture(scope="module")
def source(tiny_dirs) -> str:
    return str(tiny_dirs("llama"))


@pytest.fixture(scope="module")
def whitened_onnx(source, fit_file, tmp_path_factory):
    """(folder, result): the tiny llama cut at LAYER with whiten-8 as an ONNX export, made once for the tests that
    read it (none writes into it)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    out = tmp_path_factory.mktemp("whitened-onnx") / "cut"
    config = ExportConfig(progress=False, transform="whiten-8", fit_texts=fit_file, format="onnx")
    return out, export_model(source, LAYER, out, config)


def layer_states(model: str, texts, layer: int = LAYER) -> torch.Tensor:
    loaded = load_model(model)
    return collect(loaded, loaded.pipeline.prepare(list(texts)), CollectConfig(progress=False)).layer(layer)


@pytest.mark.parametrize("transform", ["center", "whiten-8", "abtt-2"])
def test_the_dense_module_holds_exactly_the_fitted_map(source, fit_file, tmp_path, transform):
    out = tmp_path / "cut"
    result = export_model(source, LAYER, out, ExportConfig(progress=False, transform=transform, fit_texts=fit_file))
    fit_texts = load_calibration(fit_file, limit=2048).texts
    expected = fit(parse_transform(transform), layer_states(source, fit_texts))
    weights = load_file(str(out / "2_Dense" / "model.safetensors"))
    assert torch.equal(weights["linear.weight"], torch.tensor(expected.weight, dtype=torch.float32))
    assert torch.equal(weights["linear.bias"], torch.tensor(expected.bias, dtype=torch.float32))
    legacy = torch.load(out / "2_Dense" / "pytorch_model.bin", weights_only=True)  # sentence-transformers 2.x
    assert legacy.keys() == weights.keys() and all(torch.equal(legacy[k], weights[k]) for k in weights)
    modules = [entry["type"].rsplit(".", 1)[-1] for entry in json.loads((out / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Dense"]
    config = json.loads((out / "2_Dense" / "config.json").read_text())
    assert config == {
        "in_features": 32,
        "out_features": expected.out_dim,
        "bias": True,
        "activation_function": "torch.nn.modules.linear.Identity",
    }
    encoded = SentenceTransformer(str(out), device="cpu").encode(TEXTS, convert_to_numpy=True)
    scored = expected.apply(layer_states(source, TEXTS).double().numpy())
    # 1e-4 of the scale: float32 encode and Dense vs the float64 affine map on the layer states
    assert np.abs(encoded - scored).max() <= 1e-4 * np.abs(scored).max()
    document = json.loads((out / "layerpick.json").read_text())["transform"]
    assert (
        document["name"] == transform and document["output_dim"] == expected.out_dim == result.transform["output_dim"]
    )
    assert document["fit"]["count"] == 40 and len(document["fit"]["sha256"]) == 64
    assert transform in (out / "README.md").read_text()


def test_normalize_follows_the_dense_module(source, fit_file, tmp_path):
    out = tmp_path / "cut"
    export_model(
        source, LAYER, out, ExportConfig(progress=False, transform="whiten-8", fit_texts=fit_file, normalize=True)
    )
    modules = [entry["path"] for entry in json.loads((out / "modules.json").read_text())]
    assert modules == ["", "1_Pooling", "2_Dense", "3_Normalize"]
    vectors = SentenceTransformer(str(out), device="cpu").encode(TEXTS)
    # atol 1e-5: unit norm of float32 vectors, float32 rounding
    assert vectors.shape == (4, 8) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_select_scores_each_transform_and_the_export_follows_the_report(source, fit_file, tmp_path):
    config = SelectConfig(
        calibration=calibration_file(tmp_path, n=24),
        limit=None,
        metrics="infonce,dataset-entropy",
        transform="none,center,whiten-8",
        fit_texts=fit_file,
        collect=QUIET,
    )
    report = run_select(source, config=config)
    assert set(report.by_prompt) == {"none", "none+center", "none+whiten-8"}
    whitened = report.by_prompt["none+whiten-8"]["scores"]
    assert all(value is None for value in whitened["dataset-entropy"])  # flat by construction: not scored
    assert whitened["infonce"] != report.by_prompt["none"]["scores"]["infonce"]
    assert report.by_prompt["none+center"]["scores"]["dataset-entropy"][1] is not None
    write_report(report, tmp_path / "select")
    data = json.loads((tmp_path / "select" / "report.json").read_text())
    chosen = data.get("transform") or {}
    assert data["by_prompt"] and (chosen.get("name") or "none") in ("none", "center", "whiten-8")
    out = tmp_path / "cut"
    result = export_model(
        source, None, out, ExportConfig(progress=False, report=tmp_path / "select" / "report.json", fit_texts=fit_file)
    )
    assert (result.transform or {}).get("name") == chosen.get("name")
    assert result.layer == report.selected_layer


def test_a_report_refuses_other_fit_texts_and_a_contradicting_transform(source, fit_file, tmp_path):
    config = SelectConfig(
        calibration=calibration_file(tmp_path, n=24),
        limit=None,
        metrics="infonce",
        transform="whiten-8",
        fit_texts=fit_file,
        collect=QUIET,
    )
    write_report(run_select(source, config=config), tmp_path / "select")
    report = tmp_path / "select" / "report.json"
    with pytest.raises(ExportError, match="contradicts the report"):
        export_model(
            source,
            None,
            tmp_path / "a",
            ExportConfig(progress=False, report=report, transform="center", fit_texts=fit_file),
        )
    (tmp_path / "other").mkdir()
    other = calibration_file(tmp_path / "other", n=30)
    with pytest.raises(Exception, match="not those the report's transform was fitted on"):
        export_model(source, None, tmp_path / "b", ExportConfig(progress=False, report=report, fit_texts=other))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_validate_scores_every_transform_side_by_side(source, fit_file, tmp_path):
    from layerpick.validation import ValidateConfig, run_validation

    folder = sts_folder(tmp_path)
    config = ValidateConfig(
        layers="1,2",
        output_dir=tmp_path / "v",
        store_dir=tmp_path / "store",
        progress=False,
        transform="none,whiten-8",
        fit_texts=fit_file,
    )
    data = run_validation(source, [str(folder)], config).report.to_json()
    assert set(data["by_prompt"]) == {"none", "none+whiten-8"}
    whitened = data["by_prompt"]["none+whiten-8"]
    assert whitened["transform"]["fit"]["count"] == 40 and whitened["transform"]["output_dim"] == 8
    assert whitened["mean_by_layer"][1] is not None
    assert whitened["mean_by_layer"] != data["by_prompt"]["none"]["mean_by_layer"]
    results = sorted(p.name for p in (tmp_path / "v" / "results").iterdir())
    assert any("whiten-8" in name for name in results) and any("whiten-8" not in name for name in results)
    assert {p["variant"] for p in data["pair_frontier"]["pairs"]} <= {"none", "none+whiten-8"}
    assert (tmp_path / "v" / "frontier.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_validating_the_export_reproduces_the_validated_transform(source, fit_file, tmp_path):
    """The export's own output, validated, scores what validate scored for (layer, transform)."""
    from layerpick.validation import ValidateConfig, run_validation

    folder = sts_folder(tmp_path)
    common = dict(store_dir=tmp_path / "store", progress=False)
    layers = run_validation(
        source,
        [str(folder)],
        ValidateConfig(
            layers=str(LAYER), output_dir=tmp_path / "v1", transform="whiten-8", fit_texts=fit_file, **common
        ),
    ).report.to_json()
    export_model(
        source, LAYER, tmp_path / "cut", ExportConfig(progress=False, transform="whiten-8", fit_texts=fit_file)
    )
    exported = run_validation(
        None, [str(folder)], ValidateConfig(exported_dir=tmp_path / "cut", output_dir=tmp_path / "v2", **common)
    ).report.to_json()
    # abs 1e-4: float32 Dense in the export vs the float64 map; moves the mean score by less
    assert exported["mean_by_layer"][LAYER] == pytest.approx(layers["mean_by_layer"][LAYER], abs=1e-4)


@pytest.mark.slow
def test_onnx_and_torch_exports_of_a_transformed_cut_agree(whitened_onnx):
    from layerpick.exporting.onnx.encoder import OnnxEncoder

    out, result = whitened_onnx
    torch_vectors = SentenceTransformer(str(out), device="cpu").encode(TEXTS)
    with_dense = OnnxEncoder(out).encode(TEXTS)  # onnx/model.onnx, then the Dense module (as ST's ONNX backend)
    mapped = OnnxEncoder(out, "onnx/model_mapped.onnx", apply_dense=False).encode(TEXTS)  # the map inside the graph
    scale = np.abs(torch_vectors).max()
    assert with_dense.shape == mapped.shape == (4, 8)
    # 1e-4 of the scale: ONNX Runtime's float32 graph and Dense vs torch's
    assert np.abs(with_dense - torch_vectors).max() <= 1e-4 * scale
    # 1e-4 of the scale (as above), the map inside the graph
    assert np.abs(mapped - torch_vectors).max() <= 1e-4 * scale
    assert (
        result.onnx["mapped"]["file"] == "onnx/model_mapped.onnx"
        # relative 1e-4: ONNX Runtime's float32 graph vs torch, the export's own parity check
        and result.onnx["mapped"]["embeddings_max_rel_diff"] <= 1e-4
    )
    assert not (out / "model.onnx").exists()  # a root model.onnx would shadow onnx/model.onnx for ST's backend


def test_auto_exports_the_reports_choice_and_with_a_layer_is_refused_in_the_users_words(source, fit_file, tmp_path):
    config = SelectConfig(
        calibration=calibration_file(tmp_path, n=24), limit=None, metrics="infonce", transform="whiten-8", collect=QUIET
    )
    write_report(run_select(source, config=replace(config, fit_texts=fit_file)), tmp_path / "select")
    report = tmp_path / "select" / "report.json"
    result = export_model(
        source, None, tmp_path / "a", ExportConfig(progress=False, report=report, transform="auto", fit_texts=fit_file)
    )
    assert result.transform["name"] == "whiten-8"
    with pytest.raises(ExportError) as refused:
        export_model(source, 1, tmp_path / "b", ExportConfig(progress=False, transform="auto", fit_texts=fit_file))
    assert str(refused.value) == (
        "--transform auto is select's choice between none and whiten-20, made by scoring them; an export ships one "
        "transform: name it (--transform whiten-20) or export a select report's choice (--report report.json)"
    )  # the tiny model's 32 dimensions and 40 fit texts allow whiten-20 (2 texts a dimension)
    assert not (tmp_path / "b").exists()


def test_a_reports_fit_texts_are_found_from_any_folder_and_a_stream_is_refused_for_reuse(
    source, fit_file, tmp_path, monkeypatch
):
    (tmp_path / "work" / "data").mkdir(parents=True)
    (tmp_path / "work" / "data" / "fit.txt").write_text(Path(fit_file).read_text())
    monkeypatch.chdir(tmp_path / "work")
    config = SelectConfig(
        calibration=calibration_file(tmp_path, n=24), limit=None, metrics="infonce", transform="whiten-8", collect=QUIET
    )
    write_report(run_select(source, config=replace(config, fit_texts="data/fit.txt")), tmp_path / "select")
    report = tmp_path / "select" / "report.json"
    assert json.loads(report.read_text())["transform"]["fit"]["source"] == str(tmp_path / "work" / "data" / "fit.txt")
    monkeypatch.chdir("/")  # the recorded path is absolute: found from anywhere
    assert export_model(source, None, tmp_path / "a", ExportConfig(progress=False, report=report)).layer >= 1
    data = json.loads(report.read_text())
    data["transform"]["fit"]["source"] = "/dev/fd/63"  # what `--fit-texts <(cmd)` records: a pipe, read once
    report.write_text(json.dumps(data))
    with pytest.raises(Exception) as refused:
        export_model(source, None, tmp_path / "b", ExportConfig(progress=False, report=report))
    assert str(refused.value) == (
        "the report's transform was fitted on /dev/fd/63, which cannot be read again (not a file or folder that is "
        "still there): pass the same texts with --fit-texts"
    )
    assert not (tmp_path / "b").exists()


def test_transform_requests_fail_before_loading(tmp_path, fit_file):
    few = tmp_path / "few.txt"
    few.write_text("one text\nanother text\n")
    cases = [
        (dict(transform="whitten"), "unknown transform 'whitten'"),
        (dict(transform="whiten-64", fit_texts=fit_file), "needs at least 65 fit texts"),
        (dict(transform="whiten-8", fit_texts=str(few)), "needs at least 9 fit texts (got 2)"),
        (dict(transform="none,center"), "takes one transform"),
        (dict(transform="center", representation="raw"), "--representation exported"),
    ]
    for options, message in cases:
        with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
            export_model("./no/such/model", 1, tmp_path / "out", ExportConfig(progress=False, **options))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_serve_and_bench_encoders_apply_the_transform_and_bench_reports_its_cost(whitened_onnx):
    """serve and bench load an export through `load_encoder`: both backends give the transformed vectors; the
    bench baseline is the full model without the transform, and the transform's own cost is reported."""
    from layerpick.benchmark.run import BenchConfig, run_bench
    from layerpick.exporting.load import load_encoder

    out, _ = whitened_onnx
    want = SentenceTransformer(str(out), device="cpu").encode(TEXTS)
    for backend in ("torch", "onnx"):
        got = load_encoder(out, "cpu", backend).encode(TEXTS)
        # 1e-4 of the scale: torch and ONNX Runtime float32 backends vs SentenceTransformer
        assert got.shape == (4, 8) and np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    result = run_bench(out, BenchConfig(texts=8, repeats=1, memory=False, batch_sizes=(1, 4)))
    assert result.transform["name"] == "whiten-8" and result.transform["output_dim"] == 8
    assert set(result.transform["cost"]) == {"batch 1", "batch 4"}
    assert all(entry["us_per_text"] > 0 for entry in result.transform["cost"].values())
    assert any("baseline, the full model as it is, runs none" in note for note in result.notes)


def test_the_bench_baseline_drops_the_dense_module(source, fit_file, tmp_path):
    from layerpick.benchmark.baseline import build_baseline_dir

    out = tmp_path / "cut"
    export_model(source, LAYER, out, ExportConfig(progress=False, transform="whiten-8", fit_texts=fit_file))
    (tmp_path / "work").mkdir()
    baseline = build_baseline_dir(out, Path(source), tmp_path / "work")
    modules = [entry["type"].rsplit(".", 1)[-1] for entry in json.loads((baseline / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling"] and not (baseline / "2_Dense").exists()
    assert SentenceTransformer(str(baseline), device="cpu").encode(TEXTS).shape == (4, 32)


def test_one_fit_pass_serves_every_transform(source, fit_file, tmp_path, monkeypatch):
    from layerpick.selection import scoring

    calls = []
    real = scoring.collect
    monkeypatch.setattr(scoring, "collect", lambda *a, **k: calls.append(len(a[1])) or real(*a, **k))
    config = SelectConfig(
        calibration=calibration_file(tmp_path, n=24),
        limit=None,
        metrics="prompt-entropy",
        rule="min-prompt-entropy",
        transform="none,center,whiten-8,abtt",
        fit_texts=fit_file,
        collect=QUIET,
    )
    run_select(source, config=config)
    assert calls == [24, 40]  # the calibration texts, then the fit texts once for all three transforms


def test_a_whitening_with_fewer_than_two_fit_texts_per_dimension_is_warned_about(source, tmp_path, caplog):
    from layerpick.core.fit_texts import prepare_fit, thin_fit_warning
    from layerpick.core.models import LoadOptions
    from layerpick.core.transform import parse_transform

    assert thin_fit_warning(parse_transform("whiten-256"), 512, 576) is None
    assert thin_fit_warning(parse_transform("whiten-256"), 300, 576) == (
        "whiten-256 keeps 256 dimensions but is fitted on 300 texts, fewer than 2 per dimension: such a fit overfits "
        "its texts (measured at 1.2 per dimension: 3-31 points lost on classification and clustering); give at "
        "least 512 fit texts or whiten-150"
    )
    assert "keeps 299 dimensions" in thin_fit_warning(parse_transform("whiten"), 300, 576)
    assert thin_fit_warning(parse_transform("center"), 3, 576) is None
    fit = calibration_file(tmp_path, n=24)
    with caplog.at_level("WARNING"):
        prepare_fit((parse_transform("whiten-8"),), fit, "exported", source, LoadOptions())
        assert not caplog.records
        prepare_fit((parse_transform("whiten-16"),), fit, "exported", source, LoadOptions())
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "whiten-16 keeps 16 dimensions but is fitted on 24 texts, fewer than 2 per dimension"
    ]


def test_auto_scores_whitening_beside_none_for_a_language_model_and_none_for_an_embedder(source, tmp_path):
    from layerpick.core.fit_texts import expand_auto
    from layerpick.core.models import LoadOptions

    calibration = calibration_file(tmp_path, n=24)
    assert expand_auto("auto", source, LoadOptions(), calibration) == "none,whiten-12"  # 2 fit texts per dimension
    assert expand_auto("auto", source, LoadOptions(), None) == "none,whiten-32"  # the tiny model's hidden size
    embedder = tmp_path / "embedder"
    embedder.mkdir()
    (embedder / "modules.json").write_text("[]")
    (embedder / "config.json").write_text(json.dumps({"hidden_size": 384}))
    assert expand_auto("auto", str(embedder), LoadOptions(), None) == "none"
    report = run_select(
        source, config=SelectConfig(calibration=calibration, limit=None, metrics="infonce", collect=QUIET)
    )
    assert set(report.by_prompt) == {"none", "none+whiten-12"}


def test_the_parity_tolerance_follows_the_dense_modules_working_scale():
    """Whitening anisotropic vectors makes the Dense module subtract two large, nearly equal terms (W x and
    W mean): float32 rounds at the scale of those terms, not of the output, so the tolerance follows them."""
    from layerpick.core.calibration import CalibrationSet
    from layerpick.exporting.transformed import FittedTransform, working_scale

    generator = np.random.default_rng(0)
    vectors = 100.0 + generator.normal(size=(64, 8))  # a large shared direction, small spread
    affine = fit(parse_transform("whiten-8"), vectors)
    fitted = FittedTransform(parse_transform("whiten-8"), affine, CalibrationSet(["x"], "test"))
    states = torch.tensor(vectors)
    outputs = torch.as_tensor(affine.apply(vectors))
    sums = np.abs(vectors) @ np.abs(affine.weight).T + np.abs(affine.bias)  # (N, out), by hand
    scale = working_scale(fitted, states, unit=False)
    # default rel 1e-6: the same float64 sums computed another way; summation order only
    assert scale == pytest.approx(sums.max()) and scale > 50 * outputs.abs().max().item()
    unit_scale = working_scale(fitted, states, unit=True)
    # default rel 1e-6: the same float64 sums computed another way; summation order only
    assert unit_scale == pytest.approx((sums / outputs.norm(dim=-1, keepdim=True).numpy()).max())
    assert working_scale(None, states, unit=False) == 0.0
