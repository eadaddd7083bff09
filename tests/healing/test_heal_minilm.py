"""A heal of the real all-MiniLM-L6-v2 (packaged as `minilm-l6`) cut at layer 3, small: 300 embedded texts, one
epoch. The teacher is the full model's own pipeline, the fidelity to it rises on the held-out texts, and the
healed export is an ordinary sentence-transformers folder (normalised vectors, 384 dimensions)."""

from __future__ import annotations

import numpy as np
import pytest

from layerpick.core import registry
from layerpick.exporting.metadata import read_metadata
from layerpick.healing import HealConfig, heal_model

# The full tier: the default tier heals minilm-l6 through the README's Python API block; this pins its fidelity.
pytestmark = [pytest.mark.integration, pytest.mark.full]


def test_heal_minilm_at_layer_3(tmp_path):
    from sentence_transformers import SentenceTransformer

    entry = registry.ENTRIES["minilm-l6"]
    if not entry.is_installed():
        pytest.skip(f"minilm-l6 needs the package {entry.package} ({entry.install_command})")
    config = HealConfig(max_texts=300, epochs=1, learning_rate=2e-4, progress=False)
    report = heal_model("minilm-l6", 3, tmp_path / "healed", config)
    assert report.teacher["kind"] == "sentence-transformers" and report.teacher["dimension"] == 384
    assert report.texts["count"] == 300 and report.texts["source"] == "embedded"
    assert report.after.cosine > report.before.cosine and report.after.knn_overlap > report.before.knn_overlap
    metadata = read_metadata(tmp_path / "healed")
    assert metadata.layer == 3 and metadata.num_layers == 6 and metadata.normalize and metadata.is_healed
    vectors = SentenceTransformer(str(tmp_path / "healed"), device="cpu").encode(["A cat.", "Prices rose in March."])
    # atol 1e-5: unit norm of float32 vectors of 384 entries, float32 rounding
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
