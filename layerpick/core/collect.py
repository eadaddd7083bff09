"""One forward pass over a set of texts that yields every layer's representation.

Layer 0 is the embedding output; layer k is what the model cut after its first k blocks outputs: the final
norm applied to the residual stream after block k for pre-norm decoders and Mamba, the residual stream itself
for post-norm encoders (representation "exported", the default). `representation="raw"` keeps the residual
stream without the final norm (research only; it carries massive outlier activations in modern decoders).
Batches are length-sorted and right-padded, which is exact for causal models and absolute positions.
Each layer is pooled batch by batch; token states are shown to observers and then dropped, never stored.
With a prompt template the tokenizer wraps every text in the template's tokens (`prompt_tokenizer`, the
mechanism an export ships), and the last token is pooled unless a pooling is given.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Sequence

import torch

from layerpick._util.progress import progress_bar
from layerpick.core import surgery
from layerpick.core.collect_config import CollectConfig as CollectConfig  # its home; imported from here too
from layerpick.core.models import LoadedModel, execution_device
from layerpick.core.pooling import check_pooling, pool
from layerpick.core.prompt_tokenizer import check_room, prompted_tokenizer
from layerpick.core.prompts import PLAIN, Prompt, as_prompt, default_pooling
from layerpick.errors import CalibrationError, NonFiniteStatesError
from layerpick.metrics.token_observers import TokenObserver

logger = logging.getLogger(__name__)


@dataclass
class LayerStates:
    """Pooled representations of N texts at every layer: `pooled` is (L+1, N, D), rows in input order."""

    pooled: torch.Tensor
    token_counts: torch.Tensor
    pooling: str
    representation: str
    prompt: Prompt = PLAIN

    @property
    def num_layers(self) -> int:
        return self.pooled.shape[0] - 1

    def layer(self, k: int) -> torch.Tensor:
        surgery.check_layer(k, self.num_layers)
        return self.pooled[k]


def collect(
    loaded: LoadedModel,
    texts: Sequence[str],
    config: CollectConfig = CollectConfig(),
    observers: Sequence[TokenObserver] = (),
) -> LayerStates:
    """Run the model once over `texts` and pool every layer; observers see the token states on the way."""
    config = dataclasses.replace(config, prompt=as_prompt(config.prompt))  # a name or template string works too
    pooling = check_pooling(config.pooling or default_pooling(loaded.default_pooling, config.prompt))
    _check_config(config, texts)
    config = _within_position_limit(config, loaded)
    tokenizer = prompted_tokenizer(loaded.tokenizer, config.prompt)
    check_room(tokenizer, config.prompt, config.max_length)
    lengths = token_lengths(tokenizer, texts, config.max_length)
    order = sorted(range(len(texts)), key=lambda i: -lengths[i])
    chunks: list[torch.Tensor] = []
    with progress_bar("forward pass", len(texts), config.progress) as advance:
        for start in range(0, len(order), config.batch_size):
            batch = [texts[i] for i in order[start : start + config.batch_size]]
            chunks.append(_pooled_batch(loaded, tokenizer, batch, config, pooling, observers))
            advance(len(batch))
    pooled = torch.empty_like(torch.cat(chunks, dim=1))
    pooled[:, torch.tensor(order)] = torch.cat(chunks, dim=1)
    _check_finite(pooled)
    return LayerStates(pooled, torch.tensor(lengths), pooling, config.representation, config.prompt)


def token_lengths(tokenizer, texts: Sequence[str], max_length: int) -> list[int]:
    """Tokens per text after truncation; a clear error for a text that has none."""
    ids = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    lengths = [len(x) for x in ids]
    for index, length in enumerate(lengths):
        if length == 0:
            raise CalibrationError(f"text #{index} ({texts[index][:40]!r}) has zero tokens after tokenization")
    return lengths


def representation(loaded: LoadedModel, residual: torch.Tensor, kind: str) -> torch.Tensor:
    """Layer k's token states (B, T, D) from the residual stream after block k, in the requested kind."""
    if kind == "raw" or not loaded.family.has_final_norm:
        return residual
    norm = surgery.final_norm(loaded.model)
    return norm(residual.to(execution_device(norm)))


@torch.no_grad()
def _pooled_batch(
    loaded: LoadedModel, tokenizer, batch, config: CollectConfig, pooling: str, observers
) -> torch.Tensor:
    encoded = tokenizer(batch, padding=True, truncation=True, max_length=config.max_length, return_tensors="pt").to(
        loaded.device
    )
    with surgery.capture_residual_stream(loaded.model) as residuals:
        loaded.model(**encoded)
    mask = encoded["attention_mask"].bool().cpu()
    pooled = []
    for layer, residual in enumerate(residuals):
        states = representation(loaded, residual, config.representation).float().cpu()
        for observer in observers:
            observer.observe(layer, states, mask)
        pooled.append(pool(states, mask, pooling))
    return torch.stack(pooled)


def _check_config(config: CollectConfig, texts: Sequence[str]) -> None:
    config.check()
    if not texts:
        raise CalibrationError("no texts to encode")


def effective_max_length(loaded: LoadedModel, requested: int) -> int:
    """The truncation length collect uses: --max-length, or the model's position limit when that is smaller."""
    limit = surgery.position_limit(loaded.model.config)
    return requested if limit is None else min(requested, limit)


def _within_position_limit(config: CollectConfig, loaded: LoadedModel) -> CollectConfig:
    length = effective_max_length(loaded, config.max_length)
    if length == config.max_length:
        return config
    logger.info("--max-length %d exceeds the model's %d positions; truncating to %d", config.max_length, length, length)
    return dataclasses.replace(config, max_length=length)


def _check_finite(pooled: torch.Tensor) -> None:
    bad = (~torch.isfinite(pooled)).flatten(1).any(dim=1)
    if bad.any():
        layers = bad.nonzero().flatten().tolist()
        raise NonFiniteStatesError(
            f"NaN or inf in the representation of layer {layers[0]} (layers {layers}); "
            "try --dtype float32 (float16 overflows in some models)"
        )
