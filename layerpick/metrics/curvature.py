"""Curvature of a text's token trajectory through representation space.

This module owns the average curvature metric of Hosseini & Fedorenko (2023),
used by "Layer by Layer": the mean turning angle between successive
differences of consecutive token representations. Pure function on tensors;
computed in float64.
"""

from __future__ import annotations

import torch
from torch import Tensor

# Differences shorter than this fraction of the longest one count as zero.
_ZERO_STEP_RTOL = 1e-12


def curvature(tokens: Tensor) -> float:
    """Mean curvature (radians) of one text's token trajectory.

    With ``v_t = x_{t+1} - x_t``, the curvature at t is
    ``arccos(cos(v_t, v_{t+1}))``. arccos already lies in ``[0, pi]``, so no
    absolute value is needed. Pairs that involve a zero-length difference
    (repeated states) have no defined angle and are left out of the mean; if
    no pair is left the trajectory shows no bending and 0.0 is returned.

    Args:
        tokens: (T, D) hidden states of the T real tokens of one text.

    Returns:
        Mean angle in ``[0, pi]``; 0 for a straight line.

    Raises:
        ValueError: ``tokens`` not 2-D or ``T < 3``.
    """
    if tokens.ndim != 2:
        raise ValueError(f"expected a 2-D (T, D) tensor, got shape {tuple(tokens.shape)}")
    if tokens.shape[0] < 3:
        raise ValueError(f"need at least 3 tokens, got T={tokens.shape[0]}")
    steps = torch.diff(tokens.to(torch.float64), dim=0)
    norms = steps.norm(dim=1)
    valid = norms > _ZERO_STEP_RTOL * float(norms.max())
    pair_ok = valid[:-1] & valid[1:]
    if not bool(pair_ok.any()):
        return 0.0
    dots = (steps[:-1] * steps[1:]).sum(dim=1)
    cos = dots[pair_ok] / (norms[:-1][pair_ok] * norms[1:][pair_ok])
    return float(torch.arccos(cos.clamp(-1.0, 1.0)).mean())
