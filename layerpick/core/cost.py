"""The cost of layer k: the parameters the model cut after k blocks keeps, and its ideal speed-up.

One function owns the cost model, `layer_costs(model)`, for every supported family; every report that shows
a cost (select, validate, run, bench) reads it from here.

- **Parameters kept** at layer k: every parameter outside the block list (embeddings, their norm, the final
  norm, BERT's pooler) plus those of blocks 0..k-1: exactly the parameter count of the model cut after k
  blocks (tested against `surgery.truncated_copy`). layerpick loads the base model, so no LM head counts.
- **Compute per token** C(k) = E + B_0 + ... + B_{k-1}, in floating-point operations (a multiply-add is 2):
  - a block B_i: 2 per parameter of every weight of two or more dimensions in it (the linear and Conv1D
    matrices, Mamba's depthwise convolution kernel and its state matrix A, each used once per token), 1 per
    one-dimensional parameter (norm scales, biases: one elementwise operation each), and for an attention
    block 4 x (query heads x head size) x the keys each token attends to (the QK^T scores and the weighted
    sum of values) at a sequence of `seq_length` tokens: every token for a bidirectional encoder, on
    average (S+1)/2 for a causal decoder, at most the window for a sliding-window layer;
  - the embeddings E: one addition of a row per embedding table (tokens, positions, token types) and the
    one-dimensional parameters outside the blocks (embedding norm, final norm); an embedding lookup
    multiplies nothing.
- **Ideal speed-up** at layer k: C(L) / C(k), the full embedder's compute per token over the cut one's
  (both without an LM head); 1 at the last layer.

What it ignores: tokenisation, pooling and normalisation of the output, padding, activation functions,
softmax and rotary embeddings (elementwise work of the order of the hidden size), BERT's pooler (run once per
sequence, not per token), memory traffic and the time to launch kernels. A measured speed-up is therefore
lower than the ideal one, most at batch 1 and for small models, where those fixed costs weigh most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from layerpick.core import surgery

DEFAULT_SEQ_LENGTH = 128  # tokens per text for the attention term; stated in every report that shows a cost


@dataclass(frozen=True)
class LayerCosts:
    """Per layer k = 0..L: parameters kept, compute per token, and the ideal speed-up C(L) / C(k)."""

    params_kept: tuple[int, ...]
    flops_per_token: tuple[float, ...]
    seq_length: int

    @property
    def num_layers(self) -> int:
        return len(self.params_kept) - 1

    @property
    def params_full(self) -> int:
        return self.params_kept[-1]

    @property
    def ideal_speedup(self) -> tuple[float, ...]:
        full = self.flops_per_token[-1]
        return tuple(full / flops for flops in self.flops_per_token)

    def speedup(self, k: int) -> float:
        return self.ideal_speedup[k]

    def to_json(self) -> dict[str, Any]:
        return {
            "params_kept": list(self.params_kept),
            "params_full": self.params_full,
            "flops_per_token": [round(f, 1) for f in self.flops_per_token],
            "ideal_speedup": [round(s, 4) for s in self.ideal_speedup],
            "seq_length": self.seq_length,
            "model": describe(self.seq_length),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "LayerCosts":
        return cls(
            tuple(int(p) for p in data["params_kept"]),
            tuple(float(f) for f in data["flops_per_token"]),
            int(data["seq_length"]),
        )


def describe(seq_length: int) -> str:
    return (
        f"ideal speed-up = compute per token of embeddings + L blocks over embeddings + k blocks (no LM head), "
        f"attention at {seq_length} tokens; ignores tokenisation, pooling, memory traffic and overheads"
    )


def layer_costs(model: nn.Module, seq_length: int = DEFAULT_SEQ_LENGTH) -> LayerCosts:
    """Parameters kept and compute per token of `model` cut after every k = 0..L (see the module docstring)."""
    if seq_length < 1:
        raise ValueError(f"seq_length must be positive (got {seq_length})")
    family = surgery.family_for(model)
    base = surgery.base_model(model)
    model_blocks = list(surgery.blocks(model))
    in_blocks = {id(p) for block in model_blocks for p in block.parameters()}
    outside = [p for p in base.parameters() if id(p) not in in_blocks]
    fixed_params = sum(p.numel() for p in outside)
    embed_flops = _embedding_flops(base, model_blocks) + _outside_elementwise(base, in_blocks)
    params, flops = [fixed_params], [float(embed_flops)]
    for index, block in enumerate(model_blocks):
        params.append(params[-1] + sum(p.numel() for p in block.parameters()))
        flops.append(flops[-1] + block_flops(block) + _attention_flops(model.config, family, index, seq_length))
    return LayerCosts(tuple(params), tuple(flops), seq_length)


def layer_costs_for_config(config, seq_length: int = DEFAULT_SEQ_LENGTH) -> LayerCosts:
    """`layer_costs` of the model `config` describes, built on the meta device (no memory, no weights)."""
    from transformers import AutoModel

    with torch.device("meta"):
        model = AutoModel.from_config(config)
    return layer_costs(model, seq_length)


def block_flops(block: nn.Module) -> int:
    """2 per parameter of a weight of two or more dimensions, 1 per one-dimensional parameter."""
    return sum(2 * p.numel() if p.dim() >= 2 else p.numel() for p in block.parameters())


def attended_keys(seq_length: int, causal: bool, window: int | None) -> float:
    """Keys one token attends to, averaged over the positions of a sequence of `seq_length` tokens."""
    if not causal:
        return float(seq_length if window is None else min(window, seq_length))
    span = seq_length if window is None else min(window, seq_length)
    # positions 0..span-1 see 1..span keys, the rest see `span` keys each
    return (span * (span + 1) / 2 + (seq_length - span) * span) / seq_length


def _attention_flops(config, family: surgery.Family, index: int, seq_length: int) -> float:
    if not family.attention:
        return 0.0
    heads = int(config.num_attention_heads)
    head_dim = getattr(config, "head_dim", None)
    width = heads * (head_dim if isinstance(head_dim, int) and head_dim > 0 else config.hidden_size // heads)
    return 4.0 * width * attended_keys(seq_length, family.causal, _window(config, index))


def _window(config, index: int) -> int | None:
    """The sliding window of block `index`, None for full attention: `layer_types` where the config has
    them (Gemma 3, Qwen 2/3), else the config's `sliding_window` for every layer (Mistral)."""
    window = getattr(config, "sliding_window", None)
    if not isinstance(window, int) or window <= 0:
        return None
    layer_types = getattr(config, "layer_types", None)
    if isinstance(layer_types, (list, tuple)) and index < len(layer_types):
        return window if layer_types[index] == "sliding_attention" else None
    return window


def _outside_elementwise(base: nn.Module, in_blocks: set[int]) -> int:
    """One-dimensional parameters outside the blocks (embedding and final norms), except a linear layer's bias
    (BERT's pooler, run once per sequence)."""
    linear_bias = {id(m.bias) for m in base.modules() if isinstance(m, nn.Linear) and m.bias is not None}
    return sum(
        p.numel() for p in base.parameters() if p.dim() == 1 and id(p) not in in_blocks and id(p) not in linear_bias
    )


def _embedding_flops(base: nn.Module, model_blocks: list[nn.Module]) -> int:
    """One row added per token for each embedding table outside the blocks."""
    inside = {id(m) for block in model_blocks for m in block.modules()}
    return sum(m.embedding_dim for m in base.modules() if isinstance(m, nn.Embedding) and id(m) not in inside)
