"""The cost model (layerpick.core.cost): parameters kept and ideal speed-up per layer, on every family."""

from __future__ import annotations

import pytest

from layerpick.core import surgery
from layerpick.core.cost import (
    DEFAULT_SEQ_LENGTH,
    LayerCosts,
    attended_keys,
    layer_costs,
    layer_costs_for_config,
)
from tests.testkit import tiny


@pytest.mark.parametrize("family", sorted(tiny.CONFIGS))
def test_params_kept_is_the_cut_models_parameter_count(family):
    model = tiny.make_model(family)
    costs = layer_costs(model)
    assert costs.num_layers == tiny.LAYERS
    for k in range(tiny.LAYERS + 1):
        assert costs.params_kept[k] == tiny.parameter_count(surgery.truncated_copy(model, k))
    assert costs.params_full == tiny.parameter_count(model)


@pytest.mark.parametrize("family", sorted(tiny.CONFIGS))
def test_speedup_is_one_at_the_last_layer_and_grows_towards_the_embeddings(family):
    costs = layer_costs(tiny.make_model(family))
    speedup = costs.ideal_speedup
    assert speedup[-1] == pytest.approx(1.0)  # default rel 1e-6: full / full is exactly 1.0
    assert all(a > b for a, b in zip(speedup, speedup[1:]))
    # identical blocks: close to L/k, a little below because the embeddings cost something
    for k in range(1, tiny.LAYERS + 1):
        # + 1e-9: absorbs float64 round-off of the ratio where it equals L / k; 0.9: the embeddings' share
        assert tiny.LAYERS / k * 0.9 < speedup[k] <= tiny.LAYERS / k + 1e-9


@pytest.mark.parametrize("family", sorted(tiny.CONFIGS))
def test_config_only_costs_equal_the_loaded_models(family):
    model = tiny.make_model(family)
    assert layer_costs_for_config(model.config) == layer_costs(model)


def test_llama_against_a_hand_count():
    """hidden 32, 4 heads of 8, 2 KV heads, MLP 64: q, o 32x32; k, v 32x16; gate, up, down 32x64."""
    matrices = 2 * 32 * 32 + 2 * 32 * 16 + 3 * 32 * 64
    norms = 2 * 32
    attention = 4 * 32 * (DEFAULT_SEQ_LENGTH + 1) / 2  # causal: (S+1)/2 keys per token on average
    block = 2 * matrices + norms + attention
    embeddings = 32 + 32  # one row added per token, the final norm
    costs = layer_costs(tiny.make_model("llama"))
    # default rel 1e-6: whole-number flops summed in float64; exact, approx absorbs summation order only
    assert costs.flops_per_token == pytest.approx(tuple(embeddings + k * block for k in range(5)))
    # default rel 1e-6: a ratio of whole-number flops; float64 repr only
    assert costs.ideal_speedup[1] == pytest.approx((embeddings + 4 * block) / (embeddings + block))


def test_bert_against_a_hand_count():
    """Bidirectional: every token attends to all S; word, position and token-type rows plus the embedding
    LayerNorm; the pooler (run once per sequence) does not count."""
    matrices = 4 * 32 * 32 + 2 * 32 * 64
    one_dim = 4 * 32 + 2 * 32 + 64 + 32 + 2 * 32  # q k v o biases, LayerNorm, MLP biases, LayerNorm
    block = 2 * matrices + one_dim + 4 * 32 * DEFAULT_SEQ_LENGTH
    embeddings = 3 * 32 + 2 * 32
    costs = layer_costs(tiny.make_model("bert"))
    # default rel 1e-6: whole-number flops summed in float64; exact, approx absorbs summation order only
    assert costs.flops_per_token == pytest.approx(tuple(embeddings + k * block for k in range(5)))


def test_mamba_has_no_attention_term():
    model = tiny.make_model("mamba")
    short, long = layer_costs(model, seq_length=8), layer_costs(model, seq_length=4096)
    assert short.flops_per_token == long.flops_per_token


def test_sliding_windows_cap_the_attention_term():
    """Mistral's window (4 tokens) holds for every layer; at 4096 tokens its blocks cost what Llama's do at
    a few tokens, while Llama's attention term grows with the sequence."""
    mistral = layer_costs(tiny.make_model("mistral"), seq_length=4096)
    llama = layer_costs(tiny.make_model("llama"), seq_length=4096)
    assert mistral.flops_per_token[-1] < llama.flops_per_token[-1] / 5
    # default rel 1e-6: an exact fraction computed in float64; repr only
    assert attended_keys(4096, causal=True, window=4) == pytest.approx((1 + 2 + 3 + 4 + 4092 * 4) / 4096)
    assert attended_keys(10, causal=False, window=None) == 10
    # default rel 1e-6: (3 * 4 / 2) / 3 is exactly 2.0
    assert attended_keys(3, causal=True, window=None) == pytest.approx(2.0)


def test_gemma_layer_types_choose_the_window_per_layer():
    config = tiny.CONFIGS["gemma3"]()
    config.layer_types = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    costs = layer_costs_for_config(config, seq_length=1024)
    steps = [b - a for a, b in zip(costs.flops_per_token, costs.flops_per_token[1:])]
    # default rel 1e-6: equal layer types give equal steps; float64 summation order only
    assert steps[0] == pytest.approx(steps[2]) and steps[1] == pytest.approx(steps[3])
    full, window = attended_keys(1024, True, None), attended_keys(1024, True, 4)
    # default rel 1e-6: differences of float64 sums of ~1e5; round-off ~1e-11, far below 1e-6 of the step
    assert steps[1] - steps[0] == pytest.approx(4 * 4 * 8 * (full - window))  # 4 heads of 8


def test_json_round_trip():
    costs = layer_costs(tiny.make_model("gpt2"))
    data = costs.to_json()
    assert data["ideal_speedup"][-1] == 1.0 and data["seq_length"] == DEFAULT_SEQ_LENGTH
    again = LayerCosts.from_json(data)
    assert again.params_kept == costs.params_kept
    # rel 1e-6: the tiny gpt2's flops are whole numbers, so the JSON's 0.1 rounding is exact; repr only
    assert again.ideal_speedup == pytest.approx(costs.ideal_speedup, rel=1e-6)
