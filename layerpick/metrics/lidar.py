"""LiDAR: linear discriminability of texts across augmented views.

This module owns the LiDAR metric (Thilak et al. 2023, used by "Layer by
Layer"): the Shannon entropy of the eigenvalues of the whitened
between-text scatter, solved as a generalized symmetric eigenproblem via
Cholesky whitening. Pure function on tensors; computed in float64.
"""

from __future__ import annotations

import torch
from torch import Tensor

_EPS = 1e-12
# Mean deviations below this fraction of the largest |mean| are round-off.
_ZERO_RTOL = 1e-12


def lidar(views: Tensor, delta: float = 1e-4) -> float:
    """LiDAR entropy (nats): log of the LiDAR effective rank.

    With class means ``mu_i`` (mean of text i's V views) and grand mean
    ``mu``::

        S_b = sum_i (mu_i - mu)(mu_i - mu)^T / (N - 1)
        S_w = sum_i sum_v (z_iv - mu_i)(z_iv - mu_i)^T / (N (V - 1)) + delta I

    the eigenvalues ``lambda`` of ``S_w^{-1/2} S_b S_w^{-1/2}`` are obtained
    from ``L^{-1} S_b L^{-T}`` with ``L = chol(S_w)`` (triangular solves, no
    inverse square root). With ``p = lambda / sum(lambda) + eps`` (negatives
    clamped to 0 after the eigendecomposition) this returns the entropy
    ``-sum p log p``. The paper's LiDAR is ``exp`` of this value (an
    effective rank); the entropy is returned here, and ``exp`` is monotone, so
    higher is better either way. ``D > N * V`` is fine since ``delta > 0``
    keeps ``S_w`` positive definite.

    Args:
        views: (N, V, D) embeddings of V augmented views of N texts.
        delta: ridge added to the within-text scatter, > 0.

    Returns:
        Entropy in nats, in ``[0, log D]``; ``0.0`` if all texts share one mean.

    Raises:
        ValueError: ``views`` not 3-D, ``N < 2``, ``V < 2`` or ``delta <= 0``.
    """
    s_b, s_w = _scatter_matrices(views, delta)
    eig = _whitened_eigenvalues(s_b, s_w).clamp_min(0.0)
    total = float(eig.sum())
    if not total > 0:
        return 0.0
    p = eig / total + _EPS
    return float(-(p * p.log()).sum())


def _scatter_matrices(views: Tensor, delta: float) -> tuple[Tensor, Tensor]:
    """Between- and (ridged) within-text scatter.

    Args:
        views: (N, V, D) tensor.
        delta: ridge added to the within scatter.

    Returns:
        ``(S_b, S_w)``, each (D, D) float64.
    """
    if views.ndim != 3:
        raise ValueError(f"expected (N, V, D) views, got shape {tuple(views.shape)}")
    n, v, d = views.shape
    if n < 2 or v < 2:
        raise ValueError(f"need N >= 2 texts and V >= 2 views, got N={n}, V={v}")
    if delta <= 0:
        raise ValueError(f"delta must be > 0, got {delta}")
    z = views.to(torch.float64)
    means = z.mean(dim=1)
    between = means - means.mean(dim=0)
    if float(between.abs().max()) <= _ZERO_RTOL * float(means.abs().max()):
        between = torch.zeros_like(between)
    s_b = between.T @ between / (n - 1)
    within = (z - means[:, None, :]).reshape(n * v, d)
    s_w = within.T @ within / (n * (v - 1))
    s_w = s_w + delta * torch.eye(d, dtype=s_w.dtype, device=s_w.device)
    return s_b, s_w


def _whitened_eigenvalues(s_b: Tensor, s_w: Tensor) -> Tensor:
    """Eigenvalues of ``L^{-1} S_b L^{-T}`` with ``L = chol(S_w)``.

    Args:
        s_b: (D, D) symmetric PSD.
        s_w: (D, D) symmetric positive definite.

    Returns:
        (D,) eigenvalues in ascending order, float64.
    """
    chol = torch.linalg.cholesky(s_w)
    left = torch.linalg.solve_triangular(chol, s_b, upper=False)
    whitened = torch.linalg.solve_triangular(chol, left.T, upper=False)
    return torch.linalg.eigvalsh((whitened + whitened.T) / 2)
