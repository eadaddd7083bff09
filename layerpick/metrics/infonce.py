"""InfoNCE loss between two views of a set of texts.

This module owns the symmetric InfoNCE (contrastive cross-entropy) used by
"Layer by Layer" as an augmentation-invariance metric. Pure function on
tensors; computed in float64.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def infonce(view_a: Tensor, view_b: Tensor, temperature: float = 0.1) -> float:
    """Symmetric InfoNCE loss, in nats.

    Logits are cosine similarities ``cos(a_i, b_j) / temperature`` (N x N);
    the positive for row i is column i. The result is the average of the
    a->b cross-entropy (rows) and the b->a cross-entropy (columns). It is about
    ``log N`` for unrelated views and near 0 for identical views; lower means
    the representation is more invariant to the augmentation.

    Args:
        view_a: (N, D) embeddings of view A, row i is text i.
        view_b: (N, D) embeddings of view B, row i is text i.
        temperature: softmax temperature, > 0.

    Returns:
        Mean symmetric cross-entropy in nats.

    Raises:
        ValueError: shape mismatch, N < 2, non 2-D input or temperature <= 0.
    """
    if view_a.ndim != 2 or view_a.shape != view_b.shape:
        raise ValueError(f"views must be 2-D with equal shapes, got {tuple(view_a.shape)} and {tuple(view_b.shape)}")
    if view_a.shape[0] < 2:
        raise ValueError(f"need at least 2 texts, got N={view_a.shape[0]}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    a = F.normalize(view_a.to(torch.float64), dim=1)
    b = F.normalize(view_b.to(torch.float64), dim=1)
    logits = a @ b.T / temperature
    targets = torch.arange(a.shape[0], device=logits.device)
    a_to_b = F.cross_entropy(logits, targets)
    b_to_a = F.cross_entropy(logits.T, targets)
    return float((a_to_b + b_to_a) / 2)
