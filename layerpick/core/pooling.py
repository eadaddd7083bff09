"""Pooling token states into one vector per text, with the names sentence-transformers uses.

All functions take states (B, T, D) and a mask (B, T) of real tokens, with padding on either side, and
return (B, D).
"""

from __future__ import annotations

import torch

POOLING_MODES = ("mean", "lasttoken", "cls")


def check_pooling(mode: str) -> str:
    if mode not in POOLING_MODES:
        from layerpick.errors import LayerpickError

        raise LayerpickError(f"unknown pooling {mode!r}; choose one of {', '.join(POOLING_MODES)}")
    return mode


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens: (B, T, D), (B, T) -> (B, D)."""
    weights = mask.to(states.dtype).unsqueeze(-1)
    return (states * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


def last_token_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The state of the last real token of each text: (B, T, D), (B, T) -> (B, D)."""
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(mask.bool(), positions, -1).max(dim=1).values
    return states[torch.arange(states.shape[0], device=states.device), last]


def cls_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The state of the first token (BERT's [CLS]): (B, T, D) -> (B, D)."""
    return states[:, 0]


_POOLERS = {"mean": mean_pool, "lasttoken": last_token_pool, "cls": cls_pool}


def pool(states: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    return _POOLERS[check_pooling(mode)](states, mask)
