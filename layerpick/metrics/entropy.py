"""Matrix-based Renyi entropy of representations (prompt and dataset entropy).

This module owns the spectral entropy used by the "Layer by Layer" metrics:
the matrix-based Renyi entropy of a trace-normalised PSD Gram matrix, and its
normalised form computed from a raw representation matrix. All spectra are
computed in float64. Functions are pure: tensors in, Python floats out.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

# Rows whose centred norm is below this fraction of the largest raw row norm
# are treated as exactly zero (float round-off of a mean is not a direction).
_ZERO_ROW_RTOL = 1e-10


def matrix_entropy(gram: Tensor, alpha: float = 1.0) -> float:
    """Matrix-based Renyi entropy of order ``alpha`` of a PSD Gram matrix.

    Args:
        gram: (n, n) symmetric positive semi-definite matrix. Its entries are
            used as given (never clamped); it is trace-normalised here so its
            eigenvalues form a probability vector.
        alpha: Renyi order, > 0. ``1`` gives von Neumann entropy
            ``-sum p log p``; ``2`` uses ``-log ||K||_F^2`` (no
            eigendecomposition); otherwise ``log(sum p^alpha) / (1 - alpha)``.

    Returns:
        Entropy in nats, in ``[0, log n]``.

    Raises:
        ValueError: non-square input, ``alpha <= 0`` or non-positive trace.

    After the eigendecomposition only, eigenvalues below the round-off level
    ``n * eps * max(lambda)`` (negatives included) are set to 0, as in a
    numerical rank; this keeps ``alpha < 1`` from amplifying round-off.
    """
    k = _trace_normalised(gram)
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if alpha == 2:
        return -math.log(float((k * k).sum()))
    eig = _clean_spectrum(torch.linalg.eigvalsh(k))
    if alpha == 1:
        return float(-torch.special.xlogy(eig, eig).sum())
    return math.log(float(eig.pow(alpha).sum())) / (1.0 - alpha)


def normalized_entropy(x: Tensor, alpha: float = 1.0) -> float:
    """Normalised matrix entropy of a representation matrix.

    Rows are centred over ``n`` and scaled to unit norm (rows that are zero
    after centring stay zero); the smaller of the Gram ``X X^T`` (n x n) and
    ``X^T X`` (d x d), which share their non-zero spectrum, is passed to
    :func:`matrix_entropy` and the result divided by ``log(min(n, d))``.

    Note: after centring the rank is at most ``n - 1``, so when ``n <= d`` the
    maximum reachable value is ``log(n - 1) / log(n)`` rather than 1; the
    divisor is kept at ``log(min(n, d))`` on purpose, as specified.

    Args:
        x: (n, d) representation matrix, any float dtype (cast to float64).
        alpha: Renyi order, see :func:`matrix_entropy`.

    Returns:
        Value in ``[0, 1]``; ``0.0`` when every centred row is zero (all rows
        identical) or when ``d == 1``.

    Raises:
        ValueError: ``x`` not 2-D or ``n < 2``.
    """
    if x.ndim != 2:
        raise ValueError(f"expected a 2-D (n, d) tensor, got shape {tuple(x.shape)}")
    n, d = x.shape
    if n < 2:
        raise ValueError(f"need at least 2 rows, got n={n}")
    rows = _centred_unit_rows(x)
    if d < 2 or not bool(rows.any()):
        return 0.0
    gram = rows @ rows.T if n <= d else rows.T @ rows
    value = matrix_entropy(gram, alpha) / math.log(min(n, d))
    return min(max(value, 0.0), 1.0)


def prompt_entropy(tokens: Tensor, alpha: float = 1.0) -> float:
    """Prompt entropy: normalised entropy of one text's token matrix.

    Args:
        tokens: (T, D) hidden states of the T real tokens of one text.
        alpha: Renyi order.

    Returns:
        Value in ``[0, 1]``; lower means more compressed token representations.
    """
    return normalized_entropy(tokens, alpha)


def dataset_entropy(pooled: Tensor, alpha: float = 1.0) -> float:
    """Dataset entropy: normalised entropy of the pooled embeddings of a set.

    Args:
        pooled: (N, D) one pooled embedding per text, centred over all N.
        alpha: Renyi order.

    Returns:
        Value in ``[0, 1]``; higher means embeddings spread over more directions.
    """
    return normalized_entropy(pooled, alpha)


def _trace_normalised(gram: Tensor) -> Tensor:
    """Return ``gram / trace(gram)`` in float64; gram: (n, n) -> (n, n)."""
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"expected a square (n, n) matrix, got shape {tuple(gram.shape)}")
    k = gram.to(torch.float64)
    trace = float(torch.diagonal(k).sum())
    if not trace > 0:
        raise ValueError(f"Gram matrix must have a positive trace, got {trace}")
    return k / trace


def _clean_spectrum(eig: Tensor) -> Tensor:
    """Zero eigenvalues below round-off; eig: (n,) -> (n,) float64, all >= 0."""
    tol = eig.numel() * torch.finfo(eig.dtype).eps * float(eig.abs().max())
    return torch.where(eig > tol, eig, torch.zeros_like(eig))


def _centred_unit_rows(x: Tensor) -> Tensor:
    """Centre rows over n and scale each to unit norm; x: (n, d) -> (n, d) float64.

    Rows whose centred norm is negligible relative to the largest raw row norm
    are set to exactly zero instead of being blown up to unit length.
    """
    x = x.to(torch.float64)
    centred = x - x.mean(dim=0, keepdim=True)
    norms = centred.norm(dim=1, keepdim=True)
    tol = _ZERO_ROW_RTOL * float(x.norm(dim=1).max())
    keep = norms > tol
    safe = torch.where(keep, norms, torch.ones_like(norms))
    return torch.where(keep, centred / safe, torch.zeros_like(centred))
