"""Per-architecture facts and the one place that cuts a model after its first k blocks.

For each supported family: where the block list lives, the final norm (if any), which config fields change
when only the first k blocks are kept, whether the model is causal and has attention, and its default pooling.
Everything
that differs between architectures lives here; other modules ask this one. Paths are relative to the base
`*Model` (no LM head), which is what layerpick loads and exports.
"""

from __future__ import annotations

import copy
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn

from layerpick.errors import LayerRangeError, UnsupportedArchitectureError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Family:
    """What layerpick needs to know about one architecture family."""

    name: str
    model_types: tuple[str, ...]
    blocks_path: str
    final_norm_path: str | None
    per_layer_fields: tuple[str, ...] = ()
    capped_fields: tuple[str, ...] = ()
    causal: bool = True
    default_pooling: str = "mean"
    attention: bool = True  # False: no attention (Mamba's selective state space blocks); read by core.cost

    @property
    def has_final_norm(self) -> bool:
        return self.final_norm_path is not None


FAMILIES: tuple[Family, ...] = (
    Family(
        "llama",
        ("llama", "mistral", "qwen2", "qwen3", "smollm3"),
        "layers",
        "norm",
        per_layer_fields=("layer_types",),
        capped_fields=("max_window_layers",),
    ),
    Family("gemma3", ("gemma3_text",), "layers", "norm", per_layer_fields=("layer_types",)),
    Family("gpt-neox", ("gpt_neox",), "layers", "final_layer_norm"),
    Family("gpt2", ("gpt2",), "h", "ln_f"),
    Family("bert", ("bert", "roberta", "xlm-roberta", "mpnet"), "encoder.layer", None, causal=False),
    Family("mamba", ("mamba",), "layers", "norm_f", attention=False),
)


def supported_model_types() -> list[str]:
    return sorted(t for family in FAMILIES for t in family.model_types)


def family_for(model_or_config) -> Family:
    """The family of a model or config; a clear error listing what is supported otherwise."""
    config = getattr(model_or_config, "config", model_or_config)
    return family_of_type(getattr(config, "model_type", None))


def family_of_type(model_type: str | None) -> Family:
    """The family of a `model_type` (as config.json names it); a clear error listing what is supported otherwise."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    raise UnsupportedArchitectureError(
        f"unsupported architecture {model_type!r}; supported model types: {', '.join(supported_model_types())}"
    )


def base_model(model: nn.Module) -> nn.Module:
    """The bare `*Model` inside a `*ForCausalLM` / `*ForMaskedLM`, or the model itself."""
    family = family_for(model)
    if _has_path(model, family.blocks_path):
        return model
    inner = getattr(model, "base_model", None)
    if inner is not None and inner is not model and _has_path(inner, family.blocks_path):
        return inner
    raise UnsupportedArchitectureError(f"cannot find the block list {family.blocks_path!r} in {type(model).__name__}")


def blocks(model: nn.Module) -> nn.ModuleList:
    return _get_path(base_model(model), family_for(model).blocks_path)


def final_norm(model: nn.Module) -> nn.Module | None:
    family = family_for(model)
    if family.final_norm_path is None:
        return None
    return _get_path(base_model(model), family.final_norm_path)


def num_layers(model: nn.Module) -> int:
    return len(blocks(model))


def check_layer(k: int, num: int, *, allow_zero: bool = True) -> None:
    low = 0 if allow_zero else 1
    if not low <= k <= num:
        raise LayerRangeError(f"layer {k} is out of range: this model has layers {low}..{num}")


def cut_config(config, k: int):
    """A copy of `config` describing the model with only its first k blocks."""
    family = family_for(config)
    new = copy.deepcopy(config)
    new.num_hidden_layers = k
    for field in family.per_layer_fields:
        values = getattr(new, field, None)
        if isinstance(values, (list, tuple)):
            setattr(new, field, list(values)[:k])
    for field in family.capped_fields:
        value = getattr(new, field, None)
        if isinstance(value, int):
            setattr(new, field, min(value, k))
    return new


def chosen_blocks_config(config, full_config, indices):
    """A copy of a cut's `config` whose per-block fields are `full_config`'s at `indices` (0-based): the config of
    a model made of those blocks of the full one, in that order."""
    new = copy.deepcopy(config)
    for field in family_for(config).per_layer_fields:
        values = getattr(full_config, field, None)
        if isinstance(values, (list, tuple)):
            setattr(new, field, [list(values)[i] for i in indices])
    return new


def truncate_(model: nn.Module, k: int) -> nn.Module:
    """Cut `model` in place after block k: blocks k.. are dropped (their parameters gone), config fixed."""
    model_blocks = blocks(model)
    check_layer(k, len(model_blocks))
    base = base_model(model)
    parent_path, _, attr = family_for(model).blocks_path.rpartition(".")
    parent = _get_path(base, parent_path) if parent_path else base
    setattr(parent, attr, nn.ModuleList(list(model_blocks)[:k]))
    new_config = cut_config(model.config, k)
    model.config = new_config
    if base is not model:
        base.config = new_config
    return model


def truncated_copy(model: nn.Module, k: int) -> nn.Module:
    """A deep copy of `model` cut after block k; the original is untouched."""
    return truncate_(copy.deepcopy(model), k)


@torch.no_grad()
def apply_final_norm(model: nn.Module, states: torch.Tensor) -> torch.Tensor:
    """`final_norm(states)` for families that have one, `states` unchanged otherwise."""
    norm = final_norm(model)
    return states if norm is None else norm(states)


@contextmanager
def capture_residual_stream(model: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Record the residual stream during a forward pass: entry k is the input of block k (k = 0, the
    embedding output) or the output of block k (k = 1..L). Hooks on the blocks themselves, so every family
    gives the same L+1 states (transformers' `hidden_states` differ: Mamba's omits the embeddings)."""
    model_blocks = blocks(model)
    states: list[torch.Tensor] = []

    def before_first(_module, args, kwargs):
        states.clear()
        states.append(args[0] if args else kwargs["hidden_states"])

    def after(_module, _args, output):
        states.append(output[0] if isinstance(output, (tuple, list)) else output)

    handles = [model_blocks[0].register_forward_pre_hook(before_first, with_kwargs=True)]
    handles += [block.register_forward_hook(after) for block in model_blocks]
    try:
        yield states
    finally:
        for handle in handles:
            handle.remove()


def _get_path(module: nn.Module, path: str) -> nn.Module:
    for name in path.split("."):
        module = getattr(module, name)
    return module


def _has_path(module: nn.Module, path: str) -> bool:
    try:
        _get_path(module, path)
    except AttributeError:
        return False
    return True


def position_limit(config) -> int | None:
    """The longest input the model's position embeddings allow; None when unbounded (Mamba).
    RoBERTa-style models (and MPNet) number positions from pad_token_id + 1, so they lose that many."""
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int) or limit <= 0:
        return None
    if getattr(config, "model_type", None) in ("roberta", "xlm-roberta", "camembert", "mpnet"):
        limit -= (getattr(config, "pad_token_id", None) or 0) + 1
    return limit
