"""Integration: the packaged real models load offline by alias, and layer k == the model cut to k blocks."""

import pytest
import torch

from layerpick.core import registry, surgery
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import load_model
from layerpick.core.pooling import pool

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TEXTS = [
    "The committee postponed its decision until the spring meeting.",
    "How do I reset my password?",
    "Whales can hear each other across hundreds of kilometres of open ocean, scientists say.",
    "ok",
]


def cut_pooled(loaded, k):
    cut = surgery.truncated_copy(loaded.model, k)
    encoded = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = cut(**encoded).last_hidden_state
    return pool(states, encoded["attention_mask"].bool(), "mean")


@pytest.mark.parametrize(
    "alias, layers",
    [
        ("minilm-l6", (0, 3, 6)),
        # smollm2's parity: the full tier here (46 s); the default tier checks its export at 10
        # (tests/export/test_export_integration.py), minilm's layers here
        pytest.param("smollm2-135m", (0, 10), marks=pytest.mark.full),
        pytest.param("smollm2-135m", (20, 30), marks=pytest.mark.full),  # the deeper layers: the full tier's parity
    ],
)
def test_layer_k_equals_cut_model(alias, layers):
    loaded = load_model(alias)
    assert loaded.num_layers == registry.ENTRIES[alias].num_layers
    states = collect(loaded, TEXTS, CollectConfig(batch_size=3, progress=False))
    for k in layers:
        # rtol 1e-4, atol 1e-4: float32 (smollm2: GGUF dequantised to float32), batches of 3 vs all 4 padded
        torch.testing.assert_close(states.layer(k), cut_pooled(loaded, k), rtol=1e-4, atol=1e-4)


def test_gguf_model_is_cached_and_says_it_is_quantised():
    first = load_model("smollm2-135m")
    assert any("4-bit" in note for note in first.notes)
    assert (surgery.family_for(first.model).name, first.num_layers) == ("llama", 30)
    assert "gguf" in first.path and not first.path.endswith(".gguf")  # the converted safetensors directory


def test_minilm_last_layer_matches_its_own_sentence_transformer():
    from sentence_transformers import SentenceTransformer

    loaded = load_model("minilm-l6")
    states = collect(loaded, TEXTS, CollectConfig(progress=False))
    reference = SentenceTransformer(loaded.path, device="cpu")
    expected = reference.encode(TEXTS, convert_to_tensor=True, normalize_embeddings=False)
    # all-MiniLM-L6-v2 normalises after pooling; compare directions
    got = torch.nn.functional.normalize(states.layer(6), dim=-1)
    # rtol 1e-4, atol 1e-5: float32 unit vectors; collect's pooling vs sentence-transformers', batched differently
    torch.testing.assert_close(got, torch.nn.functional.normalize(expected, dim=-1), rtol=1e-4, atol=1e-5)


@pytest.mark.full  # a fact of the science (29 s), not of layerpick's code
def test_raw_stream_of_smollm_has_massive_activations():
    """Why 'exported' is the default: the raw residual stream of a modern decoder has huge outliers."""
    loaded = load_model("smollm2-135m")
    raw = collect(loaded, TEXTS, CollectConfig(representation="raw", progress=False))
    exported = collect(loaded, TEXTS, CollectConfig(progress=False))
    middle = loaded.num_layers // 2
    assert raw.layer(middle).abs().max() > 10 * exported.layer(middle).abs().max()
