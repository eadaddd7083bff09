"""DiME: difference of matrix-based entropies between two views of a set.

This module owns the DiME estimate of shared information between two
augmented views of the same N texts (Skean et al. 2023, used by "Layer by
Layer"). Pure function on tensors; spectra in float64.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from layerpick.metrics.entropy import matrix_entropy


def dime(
    view_a: Tensor,
    view_b: Tensor,
    permutations: int = 10,
    seed: int = 0,
    alpha: float = 1.0,
) -> float:
    """DiME between two views, in nats.

    Rows are scaled to unit norm (zero rows stay zero) and linear-kernel Gram
    matrices ``K_A = A A^T`` and ``K_B = B B^T`` (both N x N) are formed. With
    ``H`` the trace-normalised matrix entropy and ``o`` the Hadamard product::

        DiME = mean_P H(K_A o P K_B P^T) - H(K_A o K_B)

    over ``permutations`` random permutations ``P`` drawn from a
    ``torch.Generator`` seeded with ``seed``. Shuffling one view breaks the
    pairing, so DiME is near 0 for independent views and large when the views
    agree.

    Args:
        view_a: (N, D) embeddings of view A, row i is text i.
        view_b: (N, D') embeddings of view B, row i is text i.
        permutations: number of random permutations, >= 1.
        seed: seed of the permutation generator.
        alpha: Renyi order of the matrix entropy.

    Returns:
        DiME value in nats (can be slightly negative from sampling noise).

    Raises:
        ValueError: mismatched N, N < 2, non 2-D input or permutations < 1.
    """
    k_a, k_b = _paired_grams(view_a, view_b)
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    joint = matrix_entropy(k_a * k_b, alpha)
    generator = torch.Generator().manual_seed(seed)
    n = k_a.shape[0]
    shuffled = []
    for _ in range(permutations):
        perm = torch.randperm(n, generator=generator).to(k_b.device)
        shuffled.append(matrix_entropy(k_a * k_b[perm][:, perm], alpha))
    return sum(shuffled) / permutations - joint


def _paired_grams(view_a: Tensor, view_b: Tensor) -> tuple[Tensor, Tensor]:
    """Unit-row linear Gram matrices of two paired views.

    Args:
        view_a: (N, D) tensor.
        view_b: (N, D') tensor.

    Returns:
        ``(K_A, K_B)``, each (N, N) float64.
    """
    if view_a.ndim != 2 or view_b.ndim != 2:
        raise ValueError("views must be 2-D (N, D) tensors")
    if view_a.shape[0] != view_b.shape[0]:
        raise ValueError(f"views differ in N: {view_a.shape[0]} vs {view_b.shape[0]}")
    if view_a.shape[0] < 2:
        raise ValueError(f"need at least 2 texts, got N={view_a.shape[0]}")
    a = F.normalize(view_a.to(torch.float64), dim=1)
    b = F.normalize(view_b.to(torch.float64), dim=1)
    return a @ a.T, b @ b.T
