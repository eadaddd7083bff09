"""Layer k as collected == the output of the model cut after k blocks, for every supported family."""

import pytest
import torch

from layerpick.core import surgery
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.pooling import pool
from tests.testkit.tiny import (
    CONFIGS,
    LAYERS,
    MAX_PARAMS,
    TEXTS,
    make_loaded,
    parameter_count,
)

FAMILIES = sorted(CONFIGS)


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_models_are_tiny(family):
    loaded = make_loaded(family)
    assert parameter_count(loaded.model) < MAX_PARAMS
    assert surgery.num_layers(loaded.model) == LAYERS


def cut_output(loaded, k, texts, pooling):
    cut = surgery.truncated_copy(loaded.model, k)
    encoded = loaded.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = cut(**encoded).last_hidden_state
    return pool(states, encoded["attention_mask"].bool(), pooling)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("pooling", ["mean", "lasttoken"])
def test_collected_layer_equals_cut_model(family, pooling):
    loaded = make_loaded(family)
    states = collect(loaded, TEXTS, CollectConfig(pooling=pooling, batch_size=2, progress=False))
    assert states.pooled.shape == (LAYERS + 1, len(TEXTS), 32)
    for k in range(LAYERS + 1):
        expected = cut_output(loaded, k, TEXTS, pooling)
        # rtol 1e-4, atol 1e-5: float32; collect pads in batches of 2, the cut model all texts at once
        torch.testing.assert_close(states.layer(k), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_cut_model_really_drops_blocks(family):
    loaded = make_loaded(family)
    cut = surgery.truncated_copy(loaded.model, 2)
    assert surgery.num_layers(cut) == 2
    assert cut.config.num_hidden_layers == 2
    assert parameter_count(cut) < parameter_count(loaded.model)
    for field in surgery.family_for(cut).per_layer_fields:
        if getattr(loaded.model.config, field, None) is not None:
            assert len(getattr(cut.config, field)) == 2
    assert surgery.num_layers(loaded.model) == LAYERS  # the original is untouched


@pytest.mark.parametrize("family", FAMILIES)
def test_padding_is_exact(family):
    """Batched (padded) collection equals one text at a time (no padding at all)."""
    loaded = make_loaded(family)
    batched = collect(loaded, TEXTS, CollectConfig(batch_size=5, progress=False))
    single = collect(loaded, TEXTS, CollectConfig(batch_size=1, progress=False))
    # rtol 1e-4, atol 1e-5: float32; batches of 5 vs 1 pad differently, so reductions differ by round-off
    torch.testing.assert_close(batched.pooled, single.pooled, rtol=1e-4, atol=1e-5)


def test_raw_representation_is_the_residual_stream_without_final_norm():
    loaded = make_loaded("llama")
    raw = collect(loaded, TEXTS, CollectConfig(representation="raw", progress=False))
    exported = collect(loaded, TEXTS, CollectConfig(progress=False))
    encoded = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = loaded.model(**encoded, output_hidden_states=True).hidden_states
    mask = encoded["attention_mask"].bool()
    for k in range(LAYERS):  # transformers' hidden_states[k] is the raw stream below the last layer
        # rtol 1e-4, atol 1e-5: float32; collect's pooling of the same forward pass vs pool() here
        torch.testing.assert_close(raw.pooled[k], pool(hidden[k], mask, "mean"), rtol=1e-4, atol=1e-5)
        # allclose defaults (rtol 1e-5, atol 1e-8): below the last layer, raw lacks the final norm, far apart
        assert not torch.allclose(raw.pooled[k], exported.pooled[k])
    # rtol 1e-4, atol 1e-5 (as above), the last layer with its final norm
    torch.testing.assert_close(exported.pooled[LAYERS], pool(hidden[LAYERS], mask, "mean"), rtol=1e-4, atol=1e-5)


def test_encoder_raw_equals_exported():
    loaded = make_loaded("bert")
    raw = collect(loaded, TEXTS, CollectConfig(representation="raw", progress=False))
    exported = collect(loaded, TEXTS, CollectConfig(progress=False))
    # assert_close's float32 defaults (rtol 1.3e-6, atol 1e-5): bert has no final norm, the same tensors
    torch.testing.assert_close(raw.pooled, exported.pooled)


def test_unknown_architecture_lists_supported():
    from transformers import T5Config

    from layerpick.errors import UnsupportedArchitectureError

    with pytest.raises(UnsupportedArchitectureError, match="supported model types: .*llama"):
        surgery.family_for(T5Config())


def test_qwen2_max_window_layers_capped():
    loaded = make_loaded("qwen2")
    cut = surgery.cut_config(loaded.model.config, 2)
    assert cut.max_window_layers == 2 and len(cut.layer_types) == 2


def _prompted_ids(tokenizer, prompt, text):
    """The ids a prompted text must have, built by hand: the model's own special tokens around
    prefix + the text's own tokens + suffix."""
    from layerpick.core.prompt_tokenizer import template_ids

    plain = tokenizer(text)["input_ids"]
    bare = tokenizer(text, add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(plain)) if plain[i : i + len(bare)] == bare)
    prefix, suffix = template_ids(tokenizer, prompt)
    return plain[:start] + prefix + bare + suffix + plain[start + len(bare) :]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_prompted_last_token_is_the_cut_model_on_the_wrapped_tokens(family):
    """With a template, layer k (last-token pooling, batched and right-padded) equals the cut model run on
    each wrapped text alone, the ids assembled by hand: the last token is the template's last."""
    from layerpick.core.prompts import parse_prompt

    loaded = make_loaded(family)
    prompt = parse_prompt("eol")
    states = collect(loaded, TEXTS, CollectConfig(batch_size=3, progress=False, prompt=prompt))
    assert states.pooling == "lasttoken" and states.prompt == prompt  # the prompt's default pooling
    for k in (1, LAYERS):
        cut = surgery.truncated_copy(loaded.model, k)
        for index, text in enumerate(TEXTS):
            ids = torch.tensor([_prompted_ids(loaded.tokenizer, prompt, text)])
            with torch.no_grad():
                states_k = cut(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            # rtol 1e-4, atol 1e-5: float32; batched and right-padded vs each text alone
            torch.testing.assert_close(states.layer(k)[index], states_k[0, -1], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "bert", "gemma3"])
def test_prompted_mean_pooling_stays_available(family):
    from layerpick.core.prompts import parse_prompt

    loaded = make_loaded(family)
    prompt = parse_prompt('Represent: "{text}"')
    batched = collect(loaded, TEXTS, CollectConfig(pooling="mean", batch_size=5, progress=False, prompt=prompt))
    single = collect(loaded, TEXTS, CollectConfig(pooling="mean", batch_size=1, progress=False, prompt=prompt))
    plain = collect(loaded, TEXTS, CollectConfig(pooling="mean", batch_size=5, progress=False))
    assert batched.pooling == "mean"
    # rtol 1e-4, atol 1e-5: float32; batches of 5 vs 1 pad differently, so reductions differ by round-off
    torch.testing.assert_close(batched.pooled, single.pooled, rtol=1e-4, atol=1e-5)
    # allclose defaults (rtol 1e-5, atol 1e-8): the template changes the states far beyond round-off
    assert not torch.allclose(batched.pooled[1:], plain.pooled[1:])  # the template changed what was pooled
    assert (batched.token_counts > plain.token_counts).all()
